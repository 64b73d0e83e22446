# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Damaged, truncated, bit-flipped and foreign bag files, in MCAP and sqlite3 storage.

Properties: opening either refuses with one line (BagError) or reports, per
topic, what is readable and what was lost, and the two add up to what the bag
was written with; a reader that does not allow damage refuses a damaged bag;
an MCAP bag that reads as intact is exactly what was written (chunks carry a
CRC); with ``allow_damaged`` every readable message comes back.
"""

import shutil

from conftest import cli, cli_here
from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from unilab_bag.info import bag_info
from unilab_bag.storage import BagDamagedError, BagError, BagReader, check_bag, recover_bag
from unilab_bag.testing import rollout_bag, storage_file

STORAGES = ['mcap', 'sqlite3']


class Originals(dict):
    """storage -> (intact bag, messages written to it); a short repr for failure reports."""

    def __repr__(self):
        return f'Originals({sorted(self)})'


@pytest.fixture(scope='module')
def originals(tmp_path_factory):
    """One intact bag per storage and the messages written to it."""
    out = Originals()
    for storage in STORAGES:
        path = tmp_path_factory.mktemp(storage) / 'bag'
        out[storage] = rollout_bag(path, storage)
    return out


def _copy(src, dst):
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    return dst


def _expected(sent):
    counts = {}
    for topic, _, _ in sent:
        counts[topic] = counts.get(topic, 0) + 1
    return counts


def _damage(path, kind, where, length, seed):
    """Damage a file: overwrite with random bytes, zero, flip bits, or truncate."""
    data = bytearray(path.read_bytes())
    rng = np.random.default_rng(seed)
    at = int(where * (len(data) - 1))
    if kind == 'random':
        data[at:at + length] = rng.integers(0, 256, len(data[at:at + length]),
                                            dtype=np.uint8).tobytes()
    elif kind == 'zero':
        data[at:at + length] = bytes(len(data[at:at + length]))
    elif kind == 'flip':
        for i in rng.integers(0, len(data), max(1, length // 512)):
            data[i] ^= 1 << int(rng.integers(0, 8))
    else:
        del data[at:]
    path.write_bytes(bytes(data))


@pytest.mark.parametrize('storage', STORAGES)
def test_an_intact_bag_reads_back_exactly(originals, storage):
    bag, sent = originals[storage]
    with BagReader(bag) as r:
        assert not r.health.damaged and r.health.problems == []
        got = [(m.topic, m.timestamp, m.raw) for m in r.messages()]
        assert r.topics == {t: ('unilab_interfaces/msg/TensorBatch', n)
                            for t, n in _expected(sent).items()}
    assert sorted(got) == sorted(sent)


damage = st.tuples(st.sampled_from(['random', 'zero', 'flip', 'truncate']),
                   st.floats(0.0, 1.0), st.sampled_from([1, 16, 512, 4096, 20000]),
                   st.integers(0, 2**16))


@pytest.mark.parametrize('storage', STORAGES)
@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damage=damage)
def test_damage_is_refused_or_accounted_for(originals, tmp_path, storage, damage):
    bag, sent = originals[storage]
    bag = _copy(bag, tmp_path / 'damaged')
    _damage(storage_file(bag), *damage)
    expected = _expected(sent)
    try:
        r = BagReader(bag, allow_damaged=True)
    except BagError as exc:  # nothing readable: one line naming the bag
        assert str(bag) in str(exc) and '\n' not in str(exc)
        return
    with r:
        h = r.health
        scan_damaged = h.damaged  # found by reading the files (decoding may find more)
        got = [(m.topic, m.timestamp, m.raw) for m in r.messages()]
        assert len(got) == sum(h.readable.values())
        for topic, n in expected.items():
            assert h.readable.get(topic, 0) + h.lost.get(topic, 0) == n, (topic, h.describe())
        if storage == 'mcap' or not h.damaged:
            # A message that reads is one that was written: nothing made up; and an
            # MCAP bag that reads as intact is the bag that was written (CRC).
            assert set(got) <= set(sent) or storage == 'sqlite3'
        if not h.damaged:
            assert len(got) == len(sent)
            if storage == 'mcap':
                assert sorted(got) == sorted(sent)
        decoded = sum(1 for _ in r.decoded())
        assert decoded + sum(h.undecodable.values()) == len(got)
    if h.damaged:  # a reader that does not allow damage refuses, with one line
        with BagReader(bag) as strict:
            with pytest.raises(BagDamagedError if scan_damaged else BagError) as info:
                list(strict.decoded())
        assert str(bag) in str(info.value) and '\n' not in str(info.value)


@pytest.mark.parametrize('storage', STORAGES)
def test_four_kib_overwritten_in_the_middle(originals, tmp_path, storage, capsys):
    # The case: a real bag with 4 KiB overwritten in its middle.
    bag, sent = originals[storage]
    bag = _copy(bag, tmp_path / 'damaged')
    _damage(storage_file(bag), 'random', 0.5, 4096, 1)
    h = check_bag(bag)
    assert h.damaged and sum(h.lost.values()) > 0
    info = bag_info(bag)
    counts = {t: d['count'] for t, d in info['topics'].items()}
    assert counts == h.readable  # what can be read, not the metadata's counts
    assert sum(counts.values()) + sum(h.lost.values()) == len(sent)
    lost = info['damaged']['lost_total']  # plus any readable message that does not decode
    assert lost >= sum(h.lost.values())
    proc = cli_here(capsys, 'bag', 'info', bag)
    assert proc.returncode == 1 and 'Damaged:' in proc.stdout and 'Traceback' not in proc.stderr
    assert f'{lost} of {len(sent)} messages unreadable' in proc.stdout
    proc = cli_here(capsys, 'replay', bag)  # refused before any node starts
    assert proc.returncode == 2 and proc.stderr.count('\n') == 1, proc.stderr
    assert str(bag) in proc.stderr and 'is damaged' in proc.stderr
    # Recover keeps the readable part as a clean bag.
    counts, scan = recover_bag(bag, tmp_path / 'fixed')
    assert counts == h.readable and scan.lost == h.lost
    fixed = check_bag(tmp_path / 'fixed')
    assert not fixed.damaged and fixed.readable == h.readable


@pytest.mark.parametrize('content', [b'', b'hello', b'\x89MCAP0\r\n' + bytes(100),
                                     b'SQLite format 3\x00' + bytes(200)])
@pytest.mark.parametrize('suffix', ['.mcap', '.db3', '.txt'])
def test_foreign_files_are_refused_with_one_line(tmp_path, capsys, content, suffix):
    from unilab.cli import main
    path = tmp_path / f'thing{suffix}'
    path.write_bytes(content)
    for args in (('bag', 'info', path), ('train', '--offline', path), ('replay', path)):
        assert main([str(a) for a in args]) == 2, args  # in-process: the CLI's own mapping
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0], lines
    if not content and suffix == '.mcap':  # and once as a process: no traceback on the way out
        proc = cli('bag', 'info', path)
        assert proc.returncode == 2 and proc.stderr.count('\n') == 1, proc.stderr


def test_offline_training_refuses_a_damaged_bag_unless_allowed(tmp_path, capsys):
    from unilab_bringup.prepare import task_info
    info, _ = task_info('arm6_reach')
    bag, sent = rollout_bag(tmp_path / 'bag', 'mcap', chunks=32, obs_dim=info.obs_dim,
                            act_dim=info.action_dim, k=8, n=8)
    _damage(storage_file(bag), 'random', 0.5, 4096, 3)
    lost = sum(check_bag(bag).lost.values())
    assert lost > 0
    off = tmp_path / 'off.yaml'
    off.write_text('offline: {gradient_steps: 20, eval_every: 20, eval_envs: 2, '
                   'eval_episodes: 2, batch_size: 32}\nlogging: {tensorboard: false}\n'
                   'model: {hidden_sizes: [16]}\n')
    proc = cli_here(capsys, 'train', '--offline', bag, '--config', off,
                    '--run-dir', tmp_path / 'r1')
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr
    line = proc.stderr.strip()
    assert '\n' not in line and str(bag) in line and 'damaged' in line, line
    assert f'{lost} of {len(sent)} messages unreadable' in line
    proc = cli('train', '--offline', bag, '--allow-damaged', '--config', off,
               '--run-dir', tmp_path / 'r2', check=True)
    assert 'is damaged, training on its readable part' in proc.stdout
    import json
    s = json.loads((tmp_path / 'r2' / 'summary.json').read_text())
    assert sum(s['dataset']['damaged'][str(bag)]['lost'].values()) == lost
    assert s['dataset']['transitions'] == 8 * 8 * check_bag(bag).readable['/unilab/rollout']


@pytest.mark.parametrize('storage', STORAGES)
def test_chunks_with_non_finite_values_are_refused_or_left_out(tmp_path, storage):
    from unilab_bag.testing import TB, tensor_batch_bytes, write_bag
    from unilab_bag.dataset import build_dataset
    k, n = 2, 2
    good = {'obs': np.ones((k, n, 3)), 'actions': np.ones((k, n, 2)), 'rewards': np.ones((k, n)),
            'terminated': np.zeros((k, n)), 'truncated': np.zeros((k, n)),
            'next_obs': np.ones((n, 3))}
    bad = [dict(good, rewards=np.full((k, n), np.inf)), dict(good, obs=np.full((k, n, 3), 1e30)),
           dict(good, terminated=np.full((k, n), 0.5)), dict(good, next_obs=np.ones((n + 1, 3))),
           {f: v for f, v in good.items() if f != 'actions'}]
    msgs = [('/unilab/rollout', TB, i + 1, tensor_batch_bytes('rollout', i, t))
            for i, t in enumerate([good] + bad)]
    bag = write_bag(tmp_path / 'bag', msgs, storage)
    with pytest.raises(BagDamagedError, match='rollout chunk seq 1'):
        build_dataset([bag])
    d = build_dataset([bag], allow_damaged=True)
    assert len(d) == k * n  # the good chunk only
    assert d.damaged[str(bag)]['lost'] == {'/unilab/rollout': len(bad)}
    assert np.isfinite(d.arrays['rewards']).all()
