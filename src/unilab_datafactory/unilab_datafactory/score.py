# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab factory score``: pseudo-labels against ground truth, with a simulated review.

Over the ground-truth samples of held-out stores, each frame is labelled as ``label``
would (auto-accepted at confidence >= threshold, else queued). Reported: precision and
recall of all pseudo-labels (``precision``, ``recall``, ``frame_accuracy``), of the
auto-accepted frames only (``auto_precision``, ...), the share of frames auto-accepted
(``auto_accept_share``: the labelling work saved), and after one simulated review round
in which every queued frame gets its ground truth (``precision_after_review``,
``recall_after_review``). ``auto_accept_share_at_p95`` / ``threshold_at_p95`` (and
``_p89``): the largest share of frames a confidence threshold auto-accepts with a
precision of at least 0.95 (0.89) on these frames, and that threshold; chosen on the
scored frames themselves, so an upper bound for a threshold fixed beforehand.
"""

from __future__ import annotations

import numpy as np

from unilab_datafactory.detector import Detector, frame_confidence
from unilab_datafactory.label import decision_threshold
from unilab_datafactory.metrics import (match_frame, pr_curve, SHARE_AT_PRECISION,
                                        share_at_precision, summarise)
from unilab_datafactory.store import SampleStore
from unilab_datafactory.train_detector import detect_ground_truth


def score_pseudo_labels(detector: Detector, roots, threshold: float | None = None,
                        curve: bool = False) -> dict:
    """
    Return the pseudo-label figures of ``detector`` on the stores ``roots``.

    ``threshold`` None: the one ``label`` would use (``label.decision_threshold``).
    """
    threshold = decision_threshold(detector, threshold)
    all_frames, auto, reviewed, raw, conf = [], [], [], [], []
    for f in detect_ground_truth(detector, roots):
        raw.append(f)
        result = match_frame(*f)
        all_frames.append(result)
        conf.append(frame_confidence(f[1][None])[0])
        if conf[-1] >= threshold:
            auto.append(result)
            reviewed.append(result)
        else:  # the reviewer's correction is the ground truth itself
            n = len(f[4])
            reviewed.append({'tp': n, 'fp': 0, 'fn': 0, 'ious': [1.0] * n, 'correct': True})
    if not all_frames:
        raise ValueError(f'no ground-truth samples in {", ".join(map(str, roots))}')
    s_all, s_auto, s_rev = summarise(all_frames), summarise(auto), summarise(reviewed)
    out = {'detector': detector.version, 'threshold': threshold,
           'frames': len(all_frames), 'precision': s_all['precision'],
           'recall': s_all['recall'], 'frame_accuracy': s_all['frame_accuracy'],
           'auto_accept_share': len(auto) / len(all_frames),
           'auto_precision': s_auto['precision'] if auto else None,
           'auto_recall': s_auto['recall'] if auto else None,
           'auto_frame_accuracy': s_auto['frame_accuracy'] if auto else None,
           'precision_after_review': s_rev['precision'],
           'recall_after_review': s_rev['recall']}
    for p in SHARE_AT_PRECISION:
        share, at = share_at_precision(conf, [f['tp'] for f in all_frames],
                                       [f['fp'] for f in all_frames], p)
        out[f'auto_accept_share_at_p{round(p * 100)}'] = share
        out[f'threshold_at_p{round(p * 100)}'] = at
    out = {k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}
    if curve:
        out['pr_curve'] = pr_curve(raw)
        out['confidence_share'] = [
            {'threshold': float(t), 'auto_accept_share': float(np.mean(
                [frame_confidence(f[1][None])[0] >= t for f in raw]))}
            for t in np.linspace(0.5, 0.95, 10)]
    return out


def simulate_review(labelled, ground_truth) -> dict:
    """
    Decide every pending sample of ``labelled`` from the matching ground-truth sample.

    The n-th sample of ``labelled`` (by id) is the n-th ground-truth sample of
    ``ground_truth`` (a bag written from that store in order). A proposal set that matches
    the ground truth frame-correctly is accepted, any other is corrected to the ground
    truth: the reviewer a benchmark can run without a person.
    """
    lab, gt = SampleStore(labelled), SampleStore(ground_truth)
    truth = [m['id'] for m in gt.manifests(('ground_truth',))]
    ids = lab.ids()
    if len(ids) != len(truth):
        raise ValueError(f'{labelled} has {len(ids)} samples, {ground_truth} has '
                         f'{len(truth)} ground-truth samples: not the same frames')
    counts = {'accepted': 0, 'corrected': 0}
    for sample_id, truth_id in zip(ids, truth):
        if lab.manifest(sample_id)['decision'] != 'pending':
            continue
        t, _ = lab.read(sample_id)
        g, _ = gt.read(truth_id)
        ok = match_frame(t['boxes'], t['scores'], t['labels'], g['boxes'], g['labels'])
        if ok['correct']:
            lab.decide(sample_id, 'accepted', reviewer='simulated')
            counts['accepted'] += 1
        else:
            lab.decide(sample_id, 'corrected', g['boxes'], g['labels'], reviewer='simulated')
            counts['corrected'] += 1
    return counts
