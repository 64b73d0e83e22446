# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Detection scores against ground truth: IoU, matching at IoU 0.5, precision and recall.

A detection (score >= the keep score) is a true positive when it has the label of a
ground-truth box not yet matched and overlaps it by IoU >= ``iou_min``; detections are
matched in descending score (the PASCAL VOC rule, Everingham et al. 2010). A frame is
*correct* when every ground-truth box is matched and no detection is left over.
"""

from __future__ import annotations

import numpy as np

from unilab_datafactory.detector import KEEP_SCORE


def box_iou(a, b) -> np.ndarray:
    """Return the IoU matrix [A, B] of xyxy boxes a [A, 4] and b [B, 4]."""
    a = np.asarray(a, np.float64).reshape(-1, 4)
    b = np.asarray(b, np.float64).reshape(-1, 4)
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    inter = np.prod(np.clip(rb - lt, 0, None), axis=-1)
    area_a = np.prod(a[:, 2:] - a[:, :2], axis=-1)
    area_b = np.prod(b[:, 2:] - b[:, :2], axis=-1)
    union = area_a[:, None] + area_b[None, :] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def match_frame(boxes, scores, labels, gt_boxes, gt_labels, iou_min=0.5,
                keep=KEEP_SCORE) -> dict:
    """Return ``tp``, ``fp``, ``fn`` counts, matched IoUs and ``correct`` for one frame."""
    boxes, scores, labels = (np.asarray(v) for v in (boxes, scores, labels))
    kept = np.flatnonzero(scores >= keep)
    kept = kept[np.argsort(-scores[kept], kind='stable')]
    gt_labels = np.asarray(gt_labels)
    iou = box_iou(boxes[kept], gt_boxes)
    used = np.zeros(len(gt_labels), bool)
    tp, ious = 0, []
    for row, k in enumerate(kept):
        cand = np.where((gt_labels == labels[k]) & ~used, iou[row], -1.0)
        j = int(np.argmax(cand)) if len(cand) else -1
        if j >= 0 and cand[j] >= iou_min:
            used[j] = True
            tp += 1
            ious.append(float(cand[j]))
    fp, fn = len(kept) - tp, len(gt_labels) - tp
    return {'tp': tp, 'fp': fp, 'fn': fn, 'ious': ious, 'correct': fp == 0 and fn == 0}


def summarise(frames: list[dict]) -> dict:
    """Return precision, recall, mean matched IoU and the share of correct frames."""
    tp = sum(f['tp'] for f in frames)
    fp = sum(f['fp'] for f in frames)
    fn = sum(f['fn'] for f in frames)
    ious = [i for f in frames for i in f['ious']]
    return {'frames': len(frames),
            'precision': tp / (tp + fp) if tp + fp else 1.0,
            'recall': tp / (tp + fn) if tp + fn else 1.0,
            'mean_iou': float(np.mean(ious)) if ious else 0.0,
            'frame_accuracy': float(np.mean([f['correct'] for f in frames])) if frames
            else 0.0}


def pr_curve(scores_gt: list[tuple], thresholds=np.linspace(0.05, 0.95, 19)) -> list[dict]:
    """
    Return precision / recall at each keep threshold.

    ``scores_gt``: per frame ``(boxes, scores, labels, gt_boxes, gt_labels)``.
    """
    out = []
    for t in thresholds:
        s = summarise([match_frame(*f, keep=float(t)) for f in scores_gt])
        out.append({'threshold': float(t), 'precision': s['precision'],
                    'recall': s['recall']})
    return out


#: Precisions of the auto-accepted frames at which the best share is reported.
SHARE_AT_PRECISION = (0.89, 0.95)


def share_at_precision(confidence, tp, fp, precision: float) -> tuple[float, float | None]:
    """
    Return (share, threshold) of the best confidence threshold at ``precision``.

    ``share``: the most frames a confidence threshold accepts with a box precision >=
    ``precision`` among them, ``threshold`` that confidence (0.0, None where no threshold
    does). Frames with equal confidence are accepted or queued together.
    """
    conf = np.asarray(confidence, np.float64)
    if conf.size == 0:
        return 0.0, None
    order = np.argsort(-conf, kind='stable')
    conf, tp, fp = conf[order], np.asarray(tp)[order], np.asarray(fp)[order]
    ctp, cfp = np.cumsum(tp), np.cumsum(fp)
    last_of_tie = np.append(conf[1:] != conf[:-1], True)
    best, threshold = 0.0, None
    for i in np.flatnonzero(last_of_tie):
        kept = ctp[i] + cfp[i]
        if (kept == 0 or ctp[i] / kept >= precision) and (i + 1) / len(conf) > best:
            best, threshold = float((i + 1) / len(conf)), float(conf[i])
    return best, threshold
