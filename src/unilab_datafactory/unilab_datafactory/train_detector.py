# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Train, fine-tune and score our detectors; every version kept with its scores.

Versions live in ``DIR/v<NNNN>.pt`` (weights, classes, input size; loadable with
``weights_only=True``) beside ``DIR/v<NNNN>.json`` (scores on the held-out stores, the
training stores, the parent version); ``DIR/latest.json`` names the newest. All three are
written atomically, the pointer last, so a reader never sees a version without scores.

Box terms for both architectures (present classes only): L1 on (cx, cy, w, h) plus
1 - GIoU (Rezatofighi et al. 2019, arXiv:1902.09630), and binary cross-entropy for
presence. ``centers``: CenterNet's penalty-reduced focal loss on the heatmaps (a Gaussian
around the centre cell), the box decoded at the ground-truth centre cell, and binary
cross-entropy of the quality logit at the heatmap's peak against whether the box decoded
there matches (IoU >= ``MATCH_IOU``). ``slots``: binary cross-entropy of the IoU logit
against the IoU the predicted box actually has (detached).
"""

from __future__ import annotations

import io
import json
import pathlib
import time

import torch
import torch.nn.functional as F

from unilab_core.atomic import atomic_write_bytes, atomic_write_text
from unilab_datafactory.augment import AugmentConfig, Augmenter
from unilab_datafactory.detector import (build_detector, CenterDetector, check_arch, Detector,
                                         frame_confidence, load_detector, MATCH_IOU, SlotDetector)
from unilab_datafactory.metrics import match_frame, pr_curve, share_at_precision, summarise
from unilab_datafactory.scene import CLASSES
from unilab_datafactory.store import SampleStore, TRAINABLE


def load_slots(roots, classes=CLASSES, decisions=TRAINABLE, size=None):
    """
    Return (images [N, 3, H, W] float32, boxes [N, K, 4] normalised xyxy, present [N, K]).

    Images of another size are resized to ``size`` (default: the first sample's).
    """
    images, boxes, present = [], [], []
    for root in roots:
        store = SampleStore(root)
        for m in store.manifests(decisions):
            t, _ = store.read(m['id'])
            img = torch.from_numpy(t['image']).permute(2, 0, 1).float() / 255.0
            h, w = img.shape[1:]
            size = size or (h, w)
            if (h, w) != tuple(size):
                img = F.interpolate(img[None], size=tuple(size), mode='bilinear',
                                    align_corners=False)[0]
            b = torch.zeros(len(classes), 4)
            p = torch.zeros(len(classes))
            for box, label in zip(t['boxes'], t['labels']):
                if 0 <= label < len(classes):
                    b[label] = torch.from_numpy(box) / torch.tensor([w, h, w, h])
                    p[label] = 1.0
            images.append(img)
            boxes.append(b)
            present.append(p)
    if not images:
        raise ValueError(f'no trainable samples in {", ".join(map(str, roots))}')
    return torch.stack(images), torch.stack(boxes), torch.stack(present)


def giou(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (IoU, GIoU) of matching xyxy boxes [..., 4]."""
    lt, rb = torch.maximum(a[..., :2], b[..., :2]), torch.minimum(a[..., 2:], b[..., 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area = (a[..., 2:] - a[..., :2]).clamp(min=0).prod(-1) + \
        (b[..., 2:] - b[..., :2]).clamp(min=0).prod(-1)
    union = (area - inter).clamp(min=1e-9)
    iou = inter / union
    hull = (torch.maximum(a[..., 2:], b[..., 2:]) - torch.minimum(a[..., :2], b[..., :2])) \
        .clamp(min=0).prod(-1).clamp(min=1e-9)
    return iou, iou - (hull - union) / hull


#: Photometric randomisation while training (no blur): wider than a camera's usual drift so
#: that a detector trained on renders meets other light, white balance and sensor noise.
TRAIN_AUGMENT = AugmentConfig(exposure_s=0.0, brightness=0.5, contrast=0.3, saturation=0.3,
                              color=0.15, noise_std=0.03)


def _cxcywh(x: torch.Tensor) -> torch.Tensor:
    return torch.cat([(x[..., :2] + x[..., 2:]) / 2, x[..., 2:] - x[..., :2]], -1)


def _box_terms(pred, boxes, present):
    """Return (IoU, L1 on cx/cy/w/h, 1 - GIoU) of predicted boxes, over present classes."""
    iou, g = giou(pred, boxes)
    n = present.sum().clamp(min=1)
    l1 = ((_cxcywh(pred) - _cxcywh(boxes)).abs().sum(-1) * present).sum() / n
    return iou, l1, ((1 - g) * present).sum() / n


def center_loss(maps, presence, boxes, present) -> tuple[torch.Tensor, dict]:
    """Return the training loss of ``CenterDetector.raw`` outputs and its parts."""
    b, k, _, hh, ww = maps.shape
    size = torch.tensor([ww, hh], dtype=maps.dtype)
    centre = (boxes[..., :2] + boxes[..., 2:]) / 2 * size          # in cells
    cell = torch.minimum(centre.floor(), size - 1).clamp(min=0)     # [B, K, 2] (col, row)
    index = (cell[..., 1] * ww + cell[..., 0]).long()
    extent = (boxes[..., 2:] - boxes[..., :2]) * size
    sigma = (extent.min(dim=-1).values / 6).clamp(min=0.5)
    xs = torch.arange(ww, dtype=maps.dtype).view(1, 1, 1, ww)
    ys = torch.arange(hh, dtype=maps.dtype).view(1, 1, hh, 1)
    d2 = (xs - cell[..., 0, None, None]) ** 2 + (ys - cell[..., 1, None, None]) ** 2
    target = torch.exp(-d2 / (2 * sigma[..., None, None] ** 2)) * present[..., None, None]
    pos = (d2 == 0) & (present[..., None, None] > 0)
    heat = torch.sigmoid(maps[:, :, 0]).clamp(1e-4, 1 - 1e-4)
    focal = torch.where(pos, -torch.log(heat) * (1 - heat) ** 2,
                        -torch.log(1 - heat) * heat ** 2 * (1 - target) ** 4)
    n = present.sum().clamp(min=1)
    lh = focal.sum() / n
    pred, _ = CenterDetector.decode_at(maps, index)
    _, l1, lg = _box_terms(pred, boxes, present)
    lp = F.binary_cross_entropy_with_logits(presence, present)
    at_peak, quality = CenterDetector.decode_at(maps, CenterDetector.peaks(maps).detach())
    iou_peak, _ = giou(at_peak.detach(), boxes)
    correct = (iou_peak >= MATCH_IOU).to(maps.dtype)
    lq = (F.binary_cross_entropy_with_logits(quality, correct, reduction='none')
          * present).sum() / n
    loss = lh + 5 * l1 + 2 * lg + lp + lq
    return loss, {'heat': lh.item(), 'l1': l1.item(), 'giou': lg.item(),
                  'presence': lp.item(), 'quality': lq.item(),
                  'peak_correct': ((correct * present).sum() / n).item()}


def slot_loss(raw, boxes, present) -> tuple[torch.Tensor, dict]:
    """Return the training loss of slot outputs ``raw`` [B, K, 6] and its parts."""
    pred, _ = SlotDetector.decode(raw)
    iou, l1, lg = _box_terms(pred, boxes, present)
    n = present.sum().clamp(min=1)
    lp = F.binary_cross_entropy_with_logits(raw[..., 4], present)
    li = (F.binary_cross_entropy_with_logits(raw[..., 5], iou.detach(), reduction='none')
          * present).sum() / n
    loss = 5 * l1 + 2 * lg + lp + li
    return loss, {'l1': l1.item(), 'giou': lg.item(), 'presence': lp.item(), 'iou': li.item()}


def detect_ground_truth(detector: Detector, roots):
    """Yield ``(boxes, scores, labels, gt_boxes, gt_labels)`` per ground-truth sample."""
    for root in roots:
        store = SampleStore(root)
        for m in store.manifests(('ground_truth',)):
            t, _ = store.read(m['id'])
            d = detector(t['image'][None])
            yield d.boxes[0], d.scores[0], d.labels[0], t['boxes'], t['labels']


def evaluate(detector: Detector, roots, curve: bool = False) -> dict:
    """Score ``detector`` on the ground-truth samples of ``roots`` (see metrics)."""
    raw = list(detect_ground_truth(detector, roots))
    frames = [match_frame(*f) for f in raw]
    out = {k: round(v, 4) if isinstance(v, float) else v for k, v in summarise(frames).items()}
    if curve:
        out['pr_curve'] = pr_curve(raw)
    return out


#: Box precision the calibrated threshold keeps on the calibration frames.
CALIBRATION_PRECISION = 0.95


def calibrate(detector: Detector, roots, precision: float = CALIBRATION_PRECISION) -> dict:
    """
    Return the auto-accept threshold of ``detector`` calibrated on held-out ``roots``.

    The lowest frame confidence at which the ground-truth frames of ``roots`` are
    auto-accepted with a box precision of at least ``precision``
    (``metrics.share_at_precision``); ``threshold`` None where none reaches it. Calibrate
    on frames of the training domain that were not trained on, never on the frames the
    threshold is then judged on.
    """
    conf, tp, fp = [], [], []
    for f in detect_ground_truth(detector, roots):
        result = match_frame(*f)
        conf.append(float(frame_confidence(f[1][None])[0]))
        tp.append(result['tp'])
        fp.append(result['fp'])
    if not conf:
        raise ValueError(f'calibration: no ground-truth samples in {", ".join(map(str, roots))}')
    share, threshold = share_at_precision(conf, tp, fp, precision)
    return {'stores': [str(r) for r in roots], 'precision': precision,
            'threshold': threshold,
            'share': round(share, 4)}


def _next_version(out: pathlib.Path) -> str:
    taken = [int(p.stem[1:]) for p in out.glob('v*.pt') if p.stem[1:].isdigit()]
    return f'v{(max(taken) + 1) if taken else 1:04d}'


def latest_version(out) -> pathlib.Path:
    """Return the newest version file of a detector directory (FileNotFoundError if none)."""
    pointer = pathlib.Path(out) / 'latest.json'
    if not pointer.is_file():
        raise FileNotFoundError(f'{out}: no detector versions (no latest.json); train one '
                                'with `unilab factory train-detector`')
    return pathlib.Path(out) / json.loads(pointer.read_text())['file']


def detector_loss(model, images, boxes, present) -> tuple[torch.Tensor, dict]:
    """Return the training loss of either architecture on a batch, and its parts."""
    if isinstance(model, CenterDetector):
        return center_loss(*model.raw(images), boxes, present)
    return slot_loss(model.raw(images), boxes, present)


def train_detector(train_roots, out, eval_roots=(), epochs: int = 30, batch: int = 64,
                   lr: float = 2e-3, seed: int = 0, init: str = '', width: int = 32,
                   decisions=TRAINABLE, log=print, extra: dict | None = None,
                   arch: str = 'centers', calibrate_roots=()) -> dict:
    """
    Train (or, with ``init``, fine-tune) a detector version; save it with its scores.

    ``arch`` names the architecture of a new detector (a fine-tune keeps its parent's).
    With ``calibrate_roots`` the version carries its auto-accept threshold (``calibrate``;
    ``label`` and ``live`` use it unless given one); without, it has none (not the
    parent's: a fine-tune moves the confidences).
    Returns the version's record (also in ``v<NNNN>.json``; ``extra`` keys added to it).
    """
    if not init:
        check_arch(arch)  # before the training data is read
    torch.manual_seed(seed)
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    parent = ''
    if init:
        saved = torch.load(init, map_location='cpu', weights_only=True)
        arch = saved.get('arch', 'slots')
        model = build_detector(arch, len(saved['classes']), saved['input_size'],
                               saved['width'])
        model.load_state_dict(saved['state_dict'])
        classes, size, width, parent = saved['classes'], saved['input_size'], \
            saved['width'], saved['version']
    else:
        classes = list(CLASSES)
        size = None
    images, boxes, present = load_slots(train_roots, classes, decisions, size)
    size = list(images.shape[2:])
    if not init:
        model = build_detector(arch, len(classes), size, width)
    aug = Augmenter(TRAIN_AUGMENT, 'cpu', seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    steps = epochs * max(1, len(images) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, lr, total_steps=steps)
    gen = torch.Generator().manual_seed(seed)
    t0, step = time.perf_counter(), 0
    model.train()
    for epoch in range(epochs):
        perm = torch.randperm(len(images), generator=gen)
        for i in range(max(1, len(images) // batch)):
            idx = perm[i * batch:(i + 1) * batch]
            x, _ = aug(images[idx])
            loss, parts = detector_loss(model, x, boxes[idx], present[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
        if log is not None and (epoch % 5 == 4 or epoch == epochs - 1):
            log(f'epoch {epoch + 1}/{epochs}: loss {loss.item():.3f} '
                + ' '.join(f'{k} {v:.3f}' for k, v in parts.items()))
    model.eval()
    version = _next_version(out)
    detector = Detector(model, classes, size, version, arch=arch)
    calibration = calibrate(detector, calibrate_roots) if calibrate_roots else None
    threshold = calibration['threshold'] if calibration else None
    record = {'version': version, 'file': f'{version}.pt', 'parent': parent, 'arch': arch,
              'train': [str(r) for r in train_roots], 'samples': len(images),
              'decisions': list(decisions), 'epochs': epochs, 'seed': seed,
              'train_s': round(time.perf_counter() - t0, 1),
              'scores': {str(r): evaluate(detector, [r]) for r in eval_roots},
              'threshold': threshold, 'calibration': calibration,
              **(extra or {})}
    buf = io.BytesIO()
    torch.save({'version': version, 'arch': arch, 'classes': list(classes), 'input_size': size,
                'width': width, 'threshold': threshold, 'state_dict': model.state_dict()}, buf)
    atomic_write_bytes(out / f'{version}.pt', buf.getvalue())
    atomic_write_text(out / f'{version}.json', json.dumps(record, indent=2))
    atomic_write_text(out / 'latest.json', json.dumps({'version': version,
                                                       'file': f'{version}.pt'}))
    return record


def open_detector(path, **kw) -> Detector:
    """Open a detector file, or a detector directory's latest version."""
    path = pathlib.Path(path)
    return load_detector(latest_version(path) if path.is_dir() else path, **kw)
