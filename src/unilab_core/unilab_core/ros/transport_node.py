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

CUDA tensors (torch, ``is_cuda``) take the same calls: in-process readers get
the tensor itself; for readers in other processes the payload goes into a
device ring (``transport.cuda.CudaTensorWriter``: one CUDA allocation shared
by IPC handle, an interprocess event per slot) and the descriptor names the
device, so the subscription opens it with ``CudaTensorReader`` and calls back
with CUDA views; plain ROS readers get a host copy. A process without CUDA
that receives a device descriptor drops it with the error kind ``no_cuda``.
A batch must not mix host and device tensors.

Views from the ring are valid only inside the callback (the slot is given
back when it returns): copy what you keep (``arr.copy()``, ``tensor.copy_``).

Wake-up without DDS: once a subscription has mapped a writer's segment (on
its first descriptor), a thread of its own sleeps on the ring's futex word
and reads new messages straight from the ring; the layout travels in the
slot header. By default the callback still runs on the node's executor
(the thread only schedules it: ``deliver='executor'``); ``deliver='thread'``
runs it on the wake thread itself, one thread hop less, for callbacks that
are thread-safe. In-process, ``deliver='thread'`` runs the callback on the
publishing thread, inside ``publish()`` (a callback must then not publish on
the topic it receives). ``spin_us`` > 0 makes the wake thread poll that long after
each message before it sleeps again (a busy core while polling; for
latency-critical topics on machines with a core to spare). ``prewake_us`` > 0
is for periodic topics (sensors at 20-100 Hz): the wake thread estimates the
period from the arrivals, sleeps until ``prewake_us`` before the next message
is due and polls until ``prewake_us`` after it, so no message waits for a
sleeping thread to wake (about ``2 * prewake_us`` of CPU per message). Descriptors then
serve discovery, interop and readers that have not mapped the segment yet:
the publisher sends one only while some remote descriptor subscriber does
not read on wake-ups, for latched topics, and at least every
``DESCRIPTOR_HEARTBEAT_S`` otherwise.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from typing import Any, Callable

from rclpy.node import Node
from rclpy.qos import QoSProfile
from unilab_core.ros.tensor_msg import Batch, make_batch, read_batch, TensorMessageError
from unilab_core.transport import futex, inproc, shm
from unilab_core.transport.channel import TensorReader, TensorWriter
from unilab_core.transport.descriptor import Descriptor, DescriptorError, TensorSpec
from unilab_core.transport.pacing import ArrivalClock
from unilab_core.transport.received import Received
from unilab_core.transport.ring_layout import RingFullError, TransportError
from unilab_interfaces.msg import TensorBatch, TensorDescriptor

DESC_SUFFIX = '/_tensor_desc'
#: a publisher whose remote readers all read on futex wake-ups still sends a descriptor
#: this often (discovery for a reader that joined while another one died unnoticed)
DESCRIPTOR_HEARTBEAT_S = 0.5
#: how long a wake thread sleeps in one futex wait before re-checking for shutdown
WAKE_TIMEOUT_S = 0.5


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


def _is_device_tensor(t) -> bool:
    return bool(getattr(t, 'is_cuda', False))


def batch_device(tensors: dict[str, Any]) -> str | None:
    """
    Return the CUDA device of a batch's tensors, or None for host arrays.

    Raises ValueError naming the tensors when a batch mixes host and device
    tensors or spans several devices (one ring per topic holds one kind).
    """
    on = [k for k, t in tensors.items() if _is_device_tensor(t)]
    if not on:
        return None
    if len(on) != len(tensors):
        host = [k for k in tensors if k not in on]
        raise ValueError(f'batch mixes CUDA tensors {on} and host arrays {host}: move them '
                         f'to one device before publishing')
    devices = {str(tensors[k].device) for k in on}
    if len(devices) > 1:
        raise ValueError(f'batch spans several CUDA devices {sorted(devices)}')
    return devices.pop()


def _device_writer_factory(*args, **kwargs):
    from unilab_core.transport.cuda import CudaTensorWriter
    return CudaTensorWriter(*args, **kwargs)


#: how a publisher creates its device ring (the CUDA IPC writer; one switch, tests replace
#: it where no GPU exists)
DEVICE_WRITER = _device_writer_factory
#: device rings get their own segment name next to the host ring of the same topic: the
#: node part starts with this, so the two names differ near their start and stay distinct
#: when a long node + topic name is truncated to the segment name limit
DEVICE_SEGMENT_PREFIX = 'cuda_'


def _domain(node: Node) -> int:
    try:
        return int(node.context.get_domain_id())
    except Exception:  # older rclpy: fall back to the environment
        return shm.ros_domain()


def _default_standard(batch: Batch) -> TensorBatch:
    return make_batch(batch.kind, batch.seq, batch.tensors, batch.version, batch.stamp_ns)


def _register(node: Node, endpoint) -> None:
    node.__dict__.setdefault('_unilab_transport_endpoints', []).append(endpoint)


def close_endpoints(node: Node) -> None:
    """
    Close every TensorPublisher / TensorSubscription created for ``node``.

    Call it from the node's ``destroy_node``: segments are unlinked and
    in-process subscriptions removed before the node's handles go away.
    """
    for endpoint in node.__dict__.pop('_unilab_transport_endpoints', []):
        endpoint.close()


class TensorPublisher:
    """Publish named arrays through the transport (in-process, shared memory, plain ROS)."""

    def __init__(self, node: Node, topic: str, capacity: int, *, policy: str = 'latest',
                 slots: int = 4, qos: QoSProfile | int = 10, timeout_s: float = 1.0,
                 standard_type=TensorBatch,
                 to_standard: Callable[[Batch], Any] | None = None, latched: bool = False):
        self.node = node
        # Latched (transient-local) topics such as weights: write the ring and the
        # descriptor even with no reader yet, so a late joiner gets the last message.
        self.latched = latched
        # Resolve remapping once (-r /unilab/x:=/y): the in-process key, the ring and the
        # descriptor topic all follow the standard topic's final name.
        topic = node.resolve_topic_name(topic)
        self.topic = topic
        self.capacity = int(capacity)
        self.policy, self.slots, self.timeout_s = policy, int(slots), float(timeout_s)
        self.key = (_domain(node), topic)
        self.desc_pub = node.create_publisher(TensorDescriptor, descriptor_topic(topic), qos)
        self.std_pub = node.create_publisher(standard_type, topic, qos)
        self.to_standard = to_standard or _default_standard
        self.writer: TensorWriter | None = None
        self.device_writer = None  # CudaTensorWriter, created on the first CUDA publish
        self.stats = collections.Counter()
        _register(node, self)
        self._plain_key: tuple[int, int] | None = None
        self._plain = 0
        self._last_desc = 0.0
        self._lock = threading.Lock()

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

    @property
    def topic_name(self) -> str:
        """Return the resolved topic name (like an rclpy publisher's ``topic_name``)."""
        return self.topic

    def get_subscription_count(self) -> int:
        """Return how many subscriptions (any path) match, like an rclpy publisher's."""
        return (self.std_pub.get_subscription_count()
                + self.desc_pub.get_subscription_count())

    def plain_readers(self, n_desc: int | None = None) -> int:
        """
        Return the number of subscriptions to ``<topic>`` by nodes that are not transport-aware.

        UniLab subscriptions also listen on the standard topic (so plain
        publishers such as a bag player reach them); a node that reads the
        descriptor topic too gets the payload through the transport and needs
        no serialised copy. Graph queries run only when a count changes.
        ``n_desc``: the descriptor topic's subscription count, if the caller has it.
        """
        n_std = self.std_pub.get_subscription_count()
        if n_std == 0:
            return 0
        if n_desc is None:
            n_desc = self.desc_pub.get_subscription_count()
        key = (n_std, n_desc)
        if key != self._plain_key:
            def names(topic):
                return [(i.node_namespace, i.node_name)
                        for i in self.node.get_subscriptions_info_by_topic(topic)]
            # Per node: each TensorSubscription holds one descriptor and one standard
            # subscription, so standard subscriptions beyond a node's descriptor
            # subscriptions are plain readers.
            aware = collections.Counter(names(descriptor_topic(self.topic)))
            std = collections.Counter(names(self.topic))
            self._plain = sum(max(0, n - aware[node]) for node, n in std.items())
            self._plain_key = key
        return self._plain

    def remote_readers(self) -> int:
        """Return the number of transport-aware subscriptions outside this process."""
        return self.desc_pub.get_subscription_count() - inproc.REGISTRY.count(self.key)

    def publish(self, kind: str | TensorBatch, seq: int = 0,
                tensors: dict[str, Any] | None = None, version: int = 0,
                stamp_ns: int = 0) -> None:
        """
        Publish ``tensors`` (numpy arrays; made read-only: do not write them afterwards).

        ``publish(msg)`` with a ready ``TensorBatch`` also works (a drop-in for
        an rclpy publisher): it is decoded into views, and plain readers get
        ``msg`` itself. Thread-safe (a node may publish from its own thread).
        Raises RingFullError when a ``reliable`` topic's readers hold every
        slot for longer than ``timeout_s`` (the message is not lost silently).
        """
        with self._lock:
            if isinstance(kind, TensorBatch):
                msg = kind
                b = read_batch(msg)
                self._publish(b.kind, b.seq, b.tensors, b.version, b.stamp_ns, msg)
            else:
                self._publish(kind, seq, tensors, version, stamp_ns, None)

    def _publish(self, kind, seq, tensors, version, stamp_ns, msg) -> None:
        on_device = batch_device(tensors)
        batch = Batch(kind, int(seq), int(version), int(stamp_ns), inproc.freeze(tensors))
        delivered = inproc.REGISTRY.publish(self.key, batch)
        self.stats['inproc'] += delivered
        # One graph count per publish: in-process readers just got the batch, the other
        # transport-aware ones are remote (the same as remote_readers(), without a second
        # pass over the in-process subscribers).
        n_desc = self.desc_pub.get_subscription_count()
        remote = n_desc - delivered
        if self.latched or remote > 0:
            if on_device is not None:
                writer = self._device_writer(on_device)
                desc = writer.write(kind, seq, tensors, version, stamp_ns)
                self.stats['device'] += 1
                # Device rings carry no slot layout, so no reader of theirs sleeps on the
                # futex: the ring's wake-reader count is 0 and a descriptor always goes.
                self._send_descriptor(desc, remote, writer.ring)
            else:
                try:
                    desc = self._writer().write(kind, seq, tensors, version, stamp_ns)
                except RingFullError:
                    self.stats['ring_full'] += 1
                    raise
                self._send_descriptor(desc, remote, self.writer.ring)
        if self.plain_readers(n_desc) > 0:
            plain = msg is not None and self.to_standard is _default_standard
            self.std_pub.publish(msg if plain else self.to_standard(batch))
            self.stats['serialised'] += 1

    def _device_writer(self, device):
        """Return the device ring of this topic (created on the first CUDA publish)."""
        if self.device_writer is None:
            self.device_writer = DEVICE_WRITER(
                DEVICE_SEGMENT_PREFIX + self.node.get_fully_qualified_name(), self.topic,
                self.capacity, self.slots, self.policy, self.timeout_s, device=device,
                domain=self.key[0])
            for name in getattr(self.device_writer, 'reclaimed', []):
                self.node.get_logger().warning(f'reclaimed stale shared-memory segment {name}')
        return self.device_writer

    def _send_descriptor(self, desc: Descriptor | None, remote: int, ring) -> None:
        if desc is None:
            self.stats['dropped_all_pinned'] += 1
            return
        # Readers that sleep on the ring's futex already have the message; a descriptor
        # is needed by readers that have not mapped the segment (or do not wake).
        now = time.monotonic()
        if (self.latched or remote > ring.wake_reader_count()
                or now - self._last_desc > DESCRIPTOR_HEARTBEAT_S):
            self._last_desc = now
            self.desc_pub.publish(to_msg(desc))
            self.stats['descriptors'] += 1
        else:
            self.stats['descriptors_skipped'] += 1

    def loan(self, shapes: dict[str, tuple]) -> 'PublisherLoan':
        """
        Return writable arrays ``{name: (shape, dtype)}`` to fill, then ``publish_loan``.

        With a remote reader the arrays are views of the next ring slot, so
        the payload is never copied (rclcpp's loaned messages); in-process
        subscribers then get a copy (the slot is reused later). Without a
        remote reader (or when every slot is pinned) they are fresh arrays,
        handed to in-process subscribers as they are. A ``reliable`` ring
        may wait here for a free slot (RingFullError after ``timeout_s``).
        """
        remote = self.remote_readers()
        ring_loan = None
        if self.latched or remote > 0:
            try:
                ring_loan = self._writer().loan(shapes)
            except RingFullError:
                self.stats['ring_full'] += 1
                raise
            if ring_loan is None:
                self.stats['dropped_all_pinned'] += 1
        if ring_loan is not None:
            return PublisherLoan(ring_loan.tensors, ring_loan, remote)
        import numpy as np
        return PublisherLoan({k: np.empty(shape, dtype) for k, (shape, dtype) in shapes.items()},
                             None, remote)

    def publish_loan(self, loan: 'PublisherLoan', kind: str, seq: int, version: int = 0,
                     stamp_ns: int = 0) -> None:
        """Publish a loan from ``loan()``: commit its slot (no copy) and hand it over."""
        if loan.done:
            raise TransportError('this loan was already published')
        loan.done = True
        if loan.ring is not None:
            desc = loan.ring.publish(kind, seq, version, stamp_ns)
            self._send_descriptor(desc, loan.remote, self.writer.ring)
            self.stats['loaned'] += 1
        tensors = loan.tensors
        plain = self.plain_readers()
        if loan.ring is not None and (plain > 0 or inproc.REGISTRY.count(self.key)):
            tensors = {k: v.copy() for k, v in tensors.items()}  # the slot is reused later
        batch = Batch(kind, int(seq), int(version), int(stamp_ns), inproc.freeze(tensors))
        self.stats['inproc'] += inproc.REGISTRY.publish(self.key, batch)
        if plain > 0:
            self.std_pub.publish(self.to_standard(batch))
            self.stats['serialised'] += 1

    def close(self) -> None:
        """Unlink the segments (also done at exit)."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        if self.device_writer is not None:
            self.device_writer.close()
            self.device_writer = None


class PublisherLoan:
    """Writable arrays from ``TensorPublisher.loan``; fill ``tensors``, then ``publish_loan``."""

    __slots__ = ('tensors', 'ring', 'remote', 'done')

    def __init__(self, tensors, ring, remote):
        self.tensors, self.ring, self.remote, self.done = tensors, ring, remote, False


class TensorSubscription:
    """Receive named arrays from TensorPublishers, in this process or others."""

    def __init__(self, node: Node, topic: str, callback: Callable[[Batch], None], *,
                 policy: str = 'latest', depth: int = 1, qos: QoSProfile | int = 10,
                 accept_standard: bool = True,
                 on_error: Callable[[Exception], None] | None = None,
                 wake: bool = True, deliver: str = 'executor', spin_us: float = 0.0,
                 prewake_us: float = 0.0):
        if deliver not in ('executor', 'thread'):
            raise ValueError(f"deliver must be 'executor' or 'thread', got `{deliver}`")
        if not 0.0 <= spin_us <= 1e6:
            raise ValueError(f'spin_us must be in [0, 1e6] µs, got {spin_us}')
        if not 0.0 <= prewake_us <= 1e6:
            raise ValueError(f'prewake_us must be in [0, 1e6] µs, got {prewake_us}')
        self.node = node
        # Futex wake-ups from mapped rings (see the module docstring); ``deliver`` says
        # which thread runs the callback for messages read that way.
        self.wake = bool(wake) and futex.available()
        self.deliver = deliver
        # Poll this long after each wake before sleeping on the futex again (a busy core
        # while spinning; 0 = never spin).
        self.spin_s = float(spin_us) * 1e-6
        # Periodic topics: wake this long before the next message is due (estimated from
        # the arrivals) and poll across the due time (0 = off; see pacing.py).
        self.prewake_s = float(prewake_us) * 1e-6
        self._lock = threading.Lock()   # one ring reader, two threads (wake, executor)
        self._watchers: dict[str, tuple] = {}
        self._closed = False
        # Resolve remapping once (-r /unilab/x:=/y): the in-process key, the ring and the
        # descriptor topic all follow the standard topic's final name.
        topic = node.resolve_topic_name(topic)
        self.topic = topic
        self.user_callback = callback
        self.on_error = on_error
        # (kind, seq, version, stamp) of messages delivered by one path and not yet
        # seen on the other: a publisher that serialises for a plain reader elsewhere
        # reaches us twice; the second copy is dropped once (a re-send is delivered).
        self._pending: collections.OrderedDict = collections.OrderedDict()
        self.std_sub = None
        if accept_standard:
            from unilab_interfaces.msg import TensorBatch as _TB
            self.std_sub = node.create_subscription(_TB, topic, self._on_standard, qos)
        self.key = (_domain(node), topic)
        # A restarted writer's old mapping is dropped inside _on_descriptor (lock held).
        self.reader = TensorReader(
            before_close=lambda name, ring: self._stop_watcher(name, holding_lock=True))
        self.stats = collections.Counter()
        self._last_error = ''
        self._scheduled = False
        self._pid = os.getpid()
        self.sub = node.create_subscription(TensorDescriptor, descriptor_topic(topic),
                                            self._on_descriptor, qos)
        self._context_ok = True
        node.context.on_shutdown(self._on_context_shutdown)  # held weakly by the context
        self._inproc = inproc.REGISTRY.subscribe(self.key, inproc.InprocSubscriber(
            self.callback_transport, depth, policy, notify=self._notify, alive=self._alive))
        _register(node, self)

    def _deliver(self, batch: Batch, path: str) -> None:
        key = (batch.kind, batch.seq, batch.version, batch.stamp_ns)
        other = self._pending.pop(key, None)
        if other is not None and other != path:
            self.stats['duplicates_dropped'] += 1
            return
        self._pending[key] = path
        while len(self._pending) > 64:
            self._pending.popitem(last=False)
        self.user_callback(batch)

    def callback_transport(self, batch: Batch) -> None:
        """Deliver a batch that came through the transport (in-process or ring)."""
        self._deliver(batch, 'transport')

    def callback(self, batch: Batch) -> None:
        """Deliver a batch (kept for callers of the earlier API)."""
        self.callback_transport(batch)

    def _on_standard(self, msg) -> None:
        try:
            batch = read_batch(msg)
        except TensorMessageError as exc:
            self.stats['error_message'] += 1
            if self.on_error is not None:
                self.on_error(exc)
            else:
                self.node.get_logger().error(f'{self.topic}: dropped message: {exc}',
                                             throttle_duration_sec=1.0)
            return
        self.stats['standard'] += 1
        self._deliver(batch, 'standard')

    def _alive(self) -> bool:
        # destroy_node() empties node.subscriptions; a shut-down context delivers nothing
        # (a flag set by the context's shutdown callback: context.ok() takes two locks,
        # and this runs on every in-process publish).
        return self._context_ok and self.sub in self.node.subscriptions

    def _on_context_shutdown(self) -> None:
        self._context_ok = False

    def _notify(self) -> None:
        # Run the callbacks later on our node's executor, like a subscription callback
        # (a task, not a guard condition: rclpy's EventsExecutor supports no guard
        # conditions). Without an executor yet, deliver at once; with deliver='thread',
        # on the publishing thread inside publish() (no executor wake-up).
        if self.deliver == 'thread':
            self.stats['inproc_inline'] += 1
            self._drain()
            return
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

    def _bad(self, exc: DescriptorError, what: str) -> None:
        self.stats[f'error_{exc.kind}'] += 1
        self._last_error = f'{exc.kind}: {exc}'
        self.node.get_logger().error(f'{self.topic}: dropped {what} ({exc.kind}): {exc}',
                                     throttle_duration_sec=1.0)

    def _hand_over(self, got: Received, path: str) -> None:
        try:
            d = got.descriptor
            self.stats[path] += 1
            self.callback_transport(Batch(d.kind, d.seq, d.version, d.stamp_ns, got.tensors))
        finally:
            if not got.release():
                self.stats['torn_after_use'] += 1

    def _on_descriptor(self, msg: TensorDescriptor) -> None:
        if msg.writer_pid == self._pid:
            return  # published in this process: already handed over in-process
        with self._lock:
            if self._closed:
                return
            try:
                desc = from_msg(msg)
                if self.reader.already_taken(desc):
                    self.stats['descriptor_after_wake'] += 1  # read on a futex wake-up
                    return
                got = self.reader.receive(desc)
            except DescriptorError as exc:
                self._bad(exc, 'descriptor')
                return
            try:
                self._hand_over(got, 'shm')
            finally:
                self._start_watcher(desc.segment)

    # -- futex wake-ups ------------------------------------------------------------------
    def _start_watcher(self, name: str) -> None:
        ring = self.reader.readers.get(name)
        if (not self.wake or name in self._watchers or ring is None or ring.row is None
                or not ring.self_describing):
            return
        ring.set_wake_mode(True)
        stop = threading.Event()
        th = threading.Thread(target=self._watch, args=(name, ring, stop), daemon=True,
                              name=f'unilab_wake{self.topic}')
        self._watchers[name] = (ring, stop, th)
        th.start()

    def _stop_watcher(self, name: str, holding_lock: bool = False) -> None:
        entry = self._watchers.pop(name, None)
        if entry is None:
            return
        ring, stop, th = entry
        stop.set()
        ring.interrupt()
        if th is not threading.current_thread():
            # The wake thread may be waiting for the lock we hold: let it see `stop`.
            if holding_lock:
                self._lock.release()
            try:
                th.join(2.0)
            finally:
                if holding_lock:
                    self._lock.acquire()

    def _await(self, ring, clock: ArrivalClock | None) -> bool:
        """Wait for news on ``ring``: futex, poll after a message, or poll ahead of the next."""
        if clock is None:
            return ring.wait(WAKE_TIMEOUT_S, self.spin_s)
        sleep = clock.sleep_before_poll(time.monotonic(), self.prewake_s)
        if sleep is None:
            got = ring.wait(WAKE_TIMEOUT_S, self.spin_s)
        elif sleep > 0.0 and ring.wait(sleep):
            got = True  # earlier than due: woken on the futex
        else:
            # Poll from prewake before the due time to prewake after it (or spin_us when
            # longer), then sleep on the futex again.
            window = max(self.spin_s, 2.0 * self.prewake_s)
            t0 = time.monotonic()
            got = ring.wait(WAKE_TIMEOUT_S, window)
            if got and time.monotonic() - t0 <= window:
                self.stats['prewake_polled'] += 1  # caught while polling, no wake-up
        if got:
            clock.observe(time.monotonic())
        return got

    def _watch(self, name: str, ring, stop: threading.Event) -> None:
        # Sleep on the ring's futex word; on news, read in this thread (deliver='thread')
        # or let the executor read (one task at a time: the ring reader holds one pin).
        done = threading.Event()
        clock = ArrivalClock() if self.prewake_s > 0.0 else None
        while not stop.is_set():
            try:
                if not self._await(ring, clock) or stop.is_set():
                    continue
            except (AttributeError, TypeError):
                return  # unmapped under us (closing)
            if self.deliver == 'thread':
                self._drain_woken(name, ring)
                continue
            ex = self.node.executor
            if ex is None or not self._alive():
                stop.wait(0.05)
                continue
            done.clear()
            ex.create_task(self._drain_woken, name, ring, done)
            while not done.wait(0.1):
                if stop.is_set():
                    return

    def _drain_woken(self, name: str, ring, done: threading.Event | None = None) -> None:
        try:
            for _ in range(ring.n_slots):  # bounded: a reliable backlog drains over tasks
                with self._lock:
                    if self._closed or self.reader.readers.get(name) is not ring:
                        return
                    try:
                        got = self.reader.read_woken(name)
                    except DescriptorError as exc:
                        self._bad(exc, 'message')
                        continue
                    except TransportError as exc:
                        self.stats['wake_retry'] += 1
                        self._last_error = f'wake: {exc}'
                        return
                    if got is None:
                        return
                    self._hand_over(got, 'shm_wake')
        finally:
            if done is not None:
                done.set()

    def counters(self) -> dict[str, int]:
        """Return the delivery and error counters, with the skips of each path."""
        out = dict(self.stats)
        out['inproc_skipped'] = self._inproc.stats.skipped
        out['wake_threads'] = len(self._watchers)
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
        """Stop in-process delivery and the wake threads, unmap segments."""
        inproc.REGISTRY.unsubscribe(self.key, self._inproc)
        if self.std_sub is not None:
            self.node.destroy_subscription(self.std_sub)
            self.std_sub = None
        for name in list(self._watchers):
            self._stop_watcher(name)
        with self._lock:
            self._closed = True
            self.reader.close()


def batch_capacity(shapes: dict[str, tuple[int, ...]], itemsize: int = 4) -> int:
    """Return ring-slot bytes for tensors of these shapes (64 B alignment plus headroom)."""
    total = 0
    for shape in shapes.values():
        n = itemsize
        for s in shape:
            n *= int(s)
        total += -(-n // 64) * 64
    return total + 4096


def now_ns() -> int:
    """Return CLOCK_MONOTONIC in ns (what ``publish_ns`` in descriptors uses)."""
    return time.monotonic_ns()


__all__ = ['TensorPublisher', 'TensorSubscription', 'descriptor_topic', 'from_msg', 'to_msg',
           'now_ns']
