# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Pseudo-labels: run the detector on frames, store every frame, queue the unsure ones.

A frame whose confidence (``detector.frame_confidence``) is at least ``threshold`` is
stored as ``auto``; below it as ``pending``, which is the review queue. Without a given
threshold the detector version's calibrated one is used (``train.calibrate``), else
``DEFAULT_THRESHOLD``; after a live reload, the new version's. ``label_bag``
reads ``sensor_msgs/Image`` messages from a bag (``unilab record --topics
/camera/image_raw``); a message that cannot be used (unknown encoding, wrong data length)
is counted by reason and skipped. Latencies are measured per frame: ``label`` (detector)
and ``ingest`` (handing the sample to the store). Labelling stores use a group commit
(``COMMIT_S``, ``SampleStore(commit_s=...)``): no fsync on the per-frame path; ``commit``
latencies say when samples became durable and visible.
"""

from __future__ import annotations

import time

import numpy as np

from unilab_datafactory.detector import Detector, frame_confidence, KEEP_SCORE
from unilab_datafactory.store import SampleStore
from unilab_perception.ingest import InvalidMessage, read_image

DEFAULT_THRESHOLD = 0.7
#: Group-commit period of a labelling store (s): the most a crash can lose.
COMMIT_S = 0.5
IMAGE_TYPE = 'sensor_msgs/msg/Image'


def to_rgb8(img: np.ndarray, encoding: str) -> np.ndarray:
    """Return an 8-bit image [H, W, C] of ``encoding`` as rgb8 (ValueError otherwise)."""
    if img.dtype != np.uint8:
        raise ValueError(f'encoding `{encoding}`: 8-bit images only')
    if encoding in ('rgb8', 'rgba8'):
        return np.ascontiguousarray(img[..., :3])
    if encoding in ('bgr8', 'bgra8'):
        return np.ascontiguousarray(img[..., 2::-1])
    if encoding in ('mono8', '8UC1'):
        return np.ascontiguousarray(np.repeat(img[..., :1], 3, axis=2))
    raise ValueError(f'encoding `{encoding}`: expected rgb8, bgr8, rgba8, bgra8 or mono8')


def decision_threshold(detector: Detector, given: float | None = None) -> float:
    """Return ``given``, else the detector's calibrated threshold, else the default."""
    if given is not None:
        if not 0.0 < given <= 1.0:
            raise ValueError(f'--threshold {given}: must be in (0, 1]')
        return float(given)
    own = getattr(detector, 'threshold', None)
    return float(own) if own is not None else DEFAULT_THRESHOLD


class Labeller:
    """Detect, decide and store one frame at a time; counts and latencies kept."""

    def __init__(self, detector: Detector, store: SampleStore,
                 threshold: float | None = None, prefix: str = 'frame-'):
        """
        Label into ``store``.

        ``threshold`` in (0, 1] splits auto from pending (None: the detector's own, see
        ``decision_threshold``).
        """
        if threshold is not None:
            decision_threshold(detector, threshold)  # refuse a bad value now
        self.detector, self.store, self.given = detector, store, threshold
        self.prefix = prefix
        self._next = int(store.next_id(prefix)[len(prefix):])
        self.counts = {'auto': 0, 'pending': 0, 'skipped': {}}
        self.label_ms: list[float] = []
        self.ingest_ms: list[float] = []

    @property
    def threshold(self) -> float:
        """Return the threshold in use: the given one, else the current detector's."""
        return decision_threshold(self.detector, self.given)

    def skip(self, reason: str) -> None:
        """Count a frame that could not be used."""
        self.counts['skipped'][reason] = self.counts['skipped'].get(reason, 0) + 1

    def __call__(self, image: np.ndarray, source: str, topic: str, stamp_ns: int,
                 frame_id: str, extra: dict | None = None) -> dict:
        """Label and store one rgb8 frame [H, W, 3]; return its manifest (+ ``extra``)."""
        t0 = time.perf_counter()
        d = self.detector(image[None])
        t1 = time.perf_counter()
        conf = float(frame_confidence(d.scores)[0])
        keep = d.scores[0] >= KEEP_SCORE
        threshold = self.threshold
        decision = 'auto' if conf >= threshold else 'pending'
        manifest = {'source': source, 'topic': topic, 'stamp_ns': int(stamp_ns),
                    'frame_id': frame_id, 'detector_version': self.detector.version,
                    'decision': decision, 'confidence': round(conf, 4),
                    'classes': list(self.detector.classes), 'threshold': threshold,
                    **(extra or {})}
        sample_id = f'{self.prefix}{self._next:07d}'
        self.store.write(sample_id, image, d.boxes[0][keep], d.labels[0][keep],
                         d.scores[0][keep], manifest)
        t2 = time.perf_counter()
        self._next += 1
        self.counts[decision] += 1
        self.label_ms.append(1e3 * (t1 - t0))
        self.ingest_ms.append(1e3 * (t2 - t1))
        return {**manifest, 'id': sample_id}

    def summary(self) -> dict:
        """Return counts and latency percentiles (ms)."""
        def pct(v, q):
            return round(float(np.percentile(v, q)), 3) if v else None
        return {**self.counts, 'threshold': self.threshold,
                'label_p50_ms': pct(self.label_ms, 50),
                'label_p99_ms': pct(self.label_ms, 99),
                'ingest_p50_ms': pct(self.ingest_ms, 50),
                'ingest_p99_ms': pct(self.ingest_ms, 99),
                'commit_p50_ms': pct(self.store.commit_ms, 50),
                'commit_p99_ms': pct(self.store.commit_ms, 99),
                'uncommitted_at_open': self.store.uncommitted_at_open}


def label_bag(bag, detector: Detector, out, topic: str = '/camera/image_raw',
              threshold: float | None = None) -> dict:
    """Pseudo-label every image of ``topic`` in ``bag`` into the store ``out``."""
    from unilab_bag.storage import BagReader
    with BagReader(bag) as reader:
        topics = reader.topics
        if topic not in topics:
            raise ValueError(f'bag {bag}: no topic `{topic}` (has: {", ".join(topics)})')
        if topics[topic][0] != IMAGE_TYPE:
            raise ValueError(f'bag {bag}: `{topic}` is {topics[topic][0]}, not {IMAGE_TYPE}')
        store = SampleStore(out, create=True, commit_s=COMMIT_S)
        labeller = Labeller(detector, store, threshold)
        try:
            for m, msg in reader.decoded([topic]):
                try:
                    img = to_rgb8(read_image(msg), str(msg.encoding))
                except InvalidMessage as exc:
                    labeller.skip(exc.kind)
                    continue
                except ValueError:
                    labeller.skip('encoding')
                    continue
                stamp = int(msg.header.stamp.sec) * 1_000_000_000 + \
                    int(msg.header.stamp.nanosec)
                labeller(img, str(bag), topic, stamp, str(msg.header.frame_id))
        finally:
            store.close()
    return {'store': str(out), 'detector': detector.version, **labeller.summary()}
