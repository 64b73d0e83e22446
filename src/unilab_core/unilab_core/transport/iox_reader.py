# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Named tensors out of an iceoryx2 service: zero-copy views of received samples.

``IoxTensorReader`` subscribes to the service a descriptor names
(``iox2:<service>``), sleeps on the service's ``data`` event (``wait``, the
GIL released) and hands out ``Received`` views of samples; the header says
kind, seq, stamps and the tensor layout (``iox_layout``). A view stays valid
until ``release()``: the library does not reuse a sample a reader holds.
``latest`` returns the newest sample and counts the ones it replaced as
skipped; ``reliable`` returns them in order and, on release, publishes the
next index it needs (``Ack``) and notifies the writer (``EVENT_ACK``).
"""

from __future__ import annotations

import dataclasses
import random
import time

from unilab_core.transport import iox_service as svc
from unilab_core.transport.descriptor import Descriptor, DescriptorError, unpack
from unilab_core.transport.iox_layout import (Ack, ACK_GONE, ACK_REGISTER, byte_view,
                                              check_magic, DESCRIPTOR_PREFIX, EVENT_ACK,
                                              EVENT_CONNECTED, header_layout_bytes, LayoutError,
                                              read_header, TensorHeader)
from unilab_core.transport.pacing import poll_for
from unilab_core.transport.received import Received
from unilab_core.transport.ring_layout import TransportError

#: a reader cleans up dead nodes of its service at most this often while idle (s)
CLEANUP_EVERY_S = 1.0


@dataclasses.dataclass
class IoxReaderStats:
    """Counters of one reader (names as for ``ring_reader.ReaderStats``)."""

    reads: int = 0
    skipped: int = 0   # latest: messages replaced before this reader took them
    torn: int = 0      # always 0: the library never reuses a held sample (kept for reports)
    retries: int = 0


class IoxTensorReader:
    """Subscribe to one iceoryx2 tensor service and read it (``latest`` or ``reliable``)."""

    def __init__(self, segment: str):
        if not segment.startswith(DESCRIPTOR_PREFIX):
            raise DescriptorError('unknown_segment', f'`{segment}` names no iceoryx2 service')
        self.name = segment
        self.service_name = segment[len(DESCRIPTOR_PREFIX):]
        i = svc.iox()
        try:
            self.service = svc.pubsub(self.service_name)
        except (i.PublishSubscribeOpenError, i.ServiceDetailsError) as exc:
            raise DescriptorError('unknown_segment', f'iceoryx2 service `{self.service_name}` '
                                  f'cannot be opened: {exc}') from None
        cfg = self.service.static_config
        self.policy = 'latest' if cfg.has_safe_overflow else 'reliable'
        #: messages the subscriber buffers (a waiter drains at most this many per wake)
        self.n_slots = max(1, int(cfg.subscriber_max_buffer_size))
        self.sub = self.service.subscriber_builder().create()
        self.listener = svc.event_service(self.service_name, 'data').listener_builder().create()
        self.ctl = svc.event_service(self.service_name, 'ctl').notifier_builder().create()
        self.id = random.getrandbits(63)
        self.stats = IoxReaderStats()
        self.owner_pid = 0
        self._last_index = -1
        self._held = 0
        self._ack = None
        self._ack_id = svc.event_id(EVENT_ACK)
        if self.policy == 'reliable':
            self._ack = svc.ack_service(self.service_name, 0).publisher_builder().create()
            self._send_ack(ACK_REGISTER)
        # A latched writer hands over its history when told that a reader connected.
        self.ctl.notify_with_custom_event_id(svc.event_id(EVENT_CONNECTED))
        self._cleaned_at = 0.0
        self._layouts: dict[bytes, tuple] = {}  # layout bytes -> (kind, specs), decoded once

    # -- waiting ---------------------------------------------------------------------------
    def has_news(self) -> bool:
        """Return whether a sample is waiting."""
        return bool(self.sub.has_samples())

    def wait(self, timeout_s: float, spin_s: float = 0.0) -> bool:
        """Block (GIL released) until a sample is waiting or ``timeout_s``; return has_news."""
        if self.has_news():
            return True
        if spin_s > 0.0 and poll_for(self.has_news, min(spin_s, timeout_s)):
            return True
        self.listener.timed_wait(svc.duration(timeout_s))
        got = self.has_news()
        if not got:
            self._cleanup_dead()
        return got

    def interrupt(self) -> None:
        """Wake a thread waiting in ``wait`` (used to stop a waiter)."""
        if self.listener is not None:
            n = svc.event_service(self.service_name, 'data').notifier_builder().create()
            n.notify()
            n.delete()

    def _cleanup_dead(self) -> None:
        now = time.monotonic()
        if now - self._cleaned_at > CLEANUP_EVERY_S:
            self._cleaned_at = now
            self.service.try_cleanup_dead_nodes()

    # -- reading ---------------------------------------------------------------------------
    def read(self) -> Received | None:
        """Return the next message (newest for ``latest``, next in order for ``reliable``)."""
        if self._held:
            raise TransportError('release the previous message before reading the next')
        sample = self.sub.receive()
        if sample is None:
            return None
        if self.policy == 'latest':
            while True:  # keep the newest; older ones count as skipped
                newer = self.sub.receive()
                if newer is None:
                    break
                sample.delete()
                sample = newer
        h = TensorHeader.from_address(sample.user_header_ptr)
        try:
            check_magic(h)
            key = header_layout_bytes(sample.user_header_ptr)
            layout = self._layouts.get(key)
            if layout is None:
                layout = read_header(h)
                if len(self._layouts) > 256:
                    self._layouts.clear()
                self._layouts[key] = layout
            kind, specs = layout
            nbytes = int(sample.header.number_of_elements)
            if int(h.payload_bytes) > nbytes:
                raise DescriptorError('bad_size', f'`{self.service_name}`: header claims '
                                      f'{int(h.payload_bytes)} B, sample has {nbytes} B')
            view = byte_view(sample.payload_ptr, nbytes)
            tensors = unpack(view, specs, int(h.payload_bytes), nbytes)
        except LayoutError as exc:
            self._drop(sample)
            raise DescriptorError('bad_layout', f'`{self.service_name}`: {exc}') from None
        except BaseException:
            self._drop(sample)
            raise
        index = int(h.index)
        if self.policy == 'latest':
            self.stats.skipped += max(0, index - self._last_index - 1)
        self._last_index = max(self._last_index, index)
        self.stats.reads += 1
        self._held += 1
        desc = Descriptor(kind=kind, seq=int(h.seq), segment=self.name, slot=0,
                          slot_seq=index, payload_bytes=int(h.payload_bytes), tensors=specs,
                          version=int(h.msg_version), stamp_ns=int(h.stamp_ns),
                          writer_pid=self.owner_pid, publish_ns=int(h.publish_ns))
        return Received(desc, tensors, IoxMessage(self, sample, index))

    def already_read(self, index: int) -> bool:
        """Return whether message ``index`` was already taken (or skipped) by this reader."""
        return index <= self._last_index

    def _drop(self, sample) -> None:
        index = int(TensorHeader.from_address(sample.user_header_ptr).index)
        sample.delete()
        if self._ack is not None:
            self._send_ack(index + 1)

    def _send_ack(self, next_index: int) -> None:
        s = self._ack.loan_uninit()
        s = s.write_payload(Ack(reader=self.id, next_index=next_index))
        s.send()
        self.ctl.notify_with_custom_event_id(self._ack_id)

    def release(self, msg: 'IoxMessage') -> bool:
        """Give the sample back (reliable: tell the writer); always intact (library-held)."""
        if msg.sample is None:
            return True
        msg.sample.delete()
        msg.sample = None
        self._held -= 1
        if self._ack is not None:
            self._send_ack(msg.index + 1)
        return True

    def close(self) -> None:
        """Unsubscribe; a reliable reader tells the writer to stop waiting for it."""
        if self._ack is not None:
            self._send_ack(ACK_GONE)
        for port in (self.sub, self.listener, self.ctl, self._ack):
            if port is not None:
                port.delete()
        self.sub = self.listener = self.ctl = self._ack = None


class IoxMessage:
    """A held sample; ``release`` gives it back."""

    __slots__ = ('reader', 'sample', 'index')

    def __init__(self, reader: IoxTensorReader, sample, index: int):
        self.reader, self.sample, self.index = reader, sample, index

    def release(self) -> bool:
        """Give the sample back to the library; return True (never torn)."""
        return self.reader.release(self)
