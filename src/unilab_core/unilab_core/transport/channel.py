# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Named tensors over a ring: the writer returns a ``Descriptor``, the reader turns one into views.

This is the whole cross-process data path without ROS; the ROS wrapper only
moves descriptors. ``TensorReader.receive`` checks a descriptor against the
segment it names (name, owner, slot, message index, sizes, layout) and raises
``DescriptorError`` (kinds: ``unknown_segment``, ``bad_size``,
``bad_layout``, ``stale``) instead of ever building a view from a bad one.
"""

from __future__ import annotations

import collections
import dataclasses
import os
from typing import Any

import numpy as np
from unilab_core.transport import shm
from unilab_core.transport.descriptor import (Descriptor, DescriptorError, layout_shapes,
                                              unpack)
from unilab_core.transport.ring import (Message, reclaim_stale, RingReader, RingWriter,
                                        StaleSlotError, TransportError)


class TensorWriter:
    """Write named numpy arrays into a ring; one per (node, topic)."""

    def __init__(self, node: str, topic: str, capacity: int, n_slots: int = 4,
                 policy: str = 'latest', timeout_s: float = 1.0, domain: int | None = None,
                 on_stall=None):
        domain = shm.ros_domain() if domain is None else domain
        # Start-up reclaim: segments of crashed owners (SIGKILL, power loss) in our domain.
        self.reclaimed = reclaim_stale(domain)
        self.ring = RingWriter(shm.segment_name(domain, node, topic), capacity, n_slots,
                               policy, timeout_s, on_stall=on_stall)
        self.reclaimed += self.ring.reclaimed
        self.boot_id = shm.boot_id()
        self.pid = os.getpid()

    @property
    def name(self) -> str:
        """Return the segment name."""
        return self.ring.name

    def write(self, kind: str, seq: int, tensors: dict[str, np.ndarray], version: int = 0,
              stamp_ns: int = 0) -> Descriptor | None:
        """Copy ``tensors`` into the next slot; return its descriptor (None: dropped)."""
        arrays = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
        loan = self.loan({k: (a.shape, a.dtype) for k, a in arrays.items()})
        if loan is None:
            return None
        try:
            for k, a in arrays.items():
                np.copyto(loan.tensors[k], a, casting='no')
        except BaseException:
            self.ring._abort()
            raise
        return loan.publish(kind, seq, version, stamp_ns)

    def loan(self, shapes: dict[str, tuple]) -> 'Loan | None':
        """
        Claim a slot and return writable arrays inside it (``{name: (shape, dtype)}``).

        Fill ``loan.tensors`` in place and call ``loan.publish(...)``: the
        payload is then never copied at all (the loaned-message pattern of
        rclcpp). None when the message is dropped (latest, every slot pinned).
        """
        fixed, off = layout_shapes(shapes)
        got = self.ring.begin(off)
        if got is None:
            return None
        slot, index, view = got
        tensors = {s.name: view[s.offset:s.offset + s.nbytes].view(s.dtype).reshape(s.shape)
                   for s in fixed}
        return Loan(self, slot, index, off, fixed, tensors)

    def close(self) -> None:
        """Unlink the segment."""
        self.ring.close()


@dataclasses.dataclass
class Loan:
    """A claimed slot with writable arrays; ``publish`` commits it."""

    writer: TensorWriter
    slot: int
    index: int
    nbytes: int
    specs: list
    tensors: dict[str, np.ndarray]

    def publish(self, kind: str, seq: int, version: int = 0, stamp_ns: int = 0) -> Descriptor:
        """Commit the slot and return its descriptor."""
        w = self.writer
        slot, index = w.ring.commit(stamp_ns)
        return Descriptor(kind=kind, seq=int(seq), segment=w.ring.name, slot=slot,
                          slot_seq=index, payload_bytes=self.nbytes, tensors=self.specs,
                          version=int(version), stamp_ns=int(stamp_ns), writer_pid=w.pid,
                          boot_id=w.boot_id, publish_ns=int(w.ring.m.slot_hdr[slot, 4]))


@dataclasses.dataclass
class Received:
    """Views of one message; call ``release()`` (or use ``with``) when done with them."""

    descriptor: Descriptor
    tensors: dict[str, Any]
    message: Message | None = None

    def release(self) -> bool:
        """Give the slot back to the writer; return whether it stayed intact."""
        if self.message is None:
            return True
        return self.message.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class TensorReader:
    """Resolve descriptors into zero-copy views; maps each segment once."""

    def __init__(self):
        self.readers: dict[str, RingReader] = {}
        self.errors: collections.Counter = collections.Counter()

    def _reader(self, desc: Descriptor) -> RingReader:
        name = desc.segment
        if not shm.valid_name(name):
            raise DescriptorError('unknown_segment', f'`{name}` is not a UniLab segment name')
        reader = self.readers.get(name)
        if reader is not None:
            owner = int(reader.m.hdr[6])
            if desc.writer_pid and owner != desc.writer_pid:
                # The writer restarted: the name now points at a new segment.
                reader.close()
                reader = None
                del self.readers[name]
        if reader is None:
            try:
                reader = RingReader(name, start=desc.slot_seq)
            except FileNotFoundError:
                raise DescriptorError('unknown_segment',
                                      f'segment `{name}` does not exist') from None
            except TransportError as exc:
                raise DescriptorError('unknown_segment', str(exc)) from None
            self.readers[name] = reader
        return reader

    def receive(self, desc: Descriptor) -> Received:
        """Return views for ``desc``; raise DescriptorError (counted) if it is bad."""
        try:
            return self._receive(desc)
        except DescriptorError as exc:
            self.errors[exc.kind] += 1
            raise

    def _receive(self, desc: Descriptor) -> Received:
        reader = self._reader(desc)
        if desc.payload_bytes > reader.capacity:
            raise DescriptorError('bad_size', f'segment `{desc.segment}`: descriptor claims '
                                  f'{desc.payload_bytes} B, slots hold {reader.capacity} B')
        if not 0 <= desc.slot < reader.n_slots:
            raise DescriptorError('bad_size', f'segment `{desc.segment}` has {reader.n_slots} '
                                  f'slots, descriptor names slot {desc.slot}')
        try:
            msg = reader.take(desc.slot, desc.slot_seq)
        except StaleSlotError as exc:
            raise DescriptorError('stale', str(exc)) from None
        try:
            if msg.nbytes != desc.payload_bytes:
                raise DescriptorError('bad_size', f'segment `{desc.segment}` slot {desc.slot}: '
                                      f'message {desc.slot_seq} has {msg.nbytes} B, descriptor '
                                      f'claims {desc.payload_bytes} B')
            tensors = unpack(msg.data, desc.tensors, desc.payload_bytes, reader.capacity)
        except BaseException:
            msg.release()
            raise
        return Received(desc, tensors, msg)

    def close(self) -> None:
        """Unmap every segment."""
        for r in self.readers.values():
            r.close()
        self.readers.clear()
