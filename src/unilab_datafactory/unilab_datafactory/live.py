# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab factory live``: a camera topic to pseudo-labelled samples while the robot runs.

Two nodes (wiring over ``unilab_datafactory.capture`` and ``unilab_datafactory.label``):

- ``factory_capture`` subscribes to a driver's ``sensor_msgs/Image`` (or
  ``CompressedImage``, a topic ending in ``/compressed``) and ``sensor_msgs/Imu``,
  attaches the IMU rate nearest to each frame's stamp (in the camera's frame), and
  publishes the frame on the zero-copy transport (``/unilab/factory/frames``: shared
  memory to another process, in-process hand-over here; no disk on this path).
- ``factory_labeller`` takes frames from that topic into a bounded queue (oldest
  dropped, counted) and a worker thread runs the detector and writes each frame into
  the store (``auto`` or ``pending`` review) with its stamp, frame id, ``gyro_cam``.

Unusable messages are counted by reason, never passed on; on stop the frames already
queued are labelled before the store closes.
"""

from __future__ import annotations

import collections
import threading
import time

import numpy as np
from rclpy.node import Node
from unilab_datafactory.capture import (decode_compressed, Frame, frame_from_tensors,
                                        frame_tensors, FrameQueue, ImuRates)
from unilab_datafactory.label import COMMIT_S, Labeller, to_rgb8
from unilab_datafactory.store import SampleStore
from unilab_perception.ingest import InvalidMessage, read_imu

#: the zero-copy topic between capture and labeller
FRAMES_TOPIC = '/unilab/factory/frames'
#: the largest frame (height, width) a transport slot holds by default (1080p)
MAX_SIZE = (1080, 1920)


class FrameCaptureNode(Node):
    """A camera (+ IMU) topic into frames on the zero-copy transport."""

    def __init__(self, topic: str, imu_topic: str = '', imu: ImuRates | None = None,
                 depth: int = 8, imu_wait_s: float = 0.1, max_size=MAX_SIZE, **kwargs):
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import CompressedImage, Image, Imu
        from unilab_core.ros.tensor_topic import batch_capacity, TensorPublisher
        super().__init__('factory_capture', **kwargs)
        # The transport's slots hold the largest frame; shared memory is only mapped once
        # a reader in another process joins (in-process readers get the arrays themselves).
        self.max_size = tuple(int(v) for v in max_size)
        self._pub = TensorPublisher(self, FRAMES_TOPIC, batch_capacity(
            {'image': (*self.max_size, 3), 'rest': (512,)}, itemsize=1) + 4096, slots=8)
        self._pub.prepare()  # the segment now, not while the first frames arrive
        # Best effort matches every camera driver (a reliable reader would not match a
        # best-effort writer); ``depth`` frames wait in the reader while the executor is busy.
        qos = QoSProfile(depth=max(1, int(depth)), reliability=ReliabilityPolicy.BEST_EFFORT)
        self.topic, self.imu_topic = topic, imu_topic
        self.imu = imu or ImuRates()
        self.counts: collections.Counter = collections.Counter()
        self.received_at: dict[int, float] = {}  # seq -> monotonic receipt (latency)
        # Frames waiting for the first IMU sample after their stamp (then the nearest one
        # is known: a few ms at 200 Hz), at most ``imu_wait_s`` of wall time (a late or
        # silent IMU); then they go with the nearest sample there is, or without.
        self._waiting: collections.deque = collections.deque()
        self._wait_s = float(imu_wait_s)
        compressed = topic.rstrip('/').endswith('/compressed')
        self.create_subscription(CompressedImage if compressed else Image, topic,
                                 self._on_compressed if compressed else self._on_image, qos)
        if imu_topic:
            imu_qos = QoSProfile(depth=200, reliability=ReliabilityPolicy.BEST_EFFORT)
            self.create_subscription(Imu, imu_topic, self._on_imu, imu_qos)  # 1 s at 200 Hz
            self.create_timer(0.005, self._flush)

    def _on_imu(self, msg) -> None:
        try:
            s = read_imu(msg)
        except InvalidMessage as exc:
            self.counts[f'imu_{exc.kind}'] += 1
            return
        self.imu.add(s.stamp_ns, s.angular_velocity)
        self.counts['imu_samples'] += 1
        self._flush()

    def _on_image(self, msg) -> None:
        from unilab_perception.ingest import InvalidMessage, read_image
        try:
            img = to_rgb8(read_image(msg), str(msg.encoding))
        except InvalidMessage as exc:
            self.counts[f'bad_{exc.kind}'] += 1
            return
        except ValueError:
            self.counts['bad_encoding'] += 1
            return
        self._publish(img, msg.header)

    def _on_compressed(self, msg) -> None:
        try:
            img = decode_compressed(msg.data, str(msg.format))
        except ValueError:
            self.counts['bad_compressed'] += 1
            return
        self._publish(img, msg.header)

    def _publish(self, img: np.ndarray, header) -> None:
        stamp = int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)
        frame = (time.monotonic(), img, stamp, str(header.frame_id))
        if not self.imu_topic:
            self._send(*frame)
            return
        self._waiting.append(frame)
        self._flush()

    def _flush(self) -> None:
        now = time.monotonic()
        while self._waiting:
            t0, img, stamp, frame_id = self._waiting[0]
            latest = self.imu.latest_ns
            if not (latest is not None and latest >= stamp) and now - t0 < self._wait_s \
                    and len(self._waiting) <= 64:
                return
            self._waiting.popleft()
            self._send(t0, img, stamp, frame_id)

    def _send(self, t0: float, img: np.ndarray, stamp: int, frame_id: str) -> None:
        gyro = self.imu.at(stamp) if self.imu_topic else None
        try:
            tensors = frame_tensors(Frame(img, stamp, frame_id, gyro))
        except ValueError:
            self.counts['bad_frame_id'] += 1
            return
        if img.shape[0] * img.shape[1] > self.max_size[0] * self.max_size[1]:
            self.counts['bad_too_large'] += 1
            if self.counts['bad_too_large'] == 1:
                self.get_logger().error(f'{self.topic}: {img.shape[1]} x {img.shape[0]} '
                                        f'frames are larger than --max-size '
                                        f'{self.max_size[0]}x{self.max_size[1]}; dropped')
            return
        seq = self.counts['frames']
        self.received_at[seq] = t0
        if len(self.received_at) > 4096:  # bounded: the labeller pops what it stores
            self.received_at.pop(next(iter(self.received_at)))
        self._pub.publish('frame', seq, tensors, stamp_ns=stamp)
        self.counts['frames'] += 1
        self.counts['frames_with_imu'] += gyro is not None

    def close(self) -> None:
        """Send the frames still waiting for an IMU sample, then close the transport writer."""
        while self._waiting:
            self._send(*self._waiting.popleft())
        self._pub.close()


class FrameLabellerNode(Node):
    """Frames from the transport into a bounded queue; a worker labels and stores them."""

    def __init__(self, labeller: Labeller, source: str, queue: int = 8,
                 received_at: dict | None = None, reload=None, **kwargs):
        from unilab_core.ros.tensor_topic import TensorSubscription
        super().__init__('factory_labeller', **kwargs)
        self.labeller, self.source = labeller, source
        # ``reload`` (schedule.Reloader): a newer version replaces the detector between
        # two frames.
        self.reload = reload
        self.versions = [labeller.detector.version]
        self.queue = FrameQueue(queue)
        self.counts: collections.Counter = collections.Counter()
        self.capture_to_store_ms: list[float] = []
        self._received_at = received_at if received_at is not None else {}
        self._stop = threading.Event()
        self.sub = TensorSubscription(self, FRAMES_TOPIC, self._on_frame, depth=queue,
                                      on_error=lambda exc: self._bad(str(exc)))
        self._worker = threading.Thread(target=self._work, name='factory-labeller',
                                        daemon=True)
        self._worker.start()

    def _bad(self, why: str) -> None:
        self.counts['bad_frames'] += 1
        if self.counts['bad_frames'] == 1:
            self.get_logger().error(f'unusable frame on {FRAMES_TOPIC}: {why}')

    def _on_frame(self, batch) -> None:
        try:
            frame = frame_from_tensors(batch.tensors, batch.stamp_ns)
        except ValueError as exc:
            self._bad(str(exc))
            return
        self.queue.put((batch.seq, frame))

    def _label(self, item) -> None:
        seq, f = item
        extra = {} if f.gyro_cam is None else {
            'gyro_cam': [round(float(g), 5) for g in f.gyro_cam]}
        self.labeller(f.image, self.source, self.source, f.stamp_ns, f.frame_id, extra)
        t0 = self._received_at.pop(seq, None)
        if t0 is not None:
            self.capture_to_store_ms.append(1e3 * (time.monotonic() - t0))

    def _work(self) -> None:
        while not self._stop.is_set():
            self._maybe_reload()
            item = self.queue.get(0.1)
            if item is not None:
                self._label_counted(item)

    def _maybe_reload(self) -> None:
        """Take a newer detector version (``factory finetune --every``) between frames."""
        if self.reload is None:
            return
        errors = self.reload.errors
        detector = self.reload.check(self.labeller.detector)
        if self.reload.errors != errors:
            self.counts['reload_errors'] += 1
            self.get_logger().error(self.reload.last_error)
        if detector is not None:
            self.labeller.detector = detector
            self.versions.append(detector.version)
            self.get_logger().info(f'detector {detector.version} takes over from the next '
                                   'frame')

    def _label_counted(self, item) -> None:
        """Label one frame; a failure (store full, detector error) is counted, never fatal."""
        try:
            self._label(item)
        except Exception as exc:  # noqa: BLE001 - the worker must outlive one bad frame
            self.counts['label_errors'] += 1
            if self.counts['label_errors'] == 1:
                self.get_logger().error(f'frame not labelled or stored: {exc}')

    def close(self) -> None:
        """Stop the worker, then label every frame still queued (nothing dropped on stop)."""
        self._stop.set()
        self._worker.join(timeout=30)
        while len(self.queue):
            item = self.queue.get(0.0)
            if item is not None:
                self._label_counted(item)
        self.transport_counters = self.sub.counters()  # how the frames came (shm, inproc)
        self.sub.close()


def _deliver_in_flight(executor, passes: int = 10) -> None:
    """Spin a little after a stop: frames already published reach the labeller's queue."""
    for _ in range(passes):
        executor.spin_once(timeout_sec=0.02)


def _pct(values, q):
    return round(float(np.percentile(values, q)), 3) if values else None


#: what one ``factory live`` process runs: both nodes, or one end of the transport
ROLES = ('both', 'capture', 'label')


def run_live(topic: str, detector, out, imu_topic: str = '', threshold: float | None = None,
             duration_s: float = 0.0, queue: int = 8, imu_to_camera=(0.0, 0.0, 0.0, 1.0),
             imu_tolerance_s: float = 0.02, log=print, until=None, role: str = 'both',
             imu_wait_s: float = 0.1, reload=None) -> dict:
    """
    Label ``topic`` live into the store ``out`` until Ctrl-C, ``duration_s`` or ``until()``.

    ``role`` ``capture`` runs only the capture node (no detector, no store: the frames
    go out on the transport, through shared memory to a labeller in another process on
    this host), ``label`` only the labeller (reading ``/unilab/factory/frames``).
    ``reload`` (``schedule.Reloader``): take newer detector versions as they appear.
    """
    import signal

    import rclpy
    from rclpy.signals import SignalHandlerOptions
    from unilab_core.ros.runtime import spin_nodes
    if role not in ROLES:
        raise ValueError(f'--role {role}: expected one of {", ".join(ROLES)}')
    store = labeller = None
    if role != 'capture':
        # Group commit: no fsync per frame; samples durable within COMMIT_S, never torn.
        store = SampleStore(out, create=True, commit_s=COMMIT_S)
        labeller = Labeller(detector, store, threshold, prefix='live-')
        # The first inference is slow (allocation, kernel selection): do it before the
        # camera streams in, so it does not hold the interpreter as the first frames arrive.
        detector(np.zeros((1, *detector.input_size, 3), np.uint8))
    imu = ImuRates(tolerance_ns=int(imu_tolerance_s * 1e9), imu_to_camera=imu_to_camera)
    stop: list[bool] = []
    previous = {s: signal.signal(s, lambda *_: stop.append(True))
                for s in (signal.SIGINT, signal.SIGTERM)}
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    end = time.monotonic() + duration_s if duration_s > 0 else None
    cap = lab = None
    try:
        if role != 'label':
            cap = FrameCaptureNode(topic, imu_topic, imu, depth=queue, imu_wait_s=imu_wait_s)
        if role != 'capture':
            lab = FrameLabellerNode(labeller, f'live:{topic}', queue,
                                    cap.received_at if cap is not None else None,
                                    reload=reload)
        what = {'both': f'-> {out}', 'capture': f'-> {FRAMES_TOPIC}',
                'label': f'{FRAMES_TOPIC} -> {out}'}[role]
        log(f'factory live ({role}): {topic}' + (f' + {imu_topic}' if imu_topic else '')
            + f' {what}; Ctrl-C stops')
        nodes = [n for n in (cap, lab) if n is not None]
        spin_nodes(nodes, 'single_threaded',
                   until=lambda: bool(stop) or (end is not None and time.monotonic() >= end)
                   or (until is not None and until()),
                   tick_s=0.1, on_stop=_deliver_in_flight)
        for n in nodes:
            n.destroy_node()
    finally:
        rclpy.try_shutdown()
        for s, h in previous.items():
            signal.signal(s, h)
        if store is not None:  # commit what was written (a failed commit raises here)
            store.close()
    out_summary = {'role': role, 'topic': topic, 'imu_topic': imu_topic}
    if cap is not None:
        out_summary['capture'] = dict(cap.counts)
    if lab is not None:
        summary = labeller.summary()
        out_summary.update({
            'store': str(out), 'detector': labeller.detector.version,
            'detector_versions': lab.versions, 'reload_errors': lab.counts['reload_errors'],
            'queue_dropped': lab.queue.dropped, 'bad_frames': lab.counts['bad_frames'],
            'label_errors': lab.counts['label_errors'],
            'transport': getattr(lab, 'transport_counters', {}),
            'stored': summary['auto'] + summary['pending'],
            **summary,
            'capture_to_store_p50_ms': _pct(lab.capture_to_store_ms, 50),
            'capture_to_store_p99_ms': _pct(lab.capture_to_store_ms, 99)})
    return out_summary
