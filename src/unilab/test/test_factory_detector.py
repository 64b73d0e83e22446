# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Detector contract, metrics, loaders (ours, TorchScript, ONNX) and versioned training."""

import json

from factory_helpers import CLASSES, ground_truth_store, H, stub_detector, StubModule, W
import numpy as np
import pytest
import torch
from unilab.factory.detector import frame_confidence, load_detector, SlotDetector
from unilab.factory.metrics import box_iou, match_frame, summarise
from unilab.factory.train import latest_version, open_detector, train_detector


def test_iou_and_matching_by_hand():
    assert box_iou([[0, 0, 2, 2]], [[1, 1, 3, 3]])[0, 0] == pytest.approx(1 / 7)
    gt = np.array([[0, 0, 10, 10], [20, 20, 30, 30]], float)
    # A right box of class 0, a class-1 box in the wrong place, a low-score proposal.
    boxes = np.array([[0, 0, 10, 9], [0, 0, 5, 5], [20, 20, 30, 30]], float)
    r = match_frame(boxes, [0.9, 0.8, 0.3], [0, 1, 1], gt, [0, 1])
    assert (r['tp'], r['fp'], r['fn'], r['correct']) == (1, 1, 1, False)
    assert r['ious'] == [pytest.approx(0.9)]
    s = summarise([r, match_frame(gt, [0.9, 0.9], [0, 1], gt, [0, 1])])
    assert s['precision'] == pytest.approx(3 / 4) and s['recall'] == pytest.approx(3 / 4)
    assert s['frame_accuracy'] == 0.5


def test_frame_confidence_rule():
    # Clearly in (0.9) and clearly out (0.05) is confident; one proposal at 0.6 is not.
    assert frame_confidence([[0.9, 0.05]])[0] == pytest.approx(0.9)
    assert frame_confidence([[0.9, 0.6]])[0] == pytest.approx(0.6)
    assert frame_confidence(np.zeros((1, 0)))[0] == 1.0


def test_slot_detector_meets_the_contract():
    model = SlotDetector(3, (32, 48), width=8).eval()
    with torch.no_grad():
        boxes, scores, labels = model(torch.rand(2, 3, 32, 48))
    assert boxes.shape == (2, 3, 4) and scores.shape == (2, 3) and labels.shape == (2, 3)
    assert float(boxes.min()) >= 0 and float(boxes.max()) <= 1
    assert torch.all(boxes[..., 2] >= boxes[..., 0]) and labels[1].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match='multiples of 16'):
        SlotDetector(3, (30, 48))


def test_user_modules_load_from_torchscript_and_onnx(tmp_path):
    frames = np.zeros((2, 64, 96, 3), np.uint8)  # another size: resized to the input size
    frames[1, 0, 0, 0] = 255
    ts = tmp_path / 'user.ts'
    torch.jit.trace(StubModule(), torch.zeros(1, 3, H, W)).save(str(ts))
    onnx = tmp_path / 'user.onnx'
    torch.onnx.export(StubModule(), (torch.zeros(1, 3, H, W),), str(onnx),
                      input_names=['images'], dynamic_axes={'images': {0: 'b'}},
                      dynamo=False)
    want = stub_detector()(frames)
    for path in (ts, onnx):
        det = load_detector(path, classes=list(CLASSES), input_size=(H, W))
        got = det(frames)
        assert np.allclose(got.boxes, want.boxes, atol=1e-4)
        assert got.boxes[0, 0].tolist() == pytest.approx([16, 8, 48, 40])  # frame pixels
        assert np.allclose(got.scores, want.scores, atol=1e-4)
        assert got.labels.dtype == np.int64
    with pytest.raises(ValueError, match='--classes'):
        load_detector(ts)
    (tmp_path / 'x.bin').write_bytes(b'x')
    with pytest.raises(ValueError, match='expected .pt'):
        load_detector(tmp_path / 'x.bin', classes=['a'], input_size=(16, 16))
    (tmp_path / 'bad.pt').write_bytes(b'not torch')
    with pytest.raises(ValueError, match='not a factory detector'):
        load_detector(tmp_path / 'bad.pt')


def test_versions_are_kept_with_scores(tmp_path):
    train = ground_truth_store(tmp_path / 'train', 16, seed=1).root
    held = ground_truth_store(tmp_path / 'held', 4, seed=2).root
    out = tmp_path / 'det'
    with pytest.raises(FileNotFoundError, match='no detector versions'):
        latest_version(out)
    torch.set_num_threads(1)
    r1 = train_detector([train], out, [held], epochs=1, batch=8, width=8, log=None)
    assert r1['version'] == 'v0001' and r1['samples'] == 16
    scores = r1['scores'][str(held)]
    assert scores['frames'] == 4 and 0 <= scores['precision'] <= 1
    r2 = train_detector([train], out, [held], epochs=1, batch=8, init=str(out / 'v0001.pt'),
                        log=None)
    assert r2['version'] == 'v0002' and r2['parent'] == 'v0001'
    assert json.loads((out / 'latest.json').read_text())['version'] == 'v0002'
    assert json.loads((out / 'v0001.json').read_text())['scores'] == r1['scores']
    det = open_detector(out)
    assert det.version == 'v0002' and det.classes == ('upper_arm', 'forearm', 'wrist')
    assert det(np.zeros((1, H, W, 3), np.uint8)).boxes.shape == (1, 3, 4)
