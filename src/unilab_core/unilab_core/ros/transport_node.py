# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
ROS edge of the zero-copy transport: a publisher / subscription pair for rclpy nodes.

``TensorPublisher.publish(kind, seq, tensors, ...)`` takes what ``make_batch``
takes; ``TensorSubscription`` calls back with the ``Batch`` that
``read_batch`` returns. Per publish:

* in-process subscribers get the very same (read-only) arrays through the
  in-process registry; the callback runs as a task on their node's executor;
* if a subscriber outside this process listens on ``<topic>/_tensor_desc``,
  the payload goes into the shared-memory ring and a ``TensorDescriptor``
  (a few hundred bytes) is published there;
* if anything subscribes to ``<topic>`` itself (``ros2 topic echo``, a bag
  recorder, a node that is not UniLab-aware), the standard message
  (``TensorBatch`` by default, or e.g. ``PointCloud2`` through ``to_standard``)
  is built and published there; otherwise nothing is serialised.

UniLab subscriptions listen only on the descriptor topic, so the standard
topic's subscription count is exactly the number of plain ROS readers; the
descriptor topic's count minus this process's in-process subscribers is the
number of transport-aware readers in other processes. The ``_tensor_desc``
token starts with an underscore, so ``ros2 topic list`` hides it by default.

Views from the ring are valid only inside the callback (the slot is given
back when it returns): copy what you keep (``arr.copy()``, ``tensor.copy_``).
"""

from __future__ import annotations

import collections
import os
import time
from typing import Any, Callable

from rclpy.node import Node
from rclpy.qos import QoSProfile
from unilab_core.ros.tensor_msg import Batch, make_batch
from unilab_core.transport import inproc, shm
from unilab_core.transport.channel import TensorReader, TensorWriter
from unilab_core.transport.descriptor import Descriptor, DescriptorError, TensorSpec
from unilab_core.transport.ring import RingFullError
from unilab_interfaces.msg import TensorBatch, TensorDescriptor

DESC_SUFFIX = '/_tensor_desc'


def descriptor_topic(topic: str) -> str:
    """Return the descriptor topic of ``topic``."""
    return topic.rstrip('/') + DESC_SUFFIX


def to_msg(d: Descriptor) -> TensorDescriptor:
    """Build the ROS message of a descriptor."""
    m = TensorDescriptor()
    m.stamp_sec, m.stamp_nanosec = divmod(int(d.stamp_ns), 1_000_000_000)
    m.seq, m.version, m.kind = int(d.seq), int(d.version), d.kind
    m.segment, m.slot, m.slot_seq = d.segment, int(d.slot), int(d.slot_seq)
    m.payload_bytes = int(d.payload_bytes)
    m.names = [t.name for t in d.tensors]
    m.dtypes = [t.dtype for t in d.tensors]
    m.ndims = [len(t.shape) for t in d.tensors]
    m.offsets = [int(t.offset) for t in d.tensors]
    m.shape = [int(s) for t in d.tensors for s in t.shape]
    m.device = d.device
    m.cuda_ipc_handle = bytes(d.cuda_ipc_handle)
    m.writer_pid = int(d.writer_pid)
    m.boot_id = bytes(d.boot_id)
    m.publish_ns = int(d.publish_ns)
    return m


def from_msg(m: TensorDescriptor) -> Descriptor:
    """Decode a descriptor message; DescriptorError(kind='bad_layout') if inconsistent."""
    n = len(m.names)
    if not (len(m.dtypes) == len(m.ndims) == len(m.offsets) == n) or \
            sum(m.ndims) != len(m.shape):
        raise DescriptorError('bad_layout', f'descriptor of `{m.segment}`: {n} names, '
                              f'{len(m.dtypes)} dtypes, {len(m.ndims)} ndims, '
                              f'{len(m.offsets)} offsets, {len(m.shape)} dims')
    specs, k = [], 0
    for i in range(n):
        dims = tuple(int(s) for s in m.shape[k:k + m.ndims[i]])
        k += m.ndims[i]
        specs.append(TensorSpec(m.names[i], m.dtypes[i], dims, int(m.offsets[i])))
    return Descriptor(
        kind=m.kind, seq=int(m.seq), segment=m.segment, slot=int(m.slot),
        slot_seq=int(m.slot_seq), payload_bytes=int(m.payload_bytes), tensors=specs,
        version=int(m.version), stamp_ns=m.stamp_sec * 1_000_000_000 + m.stamp_nanosec,
        device=m.device, cuda_ipc_handle=bytes(m.cuda_ipc_handle),
        writer_pid=int(m.writer_pid), boot_id=bytes(m.boot_id), publish_ns=int(m.publish_ns))


def _domain(node: Node) -> int:
    try:
        return int(node.context.get_domain_id())
    except Exception:  # older rclpy: fall back to the environment
        return shm.ros_domain()


def _default_standard(batch: Batch) -> TensorBatch:
    return make_batch(batch.kind, batch.seq, batch.tensors, batch.version, batch.stamp_ns)


class TensorPublisher:
    """Publish named arrays through the transport (in-process, shared memory, plain ROS)."""

    def __init__(self, node: Node, topic: str, capacity: int, *, policy: str = 'latest',
                 slots: int = 4, qos: QoSProfile | int = 10, timeout_s: float = 1.0,
                 standard_type=TensorBatch,
                 to_standard: Callable[[Batch], Any] | None = None):
        self.node = node
        self.topic = topic
        self.capacity = int(capacity)
        self.policy, self.slots, self.timeout_s = policy, int(slots), float(timeout_s)
        self.key = (_domain(node), topic)
        self.desc_pub = node.create_publisher(TensorDescriptor, descriptor_topic(topic), qos)
        self.std_pub = node.create_publisher(standard_type, topic, qos)
        self.to_standard = to_standard or _default_standard
        self.writer: TensorWriter | None = None
        self.stats = collections.Counter()

    def _writer(self) -> TensorWriter:
        if self.writer is None:
            self.writer = TensorWriter(
                self.node.get_fully_qualified_name(), self.topic, self.capacity, self.slots,
                self.policy, self.timeout_s, domain=self.key[0], on_stall=self._on_stall)
            for name in self.writer.reclaimed:
                self.node.get_logger().warning(f'reclaimed stale shared-memory segment {name}')
        return self.writer

    def _on_stall(self, waited_s: float) -> None:
        self.stats['stalls'] += 1
        self.node.get_logger().warning(
            f'{self.topic}: waited {waited_s * 1e3:.1f} ms for a free slot (slow reader)',
            throttle_duration_sec=5.0)

    def remote_readers(self) -> int:
        """Return the number of transport-aware subscriptions outside this process."""
        return self.desc_pub.get_subscription_count() - inproc.REGISTRY.count(self.key)

    def publish(self, kind: str, seq: int, tensors: dict[str, Any], version: int = 0,
                stamp_ns: int = 0) -> None:
        """
        Publish ``tensors`` (numpy arrays; made read-only: do not write them afterwards).

        Raises RingFullError when a ``reliable`` topic's readers hold every
        slot for longer than ``timeout_s`` (the message is not lost silently).
        """
        batch = Batch(kind, int(seq), int(version), int(stamp_ns), inproc.freeze(tensors))
        self.stats['inproc'] += inproc.REGISTRY.publish(self.key, batch)
        if self.remote_readers() > 0:
            try:
                desc = self._writer().write(kind, seq, tensors, version, stamp_ns)
            except RingFullError:
                self.stats['ring_full'] += 1
                raise
            if desc is None:
                self.stats['dropped_all_pinned'] += 1
            else:
                self.desc_pub.publish(to_msg(desc))
                self.stats['descriptors'] += 1
        if self.std_pub.get_subscription_count() > 0:
            self.std_pub.publish(self.to_standard(batch))
            self.stats['serialised'] += 1

    def close(self) -> None:
        """Unlink the segment (also done at exit)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None


class TensorSubscription:
    """Receive named arrays from TensorPublishers, in this process or others."""

    def __init__(self, node: Node, topic: str, callback: Callable[[Batch], None], *,
                 policy: str = 'latest', depth: int = 1, qos: QoSProfile | int = 10):
        self.node = node
        self.topic = topic
        self.callback = callback
        self.key = (_domain(node), topic)
        self.reader = TensorReader()
        self.stats = collections.Counter()
        self._last_error = ''
        self._scheduled = False
        self._pid = os.getpid()
        self.sub = node.create_subscription(TensorDescriptor, descriptor_topic(topic),
                                            self._on_descriptor, qos)
        self._inproc = inproc.REGISTRY.subscribe(self.key, inproc.InprocSubscriber(
            callback, depth, policy, notify=self._notify, alive=self._alive))

    def _alive(self) -> bool:
        # destroy_node() empties node.subscriptions; a shut-down context delivers nothing.
        return self.node.context.ok() and self.sub in self.node.subscriptions

    def _notify(self) -> None:
        # Run the callbacks later on our node's executor, like a subscription callback
        # (a task, not a guard condition: rclpy's EventsExecutor supports no guard
        # conditions). Without an executor yet, deliver at once.
        if self._scheduled:
            return
        ex = self.node.executor
        if ex is None:
            self._drain()
            return
        self._scheduled = True
        ex.create_task(self._drain)

    def _drain(self) -> None:
        self._scheduled = False
        self.stats['inproc'] += self._inproc.drain()

    def _on_descriptor(self, msg: TensorDescriptor) -> None:
        if msg.writer_pid == self._pid and msg.device == 'cpu':
            return  # published in this process: already handed over in-process
        try:
            got = self.reader.receive(from_msg(msg))
        except DescriptorError as exc:
            self.stats[f'error_{exc.kind}'] += 1
            self._last_error = f'{exc.kind}: {exc}'
            self.node.get_logger().error(
                f'{self.topic}: dropped descriptor ({exc.kind}): {exc}',
                throttle_duration_sec=1.0)
            return
        try:
            d = got.descriptor
            self.stats['shm'] += 1
            self.callback(Batch(d.kind, d.seq, d.version, d.stamp_ns, got.tensors))
        finally:
            if not got.release():
                self.stats['torn_after_use'] += 1

    def counters(self) -> dict[str, int]:
        """Return the delivery and error counters, with the skips of each path."""
        out = dict(self.stats)
        out['inproc_skipped'] = self._inproc.stats.skipped
        for r in self.reader.readers.values():
            out['shm_skipped'] = out.get('shm_skipped', 0) + r.stats.skipped
        return out

    def diagnostic_status(self):
        """Return a ``diagnostic_msgs/DiagnosticStatus`` with the counters and the last error."""
        from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
        st = DiagnosticStatus()
        st.name = f'{self.node.get_name()}: transport {self.topic}'
        errors = sum(v for k, v in self.stats.items() if k.startswith('error_'))
        st.level = DiagnosticStatus.WARN if errors else DiagnosticStatus.OK
        st.message = self._last_error or 'ok'
        st.values = [KeyValue(key=k, value=str(v)) for k, v in sorted(self.counters().items())]
        return st

    def close(self) -> None:
        """Stop in-process delivery and unmap segments."""
        inproc.REGISTRY.unsubscribe(self.key, self._inproc)
        self.reader.close()


def now_ns() -> int:
    """Return CLOCK_MONOTONIC in ns (what ``publish_ns`` in descriptors uses)."""
    return time.monotonic_ns()


__all__ = ['TensorPublisher', 'TensorSubscription', 'descriptor_topic', 'from_msg', 'to_msg',
           'now_ns']
