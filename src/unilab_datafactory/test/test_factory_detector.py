# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Detector contract, metrics, loaders (ours, TorchScript, ONNX) and versioned training."""

import json

import numpy as np
import pytest
import torch
from unilab_datafactory.detector import (build_detector, CenterDetector, frame_confidence,
                                         load_detector, SlotDetector)
from unilab_datafactory.label import Labeller
from unilab_datafactory.metrics import box_iou, match_frame, summarise
from unilab_datafactory.store import SampleStore
from unilab_datafactory.testing import (CLASSES, frame_with_score, ground_truth_store, H, STUB_BOX,
                                        stub_detector, StubModule, W)
from unilab_datafactory.train_detector import (calibrate, center_loss, latest_version,
                                               open_detector, train_detector)


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


@pytest.mark.parametrize('arch', [SlotDetector, CenterDetector])
def test_our_detectors_meet_the_contract(arch):
    model = arch(3, (32, 48), width=8).eval()
    with torch.no_grad():
        boxes, scores, labels = model(torch.rand(2, 3, 32, 48))
    assert boxes.shape == (2, 3, 4) and scores.shape == (2, 3) and labels.shape == (2, 3)
    assert float(boxes.min()) >= 0 and float(boxes.max()) <= 1
    assert torch.all(boxes[..., 2] >= boxes[..., 0]) and labels[1].tolist() == [0, 1, 2]
    with pytest.raises(ValueError, match='multiples of 16'):
        arch(3, (30, 48))


def _peak_maps(k=3, hh=8, ww=12, cell=(2, 3)):
    """Return maps whose class-0 heat peaks at ``cell`` (row, col); the rest 0."""
    maps = torch.zeros(1, k, CenterDetector.PER_CLASS, hh, ww)
    maps[:, :, 0] = -5.0
    maps[0, 0, 0, cell[0], cell[1]] = 5.0
    return maps


def test_center_detector_decodes_at_the_heatmap_peak():
    maps = _peak_maps()
    index = CenterDetector.peaks(maps)
    assert index[0, 0].item() == 2 * 12 + 3
    boxes, quality = CenterDetector.decode_at(maps, index)
    # Offset logits 0 -> the middle of the cell; size logits 0 -> half the image.
    cx, cy = 3.5 / 12, 2.5 / 8
    assert boxes[0, 0].tolist() == pytest.approx([cx - 0.25, cy - 0.25, cx + 0.25,
                                                 cy + 0.25])
    assert quality[0].tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match='architecture `yolo`'):
        build_detector('yolo', 3, (32, 48), 8)


def test_center_quality_is_trained_on_whether_the_peak_box_matches():
    maps = _peak_maps()
    cx, cy = 3.5 / 12, 2.5 / 8
    right = torch.tensor([[cx - 0.25, cy - 0.25, cx + 0.25, cy + 0.25]])
    boxes = torch.zeros(1, 3, 4)
    present = torch.tensor([[1.0, 0.0, 0.0]])
    boxes[0, 0] = right
    maps.requires_grad_(True)
    loss, parts = center_loss(maps, torch.zeros(1, 3), boxes, present)
    assert parts['peak_correct'] == 1.0 and torch.isfinite(loss)
    loss.backward()
    q = maps.grad[0, 0, 5]
    # The quality logit is pushed up at the peak only (target 1, logit 0): a negative
    # gradient there, none elsewhere; absent classes get no quality gradient.
    assert q[2, 3] < 0 and q.abs().sum() == pytest.approx(q[2, 3].abs().item())
    assert maps.grad[0, 1, 5].abs().sum() == 0
    # The same peak against a box elsewhere: the decoded box does not match -> target 0.
    boxes[0, 0] = torch.tensor([0.7, 0.7, 0.9, 0.9])
    _, parts = center_loss(_peak_maps(), torch.zeros(1, 3), boxes, present)
    assert parts['peak_correct'] == 0.0


def test_center_detector_exports_to_onnx_with_the_same_detections(tmp_path):
    model = CenterDetector(len(CLASSES), (H, W), width=8).eval()
    onnx = tmp_path / 'centers.onnx'
    torch.onnx.export(model, (torch.zeros(1, 3, H, W),), str(onnx), input_names=['images'],
                      dynamic_axes={'images': {0: 'b'}}, dynamo=False)
    frames = np.random.default_rng(0).integers(0, 255, (2, H, W, 3), dtype=np.uint8)
    from unilab_datafactory.detector import Detector
    want = Detector(model, CLASSES, (H, W))(frames)
    got = load_detector(onnx, classes=list(CLASSES), input_size=(H, W))(frames)
    assert np.allclose(got.boxes, want.boxes, atol=1e-3)
    assert np.allclose(got.scores, want.scores, atol=1e-4)


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
    assert r1['version'] == 'v0001' and r1['samples'] == 16 and r1['arch'] == 'centers'
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
    assert isinstance(det.fn, CenterDetector)
    # Without --calibrate a version has no threshold of its own.
    assert r1['threshold'] is None and det.threshold is None


def _calibration_store(path, frames):
    """Write ground-truth frames the stub scores ``conf``, its box right or not."""
    store = SampleStore(path, create=True)
    for k, (conf, right) in enumerate(frames):
        img = frame_with_score(conf)
        box = STUB_BOX if right else (30.0, 20.0, 46.0, 30.0)  # elsewhere: IoU 0
        store.write(f'gt-{k:07d}', img, [box], [0], [1.0],
                    {'decision': 'ground_truth', 'classes': list(CLASSES)})
    return store.root


def test_calibration_keeps_the_lowest_confidence_that_holds_the_precision(tmp_path):
    # Confidence 0.95 and 0.9 right, 0.8 wrong, 0.7 right (the stub's one box of class 0).
    cal = _calibration_store(tmp_path / 'cal', [(0.95, True), (0.9, True), (0.8, False),
                                                (0.7, True)])
    det = stub_detector()
    c = calibrate(det, [cal])  # precision 0.95: the two first frames only
    assert c['threshold'] == pytest.approx(0.9, abs=1 / 255) and c['share'] == 0.5
    c = calibrate(det, [cal], precision=0.7)  # 3 of 4 boxes right: all four
    assert c['threshold'] == pytest.approx(0.7, abs=1 / 255) and c['share'] == 1.0
    wrong_first = _calibration_store(tmp_path / 'w', [(0.95, False), (0.9, True)])
    assert calibrate(det, [wrong_first]) == {'stores': [str(wrong_first)],
                                             'precision': 0.95, 'threshold': None,
                                             'share': 0.0}
    # The labeller then auto-accepts exactly the frames at or above it.
    det.threshold = calibrate(det, [cal])['threshold']
    labeller = Labeller(det, SampleStore(tmp_path / 'lab', create=True))
    decided = [labeller(frame_with_score(c), 'x', '/camera/image_raw', k, 'cam')['decision']
               for k, c in enumerate((0.95, 0.9, 0.8, 0.7))]
    assert decided == ['auto', 'auto', 'pending', 'pending']


def test_a_version_file_with_a_bad_threshold_is_refused_by_name(tmp_path):
    train = ground_truth_store(tmp_path / 'train', 8, seed=1).root
    torch.set_num_threads(1)
    train_detector([train], tmp_path / 'det', epochs=1, batch=4, width=8, log=None)
    saved = torch.load(tmp_path / 'det' / 'v0001.pt', weights_only=True)
    for bad in (float('nan'), 1.5, 0.0, 'high'):
        saved['threshold'] = bad
        torch.save(saved, tmp_path / 'bad.pt')
        with pytest.raises(ValueError, match=r'bad.pt: not a factory detector .*threshold'):
            load_detector(tmp_path / 'bad.pt')
    saved['threshold'] = 0.9
    torch.save(saved, tmp_path / 'good.pt')
    assert load_detector(tmp_path / 'good.pt').threshold == 0.9


def test_a_version_keeps_the_threshold_calibrated_on_held_out_frames(tmp_path):
    train = ground_truth_store(tmp_path / 'train', 16, seed=1).root
    cal = ground_truth_store(tmp_path / 'cal', 6, seed=3).root
    torch.set_num_threads(1)
    r = train_detector([train], tmp_path / 'det', epochs=1, batch=8, width=8, log=None,
                       calibrate_roots=[cal])
    det = open_detector(tmp_path / 'det')
    assert r['calibration']['stores'] == [str(cal)] and r['calibration']['precision'] == 0.95
    assert det.threshold == r['threshold'] == calibrate(det, [cal])['threshold']
    assert 0.0 <= r['calibration']['share'] <= 1.0
    SampleStore(tmp_path / 'empty', create=True)
    with pytest.raises(ValueError, match='calibration: no ground-truth samples'):
        calibrate(det, [tmp_path / 'empty'])


def test_slot_versions_train_fine_tune_and_load(tmp_path):
    """The first architecture stays usable; a version file from before ``arch`` loads."""
    train = ground_truth_store(tmp_path / 'train', 8, seed=1).root
    out = tmp_path / 'det'
    torch.set_num_threads(1)
    r1 = train_detector([train], out, epochs=1, batch=4, width=8, log=None, arch='slots')
    assert r1['arch'] == 'slots'
    r2 = train_detector([train], out, epochs=1, batch=4, init=str(out / 'v0001.pt'),
                        log=None)
    assert r2['arch'] == 'slots'  # a fine-tune keeps its parent's architecture
    saved = torch.load(out / 'v0002.pt', weights_only=True)
    del saved['arch']  # as the first versions were written
    torch.save(saved, out / 'v0003.pt')
    det = load_detector(out / 'v0003.pt')
    assert isinstance(det.fn, SlotDetector)
    assert det(np.zeros((1, H, W, 3), np.uint8)).scores.shape == (1, 3)
    with pytest.raises(ValueError, match='architecture `bogus`'):
        train_detector([train], tmp_path / 'other', epochs=1, batch=4, width=8, log=None,
                       arch='bogus')
