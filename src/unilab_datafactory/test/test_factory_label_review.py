# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Pseudo-labels from a bag, the review queue's HTTP API, scoring and export."""

import json
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest
from unilab_bag.storage import BagWriter
from unilab_datafactory.augmented_export import export_store
from unilab_datafactory.image_bag import image_bytes, IMAGE_TYPE, write_image_bag
from unilab_datafactory.label import decision_threshold, label_bag, Labeller
from unilab_datafactory.metrics import share_at_precision
from unilab_datafactory.review_server import make_server
from unilab_datafactory.score import score_pseudo_labels, simulate_review
from unilab_datafactory.store import SampleStore
from unilab_datafactory.testing import frame_with_score, ground_truth_store, stub_detector

SCORES = [0.95, 0.6, 0.1, 0.75, 0.5]  # confidences 0.95, 0.6, 0.9, 0.75, 0.5


@pytest.fixture
def labelled(tmp_path):
    bag = write_image_bag(tmp_path / 'bag', [frame_with_score(s) for s in SCORES])
    summary = label_bag(bag, stub_detector(), tmp_path / 'store', threshold=0.7)
    return tmp_path / 'store', summary


def test_unsure_frames_are_queued(labelled):
    root, summary = labelled
    assert (summary['auto'], summary['pending']) == (3, 2)
    assert summary['ingest_p99_ms'] is not None and summary['skipped'] == {}
    store = SampleStore(root)
    ms = store.manifests()
    assert [m['decision'] for m in ms] == ['auto', 'pending', 'auto', 'auto', 'pending']
    m = ms[0]
    assert m['topic'] == '/camera/image_raw' and m['frame_id'] == 'env0/camera'
    assert m['stamp_ns'] == 50_000_000 and m['detector_version'] == 'stub'
    t, _ = store.read(ms[2]['id'])  # score 0.1: confidently nothing
    assert len(t['labels']) == 0
    t, _ = store.read(ms[0]['id'])
    assert t['boxes'].tolist() == [[8, 4, 24, 20]] and t['labels'].tolist() == [0]


def test_a_versions_calibrated_threshold_decides_unless_one_is_given(tmp_path):
    bag = write_image_bag(tmp_path / 'bag', [frame_with_score(s) for s in SCORES])
    det = stub_detector()
    assert decision_threshold(det) == 0.7  # no calibrated threshold: the default
    det.threshold = 0.8
    assert decision_threshold(det) == 0.8 and decision_threshold(det, 0.5) == 0.5
    with pytest.raises(ValueError, match='--threshold 1.5'):
        decision_threshold(det, 1.5)
    own = label_bag(bag, det, tmp_path / 'own')
    assert (own['auto'], own['pending'], own['threshold']) == (2, 3, 0.8)  # 0.95, 0.9
    given = label_bag(bag, det, tmp_path / 'given', threshold=0.7)
    assert (given['auto'], given['threshold']) == (3, 0.7)
    assert {m['threshold'] for m in SampleStore(tmp_path / 'own').manifests()} == {0.8}
    # A reload to a version with another threshold decides the next frames by it.
    labeller = Labeller(det, SampleStore(tmp_path / 'live', create=True))
    first = labeller(frame_with_score(0.75), 'x', '/camera/image_raw', 1, 'cam')
    det.threshold = 0.7
    second = labeller(frame_with_score(0.75), 'x', '/camera/image_raw', 2, 'cam')
    assert (first['decision'], second['decision']) == ('pending', 'auto')


def test_bad_images_are_counted_and_bad_topics_named(tmp_path):
    w = BagWriter(tmp_path / 'bag', 'mcap')
    w.add_topic('/camera/image_raw', IMAGE_TYPE)
    w.write('/camera/image_raw', 1, image_bytes(frame_with_score(0.9), 1, 'c'))
    w.write('/camera/image_raw', 2, image_bytes(frame_with_score(0.9), 2, 'c', '16UC3'))
    w.close()
    s = label_bag(tmp_path / 'bag', stub_detector(), tmp_path / 'out')
    assert s['auto'] == 1 and sum(s['skipped'].values()) == 1
    with pytest.raises(ValueError, match='no topic `/nope`'):
        label_bag(tmp_path / 'bag', stub_detector(), tmp_path / 'out', topic='/nope')


def _call(url, body=None):
    req = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                 method='GET' if body is None else 'POST')
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read(), r.headers['Content-Type']
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers['Content-Type']


@pytest.fixture
def server(labelled):
    srv = make_server(labelled[0], port=0)
    threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True).start()
    yield f'http://127.0.0.1:{srv.server_address[1]}', labelled[0]
    srv.shutdown()
    srv.server_close()


def test_review_api(server):
    url, root = server
    status, body, ctype = _call(url + '/')
    assert status == 200 and b'Review queue' in body and ctype.startswith('text/html')
    queue = json.loads(_call(url + '/api/queue')[1])
    # Lowest confidence first (the stub's scores are 8-bit pixels).
    assert [q['confidence'] for q in queue] == pytest.approx([0.5, 0.6], abs=0.01)
    first, second = queue[0]['id'], queue[1]['id']
    status, png, ctype = _call(f'{url}/api/image/{first}.png')
    assert status == 200 and png[:8] == b'\x89PNG\r\n\x1a\n' and ctype == 'image/png'
    status, body, _ = _call(url + '/api/decision', {'id': first, 'decision': 'corrected',
                                                    'boxes': [[1, 2, 9, 12]], 'labels': [1]})
    assert status == 200 and json.loads(body)['decision'] == 'corrected'
    t, m = SampleStore(root).read(first)
    assert t['boxes'].tolist() == [[1, 2, 9, 12]] and m['proposed']['labels'] == [0]
    assert _call(url + '/api/decision', {'id': second, 'decision': 'rejected'})[0] == 200
    assert json.loads(_call(url + '/api/queue')[1]) == []
    stats = json.loads(_call(url + '/api/stats')[1])
    assert stats == {'auto': 3, 'corrected': 1, 'rejected': 1}


@pytest.mark.parametrize('body, status', [
    ({'id': 'frame-0000001', 'decision': 'maybe'}, 400),
    ({'id': 'frame-0000001', 'decision': 'corrected', 'boxes': [[0, 0, 1]], 'labels': [0]},
     400),
    ({'id': 'frame-0000001', 'decision': 'corrected', 'boxes': [[0, 0, 99, 9]],
      'labels': [0]}, 400),
    ({'id': 'frame-0000000', 'decision': 'accepted'}, 400),  # auto, not pending
    ({'id': 'nobody', 'decision': 'accepted'}, 404),
    (['not', 'an', 'object'], 400),
])
def test_review_api_refuses_bad_requests(server, body, status):
    url, root = server
    got, reply, _ = _call(url + '/api/decision', body)
    assert got == status and 'error' in json.loads(reply)
    assert SampleStore(root).manifest('frame-0000001')['decision'] == 'pending'


def test_score_and_export(tmp_path):
    store = ground_truth_store(tmp_path / 'gt', 3)
    s = score_pseudo_labels(stub_detector(), [store.root])
    # The stub's score (pixel red = 40/255 = 0.16) keeps nothing: confident, all missed.
    assert s['auto_accept_share'] == 1.0 and s['recall'] == 0.0
    assert s['recall_after_review'] == 0.0
    # Nothing kept, nothing wrong: every frame can be auto-accepted at any precision.
    assert s['auto_accept_share_at_p95'] == 1.0 and s['threshold_at_p95'] is not None
    out = export_store(store.root, tmp_path / 'aug', copies=2, seed=3)
    assert out['written'] == 6
    aug = SampleStore(tmp_path / 'aug')
    t, m = aug.read('gt-0000001-aug1')
    t0, _ = store.read('gt-0000001')
    assert m['parent'] == 'gt-0000001' and m['decision'] == 'ground_truth'
    assert len(m['augment']['blur_px']) == 2 and m['augment']['seed'] == 3
    assert np.array_equal(t['boxes'], t0['boxes']) and not np.array_equal(t['image'],
                                                                          t0['image'])
    with pytest.raises(ValueError, match='another store'):
        export_store(store.root, store.root)


def test_share_at_precision_by_hand():
    # Five frames by confidence: right, right, wrong box, right, two of three right.
    conf = [0.99, 0.95, 0.9, 0.9, 0.6]
    tp, fp = [3, 3, 2, 3, 2], [0, 0, 1, 0, 1]
    # 0.95: the first two (6 of 6); the tie at 0.9 goes together (11 of 12 = 0.917).
    assert share_at_precision(conf, tp, fp, 0.95) == (0.4, 0.95)
    assert share_at_precision(conf, tp, fp, 0.9) == (0.8, 0.9)
    assert share_at_precision(conf, tp, fp, 0.85) == (1.0, 0.6)  # 13 of 15 = 0.867
    assert share_at_precision([0.9], [0], [3], 0.5) == (0.0, None)


def test_simulated_review_corrects_from_ground_truth(tmp_path):
    gt = ground_truth_store(tmp_path / 'gt', 3)
    bag = write_image_bag(tmp_path / 'bag', [gt.read(i)[0]['image'] for i in gt.ids()])
    label_bag(bag, stub_detector(), tmp_path / 'lab', threshold=0.9)  # all queued
    assert simulate_review(tmp_path / 'lab', gt.root) == {'accepted': 0, 'corrected': 3}
    lab = SampleStore(tmp_path / 'lab')
    t, m = lab.read('frame-0000002')
    assert m['decision'] == 'corrected' and m['reviewer'] == 'simulated'
    assert np.array_equal(t['boxes'], gt.read('gt-0000002')[0]['boxes'])
    with pytest.raises(ValueError, match='not the same frames'):
        simulate_review(tmp_path / 'lab', ground_truth_store(tmp_path / 'gt2', 2).root)
