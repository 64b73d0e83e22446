# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The publishing end of a tensor topic: in-process hand-off, shared-memory ring, plain ROS.

``TensorPublisher.publish(kind, seq, tensors, ...)`` takes what ``make_batch``
takes. Per publish:

* in-process subscribers get the very same (read-only) arrays through the
  in-process registry;
* if a subscriber outside this process listens on the descriptor topic, the
  payload goes into the shared-memory ring (``transport.channel``) and a
  ``TensorDescriptor`` (a few hundred bytes) is published there;
* if anything subscribes to ``<topic>`` itself (``ros2 topic echo``, a bag
  recorder, a node that is not UniLab-aware), the standard message
  (``TensorBatch`` by default, or e.g. ``PointCloud2`` through ``to_standard``)
  is built and published there; otherwise nothing is serialised.

Cross-process backend (``transport.backend``): the ring (``ring``, our
seqlock ring with futex wake-ups) or ``iceoryx2`` (``transport.iox_writer``:
one iceoryx2 service per topic, loaned samples, the library's events);
``backend=None`` takes the process's setting. The descriptor names the ring
segment or the iceoryx2 service, and subscriptions follow it.

Readers that sleep on the ring's futex (``TensorSubscription``'s wake
threads) read new messages straight from the ring, so the publisher sends a
descriptor only while some remote descriptor subscriber does not read on
wake-ups, for latched topics, and at least every ``DESCRIPTOR_HEARTBEAT_S``
otherwise.

Readers that cannot share memory with the writer (another host, a container
with its own ``/dev/shm`` or pid namespace: ``transport.shm.host_identity``)
never map the ring, so they never register in it. Whenever the descriptor
topic has more remote readers than the ring has registered readers, the
standard ``TensorBatch`` is published on ``<topic>`` as well (UniLab
subscriptions listen there too, and drop a message that reaches them twice),
counted in ``serialised_unmapped``; a reader that joins on this host is served
that way only until it has mapped the ring (its first descriptor). Unmapped
readers that stay longer than ``UNMAPPED_LOG_S`` are logged once. See "Across
hosts" in docs/transport.md.

CUDA tensors (torch, ``is_cuda``) take the same calls: in-process readers get
the tensor itself; for readers in other processes the payload goes into a
device ring (``transport.cuda.CudaTensorWriter``: one CUDA allocation shared
by IPC handle, an interprocess event per slot) and the descriptor names the
device; plain ROS readers get a host copy. A batch must not mix host and
device tensors.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from unilab_core.ros.tensor_msg import Batch, make_batch, read_batch
from unilab_core.ros.tensor_topic.descriptor_msg import descriptor_topic, to_msg
from unilab_core.ros.tensor_topic.endpoints import node_domain, register_endpoint
from unilab_core.transport import inproc
from unilab_core.transport.backend import check as check_backend, default_backend
from unilab_core.transport.channel import TensorWriter
from unilab_core.transport.cuda import CudaTensorWriter
from unilab_core.transport.descriptor import ALIGN, Descriptor
from unilab_core.transport.ring_layout import RingFullError, TransportError
from unilab_core.transport.shm import host_identity
from unilab_interfaces.msg import TensorBatch, TensorDescriptor

#: a publisher whose remote readers all read on futex wake-ups still sends a descriptor
#: this often (discovery for a reader that joined while another one died unnoticed)
DESCRIPTOR_HEARTBEAT_S = 0.5
#: remote readers still unmapped after this long are reported (once per publisher): by then a
#: reader on this host has mapped the ring, so they are on another host or /dev/shm
UNMAPPED_LOG_S = 2.0
#: seconds between two graph queries while the graph's subscriptions and the match counts
#: disagree (DDS matches a reader before the ROS graph lists it, or lists one it cannot
#: match)
PLAIN_RETRY_S = 0.2


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
    return CudaTensorWriter(*args, **kwargs)


#: how a publisher creates its device ring (the CUDA IPC writer; one switch, tests replace
#: it where no GPU exists)
DEVICE_WRITER = _device_writer_factory
#: device rings get their own segment name next to the host ring of the same topic: the
#: node part starts with this, so the two names differ near their start and stay distinct
#: when a long node + topic name is truncated to the segment name limit
DEVICE_SEGMENT_PREFIX = 'cuda_'


def _default_standard(batch: Batch) -> TensorBatch:
    return make_batch(batch.kind, batch.seq, batch.tensors, batch.version, batch.stamp_ns)


class TensorPublisher:
    """Publish named arrays through the transport (in-process, shared memory, plain ROS)."""

    def __init__(self, node: Node, topic: str, capacity: int, *, policy: str = 'latest',
                 slots: int = 4, qos: QoSProfile | int = 10, timeout_s: float = 1.0,
                 standard_type=TensorBatch,
                 to_standard: Callable[[Batch], Any] | None = None, latched: bool = False,
                 backend: str | None = None):
        self.node = node
        self.backend = default_backend() if backend is None else check_backend(backend)
        # Latched (transient-local) topics such as weights: write the ring and the
        # descriptor even with no reader yet, so a late joiner gets the last message.
        self.latched = latched
        # Resolve remapping once (-r /unilab/x:=/y): the in-process key, the ring and the
        # descriptor topic all follow the standard topic's final name.
        topic = node.resolve_topic_name(topic)
        self.topic = topic
        self.capacity = int(capacity)
        self.policy, self.slots, self.timeout_s = policy, int(slots), float(timeout_s)
        self.domain = node_domain(node)
        self.key = (self.domain, topic)
        self.desc_pub = node.create_publisher(TensorDescriptor, descriptor_topic(topic), qos)
        self.std_pub = node.create_publisher(standard_type, topic, qos)
        self.to_standard = to_standard or _default_standard
        self.writer = None  # TensorWriter or IoxTensorWriter, created on the first remote write
        self.device_writer = None  # CudaTensorWriter, created on the first CUDA publish
        self.stats = collections.Counter()
        register_endpoint(node, self)
        self._plain_key: tuple[int, int] | None = None
        self._plain = 0
        self._plain_retry_at: float | None = None   # set while the graph lags the counts
        self._last_desc = 0.0
        self._unmapped_since: float | None = None
        self._unmapped_logged = False
        self._lock = threading.Lock()

    def prepare(self) -> None:
        """
        Create the shared-memory writer now rather than at the first remote write.

        For a node whose first messages must not wait for a large segment to be made
        (a camera at frame rate): that write would hold the node's executor meanwhile.
        """
        with self._lock:
            self._writer()

    def _writer(self):
        if self.writer is None:
            if self.backend == 'iceoryx2':
                from unilab_core.transport.iox_writer import IoxTensorWriter
                self.writer = IoxTensorWriter(
                    self.topic, self.capacity, self.slots, self.policy, self.timeout_s,
                    domain=self.domain, on_stall=self._on_stall, latched=self.latched)
            else:
                self.writer = TensorWriter(
                    self.node.get_fully_qualified_name(), self.topic, self.capacity,
                    self.slots, self.policy, self.timeout_s, domain=self.domain,
                    on_stall=self._on_stall)
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
        retry = self._plain_retry_at is not None and time.monotonic() >= self._plain_retry_at
        if key != self._plain_key or retry:
            def names(topic):
                return [(i.node_namespace, i.node_name)
                        for i in self.node.get_subscriptions_info_by_topic(topic)]
            # Per node: each TensorSubscription holds one descriptor and one standard
            # subscription, so standard subscriptions beyond a node's descriptor
            # subscriptions are plain readers.
            aware = collections.Counter(names(descriptor_topic(self.topic)))
            std = collections.Counter(names(self.topic))
            by_node = sum(max(0, n - aware[node]) for node, n in std.items())
            # A reader DDS has matched may not be in the ROS graph yet: the standard
            # readers beyond every descriptor reader are plain whatever the graph says,
            # and the graph is asked again until it agrees with the counts (a recorder
            # that matched first used to get nothing until a count changed).
            self._plain = max(by_node, n_std - n_desc)
            self._plain_key = key
            agrees = sum(std.values()) == n_std and sum(aware.values()) == n_desc
            self._plain_retry_at = None if agrees else time.monotonic() + PLAIN_RETRY_S
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
        unmapped = 0
        if self.latched or remote > 0:
            if on_device is not None:
                writer = self._device_writer(on_device)
                desc = writer.write(kind, seq, tensors, version, stamp_ns)
                self.stats['device'] += 1
                # Device rings carry no slot layout, so no reader of theirs sleeps on the
                # futex: a descriptor always goes.
                self._send_descriptor(desc, remote, 0)
            else:
                try:
                    desc = self._writer().write(kind, seq, tensors, version, stamp_ns)
                except RingFullError:
                    self.stats['ring_full'] += 1
                    raise
                self._send_descriptor(desc, remote, self.writer.wake_reader_count())
                unmapped = self._unmapped(remote)
        plain = self.plain_readers(n_desc)
        # A latched topic (weights) also keeps its last message serialised on the standard
        # topic: a reader on another host that joins later gets it from DDS's history, as
        # it cannot map the ring the latched descriptor names.
        if plain > 0 or unmapped > 0 or self.latched:
            as_is = msg is not None and self.to_standard is _default_standard
            self.std_pub.publish(msg if as_is else self.to_standard(batch))
            self._count_serialised(plain, unmapped)

    def _unmapped(self, remote: int) -> int:
        """Return how many remote readers have not mapped the ring (log them once if they stay)."""
        unmapped = max(0, remote - self.writer.mapped_reader_count())
        if unmapped == 0:
            self._unmapped_since = None
            if self.stats.get('unmapped_readers'):
                self.stats['unmapped_readers'] = 0  # the gauge: every reader mapped again
            return 0
        now = time.monotonic()
        if self._unmapped_since is None:
            self._unmapped_since = now
        elif not self._unmapped_logged and now - self._unmapped_since > UNMAPPED_LOG_S:
            self._unmapped_logged = True
            self.node.get_logger().warning(
                f'{self.topic}: {unmapped} reader(s) cannot map the shared memory of this '
                f'writer (another host, or a container with its own /dev/shm or pid '
                f'namespace; this process is {host_identity()}): serving them the serialised '
                f'{self.std_pub.msg_type.__name__} on {self.topic} (counter '
                f'serialised_unmapped)')
        return unmapped

    def _count_serialised(self, plain: int, unmapped: int) -> None:
        # One count per message sent: for readers that cannot map the ring (whether or not
        # plain readers get it too), else for plain readers.
        if unmapped > 0:
            self.stats['serialised_unmapped'] += 1
            self.stats['unmapped_readers'] = unmapped  # the last count seen (a gauge)
        elif plain > 0:
            self.stats['serialised'] += 1
        else:
            self.stats['serialised_latched'] += 1

    def _device_writer(self, device):
        """Return the device ring of this topic (created on the first CUDA publish)."""
        if self.device_writer is None:
            self.device_writer = DEVICE_WRITER(
                DEVICE_SEGMENT_PREFIX + self.node.get_fully_qualified_name(), self.topic,
                self.capacity, self.slots, self.policy, self.timeout_s, device=device,
                domain=self.domain)
            for name in getattr(self.device_writer, 'reclaimed', []):
                self.node.get_logger().warning(f'reclaimed stale shared-memory segment {name}')
        return self.device_writer

    def _send_descriptor(self, desc: Descriptor | None, remote: int, woken: int) -> None:
        if desc is None:
            self.stats['dropped_all_pinned'] += 1
            return
        # Readers that sleep on the ring's futex (or the iceoryx2 service's event) already
        # have the message; a descriptor is needed by readers that have not mapped the
        # segment or subscribed to the service yet (or do not wake).
        now = time.monotonic()
        if (self.latched or remote > woken
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
        return PublisherLoan({k: np.empty(shape, dtype) for k, (shape, dtype) in shapes.items()},
                             None, remote)

    def publish_loan(self, loan: 'PublisherLoan', kind: str, seq: int, version: int = 0,
                     stamp_ns: int = 0) -> None:
        """Publish a loan from ``loan()``: commit its slot (no copy) and hand it over."""
        if loan.done:
            raise TransportError('this loan was already published')
        loan.done = True
        unmapped = 0
        if loan.ring is not None:
            desc = loan.ring.publish(kind, seq, version, stamp_ns)
            self._send_descriptor(desc, loan.remote, self.writer.wake_reader_count())
            self.stats['loaned'] += 1
            unmapped = self._unmapped(loan.remote)
        tensors = loan.tensors
        plain = self.plain_readers()
        serialise = plain > 0 or unmapped > 0
        if loan.ring is not None and (serialise or inproc.REGISTRY.count(self.key)):
            tensors = {k: v.copy() for k, v in tensors.items()}  # the slot is reused later
        batch = Batch(kind, int(seq), int(version), int(stamp_ns), inproc.freeze(tensors))
        self.stats['inproc'] += inproc.REGISTRY.publish(self.key, batch)
        if serialise:
            self.std_pub.publish(self.to_standard(batch))
            self._count_serialised(plain, unmapped)

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


def batch_capacity(shapes: dict[str, tuple[int, ...]], itemsize: int = 4) -> int:
    """Return ring-slot bytes for tensors of these shapes (``ALIGN`` B alignment plus headroom)."""
    total = 0
    for shape in shapes.values():
        n = itemsize
        for s in shape:
            n *= int(s)
        total += -(-n // ALIGN) * ALIGN
    return total + 4096
