# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Periodic fine-tuning: a version per N new reviewed samples; live labelling takes it."""

import json
import time

import numpy as np
import pytest
from unilab.cli import main
from unilab_datafactory.schedule import Reloader, reviewed_count, watch
from unilab_datafactory.store import SampleStore
from unilab_datafactory.testing import ground_truth_store, H, W
from unilab_datafactory.train_detector import open_detector, train_detector


def _pending_store(path, n):
    """Return a store of ``n`` pending frames (ground-truth boxes as the proposals)."""
    gt = ground_truth_store(path.parent / f'{path.name}_src', n, seed=5)
    store = SampleStore(path, create=True)
    for i in gt.ids():
        t, m = gt.read(i)
        store.write(i, t['image'], t['boxes'], t['labels'], t['scores'] * 0.5,
                    {**m, 'decision': 'pending', 'confidence': 0.5})
    return store


@pytest.fixture
def setup(tmp_path):
    gt = ground_truth_store(tmp_path / 'gt', 8).root
    train_detector([gt], tmp_path / 'det', epochs=1, batch=8, width=8, log=None)
    return gt, _pending_store(tmp_path / 'reviewed', 6)


def _finetune(capsys, tmp_path, gt, *extra):
    code = main(['factory', 'finetune', str(tmp_path / 'det'), '--reviewed',
                 str(tmp_path / 'reviewed'), '--replay', str(gt), '--epochs', '1', '--batch',
                 '8', *map(str, extra)])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out)


def test_a_version_is_trained_once_every_n_new_reviewed_samples(tmp_path, capsys, setup):
    gt, store = setup
    ids = store.ids()
    store.decide(ids[0], 'accepted')
    store.decide(ids[1], 'corrected', boxes=[[1, 1, 9, 9]], labels=[0])
    store.decide(ids[2], 'rejected')  # a rejection is no training sample
    assert reviewed_count([store.root]) == 2
    assert _finetune(capsys, tmp_path, gt, '--every', 3)['versions'] == []
    store.decide(ids[3], 'accepted')
    out = _finetune(capsys, tmp_path, gt, '--every', 3)
    assert out['versions'] == ['v0002'] and out['records'][0]['reviewed_count'] == 3
    assert out['records'][0]['parent'] == 'v0001'
    saved = json.loads((tmp_path / 'det' / 'v0002.json').read_text())
    assert saved['reviewed_count'] == 3
    # Nothing new since v0002: no version; two more are not yet three.
    assert _finetune(capsys, tmp_path, gt, '--every', 3)['versions'] == []
    store.decide(ids[4], 'accepted')
    store.decide(ids[5], 'accepted')
    assert _finetune(capsys, tmp_path, gt, '--every', 3)['versions'] == []
    assert _finetune(capsys, tmp_path, gt, '--every', 2)['versions'] == ['v0003']


def test_watch_trains_as_reviews_come_in_and_live_labelling_takes_the_new_version(
        tmp_path, setup):
    gt, store = setup
    ids = iter(store.ids())
    calls = []

    def train(init, extra):
        calls.append(init)
        return train_detector([store.root, gt], tmp_path / 'det', epochs=1, batch=8,
                              init=init, decisions=('ground_truth', 'accepted', 'corrected'),
                              log=None, extra=extra)

    def review_two(poll_s):  # between two checks a reviewer decides (up to) two samples
        for i in [next(ids, None), next(ids, None)]:
            if i is not None:
                store.decide(i, 'accepted')
        time.sleep(poll_s)

    now = [0.0]
    reloader = Reloader(tmp_path / 'det', 1.0, open_detector, clock=lambda: now[0])
    first = open_detector(tmp_path / 'det')
    assert reloader.check(first) is None  # not yet time to look
    # Six reviews in threes of polls: one version at four new samples, none for the
    # remaining two.
    records = watch(tmp_path / 'det', [store.root], 4, train, poll_s=0.05, duration_s=1.0,
                    log=None, sleep=review_two)
    assert [r['version'] for r in records] == ['v0002'] and len(calls) == 1
    assert calls[0].endswith('v0001.pt') and records[0]['reviewed_count'] == 4
    now[0] = 2.0
    newer = reloader.check(first)
    assert newer is not None and newer.version == 'v0002'
    assert newer(np.zeros((1, H, W, 3), np.uint8)).boxes[0].shape[1] == 4
    now[0] = 4.0
    assert reloader.check(newer) is None and reloader.errors == 0


def test_scheduler_options_are_refused_in_one_line(tmp_path, capsys, setup):
    for args, needle in ((('--watch',), '--watch needs --every'),
                         (('--every', '0'), '--every 0'),
                         (('--every', '2', '--watch', '--poll', '0'), '--poll 0'),
                         (('--every', '2', '--watch', '--poll', 'nan'), '--poll nan'),
                         (('--every', '2', '--watch', '--duration', 'inf'),
                          '--duration inf')):
        code = main(['factory', 'finetune', str(tmp_path / 'det'), '--reviewed',
                     str(tmp_path / 'reviewed'), *args])
        err = capsys.readouterr().err
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize('every', [0.0, float('nan'), float('inf')])
def test_a_reload_period_that_is_not_a_finite_positive_time_is_refused(tmp_path, every):
    with pytest.raises(ValueError, match='--reload'):
        Reloader(tmp_path, every, open_detector)
