# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The receiving end of a tensor topic: in-process, shared-memory ring, plain ROS, one callback.

``TensorSubscription`` calls back with the ``Batch`` that ``read_batch``
returns, whichever way the message came: from a publisher in this process
(the very same arrays), from a ring in another process (read-only views,
valid only inside the callback: the slot is given back when it returns, so
copy what you keep: ``arr.copy()``, ``tensor.copy_``), or as a standard
``TensorBatch`` from a plain ROS publisher. A message that reaches one
subscription by two paths is delivered once.

UniLab subscriptions listen on the descriptor topic, so the publisher's
descriptor-topic count minus its in-process subscribers is the number of
transport-aware readers in other processes. A device descriptor opens the
ring through CUDA IPC (``transport.cuda.CudaTensorReader``) and calls back
with CUDA views; a process without CUDA drops it with the error kind
``no_cuda``.

Wake-up without DDS: once a subscription has mapped a writer's segment (on
its first descriptor), a ``transport.waiter.RingWaiter`` sleeps on the
ring's futex word and the subscription reads new messages straight from the
ring; the layout travels in the slot header. By default the callback still
runs on the node's executor (the waiter's thread only schedules it:
``deliver='executor'``); ``deliver='thread'`` runs it on the waiter's thread
itself, one thread hop less, for callbacks that are thread-safe. In-process,
``deliver='thread'`` runs the callback on the publishing thread, inside
``publish()`` (a callback must then not publish on the topic it receives).
``deliver='inline'`` does that in-process only: ring messages still run on the
executor. It is for the control chain of a composed graph (observation ->
action -> command in one executor call, no executor round per hop): the
publisher is then itself a callback of the same executor, so nothing runs
concurrently with the node's other callbacks.
A descriptor that names an iceoryx2 service (the publisher's backend is
``iceoryx2``, ``transport.backend``) subscribes to that service instead of
mapping a ring; its waiter sleeps on the service's event listener and the
messages are read the same way (``TensorReader.read_woken``).
A descriptor whose ``host_id`` differs from this process's
(``transport.shm.host_identity``: another host, ``/dev/shm`` or pid
namespace) is never opened: it is counted (``foreign_host``) and logged once
per writer, and the message arrives as the standard message on ``<topic>``
(the publisher serialises while a remote reader has not mapped its ring).
``spin_us`` and ``prewake_us`` are the waiter's ``spin_s`` and ``prewake_s``
(busy polling after a message, and ahead of the next one on periodic topics).
"""

from __future__ import annotations

import collections
import os
import threading
from typing import Callable

from rclpy.node import Node
from rclpy.qos import QoSProfile
from unilab_core.ros.tensor_msg import Batch, read_batch, TensorMessageError
from unilab_core.ros.tensor_topic.descriptor_msg import descriptor_topic, from_msg
from unilab_core.ros.tensor_topic.endpoints import node_domain, register_endpoint
from unilab_core.transport import futex, inproc
from unilab_core.transport.channel import TensorReader
from unilab_core.transport.descriptor import DescriptorError
from unilab_core.transport.received import Received
from unilab_core.transport.ring_layout import TransportError
from unilab_core.transport.ring_reader import RingReader
from unilab_core.transport.shm import host_identity
from unilab_core.transport.waiter import RingWaiter
from unilab_interfaces.msg import TensorBatch, TensorDescriptor

#: Which thread runs the callback (see the module docstring).
DELIVER = ('executor', 'thread', 'inline')


class TensorSubscription:
    """Receive named arrays from TensorPublishers, in this process or others."""

    def __init__(self, node: Node, topic: str, callback: Callable[[Batch], None], *,
                 policy: str = 'latest', depth: int = 1, qos: QoSProfile | int = 10,
                 accept_standard: bool = True, standard_type=TensorBatch,
                 from_standard: Callable[[object], Batch] | None = None,
                 on_error: Callable[[Exception], None] | None = None,
                 wake: bool = True, deliver: str = 'executor', spin_us: float = 0.0,
                 prewake_us: float = 0.0):
        if deliver not in DELIVER:
            raise ValueError(f'deliver must be one of {", ".join(DELIVER)}, got `{deliver}`')
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
        # the arrivals) and poll across the due time (0 = off; see transport/waiter.py).
        self.prewake_s = float(prewake_us) * 1e-6
        self._lock = threading.Lock()   # one ring reader, two threads (wake, executor)
        self._watchers: dict[str, RingWaiter] = {}
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
        # The standard message on ``<topic>`` itself: a TensorBatch, or e.g. a JointState
        # turned into a Batch by ``from_standard`` (it may raise TensorMessageError).
        self.from_standard = from_standard or read_batch
        if accept_standard:
            self.std_sub = node.create_subscription(standard_type, topic, self._on_standard,
                                                    qos)
        self.key = (node_domain(node), topic)
        # A restarted writer's old mapping is dropped inside _on_descriptor (lock held).
        self.reader = TensorReader(
            before_close=lambda name, ring: self._stop_watcher(name, holding_lock=True))
        self.stats = collections.Counter()
        self._last_error = ''
        self._scheduled = False
        self._pid = os.getpid()
        self._host = host_identity()
        self._foreign_seen: set[str] = set()
        self.sub = node.create_subscription(TensorDescriptor, descriptor_topic(topic),
                                            self._on_descriptor, qos)
        self._context_ok = True
        node.context.on_shutdown(self._on_context_shutdown)  # held weakly by the context
        self._inproc = inproc.REGISTRY.subscribe(self.key, inproc.InprocSubscriber(
            self.callback_transport, depth, policy, notify=self._notify, alive=self._alive))
        register_endpoint(node, self)

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

    def _on_standard(self, msg) -> None:
        try:
            batch = self.from_standard(msg)
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
        # conditions). Without an executor yet, deliver at once; with deliver='thread' or
        # 'inline', on the publishing thread inside publish() (no executor wake-up).
        if self.deliver != 'executor':
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
        if msg.host_id and msg.host_id != self._host:
            self._foreign(msg)
            return
        if msg.writer_pid == self._pid:
            return  # published in this process: already handed over in-process
        with self._lock:
            if self._closed:
                return
            try:
                desc = from_msg(msg)
                if self.reader.is_iox(desc):
                    ring = self.reader.attach(desc)
                    self._start_watcher(desc.segment)
                else:
                    if self.reader.already_taken(desc):
                        self.stats['descriptor_after_wake'] += 1  # read on a futex wake-up
                        return
                    got = self.reader.receive(desc)
            except DescriptorError as exc:
                self._bad(exc, 'descriptor')
                return
            if not self.reader.is_iox(desc):
                try:
                    self._hand_over(got, 'shm')
                finally:
                    self._start_watcher(desc.segment)
                return
        # iceoryx2: the descriptor only says where; the message itself travels through the
        # service (already there, or handed over with the writer's history).
        if self.reader.already_taken(desc):
            self.stats['descriptor_after_wake'] += 1
        else:
            self._drain_woken(desc.segment, ring)

    def _foreign(self, msg: TensorDescriptor) -> None:
        """Count (and log once per writer) a descriptor of a segment this process cannot map."""
        self.stats['foreign_host'] += 1
        if msg.host_id in self._foreign_seen:
            return
        self._foreign_seen.add(msg.host_id)
        how = (f'it serves this reader the serialised message on {self.topic}'
               if self.std_sub is not None else
               'this subscription does not accept standard messages (accept_standard=False), '
               'so it receives nothing from that writer')
        self.node.get_logger().warning(
            f'{self.topic}: the writer of `{msg.segment}` cannot share memory with this '
            f'process (writer {msg.host_id}, here {self._host}: another host, /dev/shm or '
            f'pid namespace); not mapping its segment: {how}')

    # -- futex wake-ups ------------------------------------------------------------------
    def _start_watcher(self, name: str) -> None:
        ring = self.reader.readers.get(name)
        if name in self._watchers or ring is None:
            return
        if isinstance(ring, RingReader):
            if not self.wake or ring.row is None or not ring.self_describing:
                return
            ring.set_wake_mode(True)
        # else an iceoryx2 reader: its event listener is the only path after the first
        # descriptor (the publisher counts it as woken), so it always gets a waiter
        waiter = RingWaiter(ring, spin_s=self.spin_s, prewake_s=self.prewake_s,
                            name=f'unilab_wake{self.topic}', stats=self.stats)
        self._watchers[name] = waiter
        if self.deliver == 'thread':
            waiter.start(lambda: self._drain_woken(name, ring))
        else:
            done = threading.Event()
            waiter.start(lambda: self._schedule_woken(name, ring, waiter, done))

    def _stop_watcher(self, name: str, holding_lock: bool = False) -> None:
        waiter = self._watchers.pop(name, None)
        if waiter is None:
            return
        waiter.stop()
        if waiter.on_own_thread():
            return
        # The wake thread may be waiting for the lock we hold: let it see the stop.
        if holding_lock:
            self._lock.release()
        try:
            waiter.join(2.0)
        finally:
            if holding_lock:
                self._lock.acquire()

    def _schedule_woken(self, name: str, ring, waiter: RingWaiter,
                        done: threading.Event) -> None:
        # On the waiter's thread: let the executor read (one task at a time: the ring
        # reader holds one pin) and wait until it has.
        ex = self.node.executor
        if ex is None or not self._alive():
            waiter.pause(0.05)
            return
        done.clear()
        ex.create_task(self._drain_woken, name, ring, done)
        while not done.wait(0.1):
            if waiter.stopping():
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
