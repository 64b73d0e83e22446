# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Named tensors into an iceoryx2 service: loaned samples, events, ``latest`` / ``reliable``.

``IoxTensorWriter`` has the interface of ``channel.TensorWriter`` (``write``,
``loan`` -> ``publish``, ``close``, ``reclaimed``) and returns the same
``Descriptor``, whose segment names the service (``iox2:<service>``), so
the ROS edge treats both backends alike. What the library does here that
the ring does by hand: the payload is a loaned sample (``loan_slice_uninit``)
in a segment of the library's, a sample a reader still holds is never
reused (reference counts instead of seqlock and pins), readers sleep on the
library's event listener, and dead nodes are found and cleaned up by the
library's node monitoring.

Delivery policies, mapped onto the service's settings:

* ``latest``: each subscriber buffers 1 sample with safe overflow (the
  newest replaces an unread one: counted as a skip by the reader), history
  1; the writer never waits.
* history: 1 for ``latest`` and latched topics (a late reader of the
  weights gets the newest version only), ``slots`` for other ``reliable``
  topics (a reader that subscribed after its first descriptor still gets
  the messages since).
* ``reliable``: buffers of ``2 * slots`` without overflow and the
  ``DiscardData`` backpressure strategy at the library level, plus a window
  of ``slots`` messages enforced here: each reader publishes the index of
  the next message it needs on ``<svc>/ack`` and notifies ``<svc>/ctl``;
  the writer waits (GIL released, in the library's listener) while a live
  reader is ``slots`` behind, reaps readers whose node died, and raises
  ``RingFullError`` after ``timeout_s``. Why not the library's own
  ``RetryUntilDelivered``: in the Python binding its ``send`` spins with the
  GIL held, has no timeout and does not return when the reader is SIGKILLed
  (the Rust API's backpressure handler, which would bound it, is not
  exposed). The window is half the buffer, so the one race (a reader that
  subscribed before its registration reached the writer) cannot overflow
  it; a message the library discards anyway is counted (``discarded``).

Latched topics (weights) keep history; a reader notifies ``EVENT_CONNECTED``
after subscribing and a thread of the writer's then calls
``update_connections`` so the reader gets the last message at once.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from typing import Callable

import numpy as np
from unilab_core.transport import iox_service as svc
from unilab_core.transport import shm
from unilab_core.transport.channel import write_through_loan
from unilab_core.transport.descriptor import Descriptor, layout_shapes, TensorSpec
from unilab_core.transport.iox_layout import (ACK_GONE, ACK_REGISTER, byte_view,
                                              DESCRIPTOR_PREFIX, EVENT_CONNECTED, EVENT_DATA,
                                              layout_bytes, service_name, write_header)
from unilab_core.transport.ring_layout import POLICIES, RingFullError, TransportError

#: readers (subscriptions in other processes) one topic serves; sizes the library's pool
MAX_READERS = 8
#: writers of one topic (a restarted writer briefly overlaps its dead predecessor)
MAX_WRITERS = 4
#: samples a reader may hold at once (the one its callback runs on, plus one)
BORROWED = 2


@dataclasses.dataclass
class IoxWriterStats:
    """Counters of one writer (names as for ``ring_writer.WriterStats``)."""

    writes: int = 0
    dropped_all_pinned: int = 0  # no free sample in the library's pool (should not happen)
    stalls: int = 0              # reliable: writes that had to wait for a reader
    stall_s: float = 0.0
    timeouts: int = 0
    readers_reaped: int = 0      # reliable readers whose node died
    discarded: int = 0           # samples the library did not deliver to every subscriber


class IoxTensorWriter:
    """Write named numpy arrays into one iceoryx2 service (one per topic and ROS domain)."""

    def __init__(self, topic: str, capacity: int, n_slots: int = 4, policy: str = 'latest',
                 timeout_s: float = 1.0, domain: int | None = None,
                 on_stall: Callable[[float], None] | None = None, latched: bool = False):
        if policy not in POLICIES:
            raise ValueError(f'policy must be one of {sorted(POLICIES)}, got `{policy}`')
        if not 2 <= n_slots <= 256:
            raise ValueError(f'a topic has 2..256 slots, got {n_slots}')
        if capacity <= 0:
            raise ValueError('slot capacity must be positive')
        i = svc.iox()
        domain = shm.ros_domain() if domain is None else domain
        self.policy, self.n_slots, self.capacity = policy, int(n_slots), int(capacity)
        self.timeout_s, self.on_stall = float(timeout_s), on_stall
        self.stats = IoxWriterStats()
        self.reclaimed = svc.reclaim_dead_nodes()
        self.service_name = service_name(domain, topic)
        self.name = DESCRIPTOR_PREFIX + self.service_name
        reliable = policy == 'reliable'
        self.service = svc.pubsub(self.service_name, create={
            'max_publishers': MAX_WRITERS, 'max_subscribers': MAX_READERS,
            'buffer': 2 * self.n_slots if reliable else 1,
            # A late reader of a latched topic (weights) gets the newest message only;
            # a reliable stream keeps the window for readers that subscribe mid-stream.
            'history': self.n_slots if reliable and not latched else 1,
            'safe_overflow': not reliable, 'borrowed': BORROWED})
        have = self.service.static_config
        if have.has_safe_overflow == reliable:
            raise TransportError(f'iceoryx2 service `{self.service_name}` exists as '
                                 f'{"latest" if reliable else "reliable"}; this writer wants '
                                 f'{policy}: one policy per topic')
        self.pub = (self.service.publisher_builder().initial_max_slice_len(self.capacity)
                    .allocation_strategy(i.AllocationStrategy.Static)
                    .backpressure_strategy(i.BackpressureStrategy.DiscardData)
                    .max_loaned_samples(1).create())
        self.notifier = svc.event_service(self.service_name, 'data').notifier_builder().create()
        self._data_id = svc.event_id(EVENT_DATA)
        self.head = 0  # index of the next message
        self.pid = os.getpid()
        self.boot_id = shm.boot_id()
        self._lock = threading.Lock()  # the publisher is shared with the latched thread
        self._loaned = False
        self._layouts: dict = {}
        # reliable: reader id -> (next index it needs, its node id)
        self.cursors: dict[int, tuple[int, int]] = {}
        self._reaped_at = -1.0
        self._acks = self._ctl = None
        if reliable:
            self._acks = svc.ack_service(self.service_name, MAX_READERS).subscriber_builder() \
                .create()
            self._ctl = svc.event_service(self.service_name, 'ctl').listener_builder().create()
        self._stop = threading.Event()
        self._thread = None
        if latched:
            listener = svc.event_service(self.service_name, 'ctl').listener_builder().create()
            self._thread = threading.Thread(target=self._hand_history, args=(listener,),
                                            daemon=True, name=f'unilab_latch{topic}')
            self._thread.start()

    # -- readers -------------------------------------------------------------------------
    def wake_reader_count(self) -> int:
        """Return the number of subscribers connected to the service (they need no descriptor)."""
        return int(self.service.dynamic_config.number_of_subscribers)

    def mapped_reader_count(self) -> int:
        """Return the number of readers that reach the payloads (subscribed to the service)."""
        return self.wake_reader_count()

    def reader_count(self) -> int:
        """Return the number of registered reliable readers (0 for ``latest``)."""
        self._drain_acks()
        return len(self.cursors)

    def wait_for_readers(self, count: int, timeout_s: float) -> bool:
        """Wait until ``count`` readers are registered (reliable) or subscribed (latest)."""
        deadline = time.monotonic() + timeout_s
        have = self.reader_count if self.policy == 'reliable' else self.wake_reader_count
        while have() < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True

    def _drain_acks(self) -> None:
        if self._acks is None:
            return
        while True:
            s = self._acks.receive()
            if s is None:
                return
            a = s.payload().contents
            node = s.header.node_id.value
            reader, nxt = int(a.reader), int(a.next_index)
            s.delete()
            if nxt == ACK_GONE:
                self.cursors.pop(reader, None)
            elif nxt == ACK_REGISTER:
                # Subscribed just now: it gets the messages from the next one on.
                old = self.cursors.get(reader)
                self.cursors[reader] = (self.head if old is None else old[0], node)
            else:
                old = self.cursors.get(reader, (0, node))[0]
                self.cursors[reader] = (max(old, nxt), node)

    def reap_dead_readers(self) -> int:
        """Forget reliable readers whose iceoryx2 node died and clean their resources up."""
        dead = svc.dead_node_ids()
        gone = [r for r, (_, node) in self.cursors.items() if node in dead]
        for r in gone:
            del self.cursors[r]
        if dead:
            svc.reclaim_dead_nodes()
        self.stats.readers_reaped += len(gone)
        return len(gone)

    def _admit(self, index: int) -> None:
        """Reliable: wait until every live reader needs a message above ``index - slots``."""
        self._drain_acks()
        t0 = None
        while True:
            slow = [r for r, (nxt, _) in self.cursors.items() if index - nxt >= self.n_slots]
            now = time.monotonic()
            if not slow:
                if t0 is not None:
                    self.stats.stall_s += now - t0
                    if self.on_stall is not None:
                        self.on_stall(now - t0)
                return
            if t0 is None:
                t0 = now
                self.stats.stalls += 1
            if now - self._reaped_at > 0.05:
                self._reaped_at = now
                if self.reap_dead_readers():
                    continue
            if now - t0 > self.timeout_s:
                self.stats.timeouts += 1
                self.stats.stall_s += now - t0
                raise RingFullError(
                    f'iceoryx2 service `{self.service_name}`: no room for message {index} '
                    f'after {self.timeout_s:.3f} s; {len(slow)} slow reader(s) are '
                    f'{self.n_slots} messages behind (reliable policy never overwrites)')
            # Sleep in the library's listener (GIL released) until a reader acknowledges.
            self._ctl.timed_wait(svc.duration(min(0.05, self.timeout_s - (now - t0) + 1e-3)))
            self._drain_acks()

    def _hand_history(self, listener) -> None:
        # Latched topics: a reader that connects gets the history at once, not only when the
        # next message is written (which may be a whole PPO update later).
        connected = EVENT_CONNECTED
        while not self._stop.is_set():
            try:
                events = listener.timed_wait(svc.duration(0.5))
            except Exception:
                return  # closing
            if any(e.id.as_value == connected for e in events):
                with self._lock:
                    if self.pub is not None:
                        self.pub.update_connections()

    # -- writing ---------------------------------------------------------------------------
    def write(self, kind: str, seq: int, tensors: dict[str, np.ndarray], version: int = 0,
              stamp_ns: int = 0) -> Descriptor | None:
        """Copy ``tensors`` into a loaned sample and send it; return its descriptor."""
        return write_through_loan(self, kind, seq, tensors, version, stamp_ns)

    def loan(self, shapes: dict[str, tuple]) -> 'IoxLoan | None':
        """Return writable arrays inside a loaned sample (``{name: (shape, dtype)}``)."""
        if self._loaned:
            raise TransportError(f'`{self.service_name}`: publish the open loan first')
        specs, nbytes = layout_shapes(shapes)
        if nbytes > self.capacity:
            raise ValueError(f'`{self.service_name}`: payload of {nbytes} B does not fit a '
                             f'slot of {self.capacity} B')
        index = self.head
        if self.policy == 'reliable':
            self._admit(index)
        i = svc.iox()
        with self._lock:
            try:
                sample = self.pub.loan_slice_uninit(max(nbytes, 1))
            except i.LoanError:
                self.stats.dropped_all_pinned += 1
                return None
        self._loaned = True
        view = byte_view(sample.payload_ptr, nbytes)
        tensors = {s.name: view[s.offset:s.offset + s.nbytes].view(s.dtype).reshape(s.shape)
                   for s in specs}
        return IoxLoan(self, sample, index, nbytes, specs, tensors)

    def _send(self, loan: 'IoxLoan', kind: str, seq: int, version: int,
              stamp_ns: int) -> Descriptor:
        key = (kind, tuple(loan.specs))
        layout = self._layouts.get(key)
        if layout is None:
            layout = self._layouts[key] = layout_bytes(kind, loan.specs)  # checks it first
            if len(self._layouts) > 64:  # a writer whose shapes change every message
                self._layouts.pop(next(iter(self._layouts)))
        publish_ns = time.monotonic_ns()
        write_header(loan.sample.user_header_ptr, layout, loan.nbytes, loan.index, int(seq),
                     int(version), int(stamp_ns), publish_ns)
        with self._lock:
            self._loaned = False
            delivered = loan.sample.assume_init().send()
        self.head = loan.index + 1
        if self.policy == 'reliable' and delivered < len(self.cursors):
            self.stats.discarded += len(self.cursors) - delivered
        self.notifier.notify_with_custom_event_id(self._data_id)
        self.stats.writes += 1
        return Descriptor(kind=kind, seq=int(seq), segment=self.name, slot=0,
                          slot_seq=loan.index, payload_bytes=loan.nbytes, tensors=loan.specs,
                          version=int(version), stamp_ns=int(stamp_ns), writer_pid=self.pid,
                          boot_id=self.boot_id, publish_ns=publish_ns)

    def close(self) -> None:
        """Drop the ports (the library removes the service with its last participant)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2.0)
        with self._lock:
            for port in (self.pub, self.notifier, self._acks, self._ctl):
                if port is not None:
                    port.delete()
            self.pub = self.notifier = self._acks = self._ctl = None


@dataclasses.dataclass
class IoxLoan:
    """A loaned sample with writable arrays; ``publish`` sends it (``abort`` gives it back)."""

    writer: IoxTensorWriter
    sample: object
    index: int
    nbytes: int
    specs: list[TensorSpec]
    tensors: dict[str, np.ndarray]

    def publish(self, kind: str, seq: int, version: int = 0, stamp_ns: int = 0) -> Descriptor:
        """Send the sample to every subscriber and wake them; return its descriptor."""
        try:
            return self.writer._send(self, kind, seq, version, stamp_ns)
        except ValueError:
            self.abort()
            raise

    def abort(self) -> None:
        """Give the sample back unsent."""
        self.writer._loaned = False
        self.tensors = {}
        self.sample.delete()
