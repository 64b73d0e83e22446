# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench factory``: the data factory's figures on held-out renders (docs/factory.md).

Without ``--model`` a detector is trained first on ``--steps`` ``sim`` renders (2000, 30
epochs); with it (a detector directory or version ``.pt``) that one is scored and
fine-tuned in a scratch directory (the original is not touched). Then, on renders of the
``real`` variant (other light, colours, sensor noise: never trained on):

- ``precision``, ``recall`` (IoU >= 0.5), ``auto_accept_share`` and ``auto_precision`` at
  the version's calibrated ``threshold`` (the confidence at which 300 held-out ``sim``
  frames are auto-accepted with precision 0.95: ``train.calibrate``), on 300 held-out
  ``real`` frames; the same at the seed's 0.7 (``*_at_0_7``); and ``auto_accept_share_at_p95`` /
  ``threshold_at_p95`` (``_p89``): the most frames a threshold chosen on those frames
  auto-accepts at a precision of 0.95 (0.89), an upper bound;
- ``ingest_p50_ms`` / ``ingest_p99_ms`` (handing the sample to the store, whose group
  commit makes it durable within ``label.COMMIT_S``) and ``label_p50_ms`` /
  ``label_p99_ms`` (the detector) per frame, labelling a bag of 300 other frames;
- one simulated review round: the queued frames get their ground truth
  (``recall_after_review``: the labels of those 300 frames after review), then a 5-epoch
  fine-tune with the ``sim`` renders replayed; ``precision_after_finetune`` /
  ``auto_accept_share_after_finetune`` score the new version on the held-out frames;
- live (``live_*``): the same 300 frames played at 30 Hz by a camera + IMU driver double
  (``camera_driver``) into ``factory live``: frames sent, received, stored, dropped by
  the bounded queue, with an IMU rate, and the capture-to-store latency per frame.
"""

from __future__ import annotations

import pathlib
import tempfile

from unilab_bench.camera_driver import CameraDriver
from unilab_datafactory.store import SampleStore

#: The issue's targets (precision on auto-accepted frames, share auto-accepted, ingest).
TARGETS = {'auto_precision': 0.89, 'auto_accept_share': 0.7, 'ingest_p99_ms': 5.0}
#: The seed's review threshold, reported beside the calibrated one.
FIXED_THRESHOLD = 0.7
#: frames per second of the camera double in the live part
LIVE_RATE_HZ = 30.0


def _live(tmp: pathlib.Path, frames: list, detector, rate_hz: float = LIVE_RATE_HZ) -> dict:
    """Play ``frames`` as a camera (+ IMU) driver into ``factory live``; return its figures."""
    import numpy as np
    from unilab_datafactory.live import run_live
    import time
    driver = CameraDriver([np.asarray(f) for f in frames], rate_hz)
    driver.start()
    seen_done: list[float] = []

    def driver_done_a_second_ago() -> bool:
        if not driver.is_alive() and not seen_done:
            seen_done.append(time.monotonic())
        return bool(seen_done) and time.monotonic() > seen_done[0] + 1.0
    try:
        out = run_live('/camera/image_raw', detector, tmp / 'live', '/imu/data', queue=8,
                       duration_s=300.0, log=lambda *_: None, until=driver_done_a_second_ago)
    finally:
        driver.join(timeout=60)
    cap = out['capture']
    return {'live_rate_hz': rate_hz, 'live_sent': driver.sent,
            'live_received': cap.get('frames', 0), 'live_stored': out['stored'],
            'live_queue_dropped': out['queue_dropped'],
            'live_with_imu': cap.get('frames_with_imu', 0),
            'live_capture_to_store_p50_ms': out['capture_to_store_p50_ms'],
            'live_capture_to_store_p99_ms': out['capture_to_store_p99_ms'],
            'live_ingest_p99_ms': out['ingest_p99_ms'], 'live_label_p99_ms': out['label_p99_ms']}


def bench_factory(args) -> dict:
    """Run the factory benchmark; return its figures."""
    import torch
    from unilab_datafactory.image_bag import write_image_bag
    from unilab_datafactory.label import label_bag
    from unilab_datafactory.render import render_store
    from unilab_datafactory.score import score_pseudo_labels, simulate_review
    from unilab_datafactory.train_detector import (calibrate, latest_version, open_detector,
                                                   train_detector)
    torch.set_num_threads(1)
    seed = args.seed
    with tempfile.TemporaryDirectory(prefix='unilab-bench-factory-') as tmp:
        tmp = pathlib.Path(tmp)
        det_dir = tmp / 'det'
        replay = tmp / 'train'
        render_store(replay, args.steps or (1000 if args.model else 2000), 'sim', seed)
        cal = tmp / 'heldout_sim'  # calibration frames: the training domain, not trained on
        render_store(cal, 300, 'sim', seed + 1)
        if args.model:
            model = pathlib.Path(args.model)
            init = latest_version(model) if model.is_dir() else model
        else:
            train_detector([replay], det_dir, epochs=30, seed=seed, log=None,
                           calibrate_roots=[cal])
            init = latest_version(det_dir)
        first = open_detector(init)
        if first.threshold is None:  # a version trained without --calibrate
            first.threshold = calibrate(first, [cal])['threshold']
        held = tmp / 'heldout_real'
        render_store(held, 300, 'real', seed + 2)
        before = score_pseudo_labels(first, [held])
        fixed = score_pseudo_labels(first, [held], FIXED_THRESHOLD)
        pool = tmp / 'pool_real'
        render_store(pool, 300, 'real', seed + 3)
        store = SampleStore(pool)
        write_image_bag(tmp / 'bag', (store.read(i)[0]['image'] for i in store.ids()))
        labelled = label_bag(tmp / 'bag', first, tmp / 'labelled')
        live = _live(tmp, [store.read(i)[0]['image'] for i in store.ids()], first)
        review = simulate_review(tmp / 'labelled', pool)
        after_review = score_pseudo_labels(first, [pool])
        record = train_detector([tmp / 'labelled', replay], det_dir, epochs=5, lr=5e-4,
                                seed=seed, init=str(init), log=None,
                                decisions=('ground_truth', 'accepted', 'corrected'),
                                calibrate_roots=[cal])
        after = score_pseudo_labels(open_detector(det_dir / record['file']), [held])
    out = {'detector': before['detector'], 'arch': first.arch, 'frames': before['frames'],
           'threshold': before['threshold'],
           'precision': before['precision'], 'recall': before['recall'],
           'auto_accept_share': before['auto_accept_share'],
           'auto_precision': before['auto_precision'],
           'auto_accept_share_at_0_7': fixed['auto_accept_share'],
           'auto_precision_at_0_7': fixed['auto_precision'],
           **{k: before[k] for k in before if k.endswith(('_at_p89', '_at_p95'))},
           'ingest_p50_ms': labelled['ingest_p50_ms'],
           'ingest_p99_ms': labelled['ingest_p99_ms'],
           'label_p50_ms': labelled['label_p50_ms'], 'label_p99_ms': labelled['label_p99_ms'],
           'queued': labelled['pending'], 'review': review,
           'recall_after_review': after_review['recall_after_review'],
           'precision_after_finetune': after['precision'],
           'auto_precision_after_finetune': after['auto_precision'],
           'auto_accept_share_after_finetune': after['auto_accept_share'],
           'threshold_after_finetune': after['threshold'],
           'auto_accept_share_at_p95_after_finetune': after['auto_accept_share_at_p95'],
           'finetune_s': record['train_s'], **live}
    out['targets'] = {k: {'target': v, 'value': out[k],
                          'met': out[k] is not None and (out[k] <= v if k.endswith('_ms')
                                                         else out[k] >= v)}
                      for k, v in TARGETS.items()}
    return out
