# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Named tensors over a ring: the writer returns a ``Descriptor``, the reader turns one into views.

This is the whole cross-process data path without ROS; the ROS wrapper only
moves descriptors. ``TensorReader.receive`` checks a descriptor against the
segment it names (name, owner, slot, message index, sizes, layout) and raises
``DescriptorError`` (kinds: ``unknown_segment``, ``bad_size``,
``bad_layout``, ``stale``) instead of ever building a view from a bad one.

Every slot also carries its own layout (kind, tensor names, dtypes, shapes,
offsets as compact JSON, plus seq / version / stamp in slot-header words),
so a reader woken through the ring's futex (``TensorReader.read_woken``)
builds the same views without any descriptor. The layout bytes are written
only when they differ from what the slot already holds, and readers cache
the decoded layout by its 64-bit key.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import os

import numpy as np
from unilab_core.transport import shm
from unilab_core.transport.descriptor import (Descriptor, DescriptorError, DTYPES,
                                              layout_shapes, TensorSpec, unpack)
from unilab_core.transport.iox_layout import DESCRIPTOR_PREFIX
from unilab_core.transport.iox_reader import IoxTensorReader
from unilab_core.transport.received import Received
from unilab_core.transport.ring_layout import reclaim_stale, StaleSlotError, TransportError
from unilab_core.transport.ring_reader import RingReader
from unilab_core.transport.ring_writer import RingWriter


def encode_layout(kind: str, specs: list[TensorSpec]) -> tuple[int, bytes]:
    """Return ``(key, bytes)`` of a message layout (key: 64-bit BLAKE2b of the bytes, never 0)."""
    blob = json.dumps([kind, [[t.name, t.dtype, list(t.shape), t.offset] for t in specs]],
                      separators=(',', ':')).encode()
    key = int.from_bytes(hashlib.blake2b(blob, digest_size=8).digest(), 'little') or 1
    return key, blob


def decode_layout(blob: bytes) -> tuple[str, list[TensorSpec]]:
    """Decode ``encode_layout`` bytes; DescriptorError('bad_layout') if malformed."""
    try:
        kind, items = json.loads(blob.decode())
        specs = [TensorSpec(str(n), str(dt), tuple(int(x) for x in shape), int(off))
                 for n, dt, shape, off in items]
    except (ValueError, TypeError, UnicodeDecodeError) as exc:
        raise DescriptorError('bad_layout', f'slot layout is not readable: {exc}') from None
    for t in specs:
        if t.dtype not in DTYPES:
            raise DescriptorError('bad_layout', f'tensor `{t.name}`: unknown dtype `{t.dtype}`')
    return str(kind), specs


def write_through_loan(writer, kind: str, seq: int, tensors: dict[str, np.ndarray],
                       version: int = 0, stamp_ns: int = 0) -> Descriptor | None:
    """
    Copy ``tensors`` into a loan of ``writer`` and publish it (the copy-in path).

    ``writer`` is a ``TensorWriter`` or an ``IoxTensorWriter``: anything whose
    ``loan(shapes)`` returns None (dropped) or a loan with ``tensors``,
    ``publish(kind, seq, version, stamp_ns)`` and ``abort()``.
    """
    arrays = {k: np.ascontiguousarray(v) for k, v in tensors.items()}
    loan = writer.loan({k: (a.shape, a.dtype) for k, a in arrays.items()})
    if loan is None:
        return None
    try:
        for k, a in arrays.items():
            np.copyto(loan.tensors[k], a, casting='no')
    except BaseException:
        loan.abort()
        raise
    return loan.publish(kind, seq, version, stamp_ns)


class TensorWriter:
    """Write named numpy arrays into a ring; one per (node, topic)."""

    def __init__(self, node: str, topic: str, capacity: int, n_slots: int = 4,
                 policy: str = 'latest', timeout_s: float = 1.0, domain: int | None = None,
                 on_stall=None):
        domain = shm.ros_domain() if domain is None else domain
        # Start-up reclaim: segments of crashed owners (SIGKILL, power loss) in our domain.
        self.reclaimed = reclaim_stale(domain)
        self.ring = RingWriter(shm.segment_name(domain, node, topic), capacity, n_slots,
                               policy, timeout_s, on_stall=on_stall, self_describing=True)
        self.reclaimed += self.ring.reclaimed
        self.boot_id = shm.boot_id()
        self.pid = os.getpid()
        self._layouts: dict = {}

    @property
    def name(self) -> str:
        """Return the segment name."""
        return self.ring.name

    def wake_reader_count(self) -> int:
        """Return the number of readers that read on futex wake-ups (they need no descriptor)."""
        return self.ring.wake_reader_count()

    def mapped_reader_count(self) -> int:
        """Return the number of readers that mapped the segment (registered in its table)."""
        return self.ring.reader_count()

    def write(self, kind: str, seq: int, tensors: dict[str, np.ndarray], version: int = 0,
              stamp_ns: int = 0) -> Descriptor | None:
        """Copy ``tensors`` into the next slot; return its descriptor (None: dropped)."""
        return write_through_loan(self, kind, seq, tensors, version, stamp_ns)

    def loan(self, shapes: dict[str, tuple]) -> 'Loan | None':
        """
        Claim a slot and return writable arrays inside it (``{name: (shape, dtype)}``).

        Fill ``loan.tensors`` in place and call ``loan.publish(...)``: the
        payload is then never copied at all (the loaned-message pattern of
        rclcpp). None when the message is dropped (latest, every slot pinned).
        """
        fixed, off = layout_shapes(shapes)
        if len(fixed) > 256:
            raise ValueError(f'{len(fixed)} tensors in one message; at most 256')
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

    def abort(self) -> None:
        """Give the slot up unpublished (readers reject its half-written payload)."""
        self.writer.ring.abort()

    def publish(self, kind: str, seq: int, version: int = 0, stamp_ns: int = 0) -> Descriptor:
        """Commit the slot (waking futex readers) and return its descriptor."""
        w = self.writer
        cache_key = (kind, tuple(self.specs))
        layout = w._layouts.get(cache_key)
        if layout is None:
            layout = w._layouts[cache_key] = encode_layout(kind, self.specs)
            if len(w._layouts) > 64:  # a writer whose shapes change every message
                w._layouts.pop(next(iter(w._layouts)))
        key, blob = layout
        slot, index = w.ring.commit(stamp_ns, seq=int(seq), version=int(version),
                                    meta_key=key, meta=blob)
        return Descriptor(kind=kind, seq=int(seq), segment=w.ring.name, slot=slot,
                          slot_seq=index, payload_bytes=self.nbytes, tensors=self.specs,
                          version=int(version), stamp_ns=int(stamp_ns), writer_pid=w.pid,
                          boot_id=w.boot_id, publish_ns=w.ring.publish_ns(slot))


class TensorReader:
    """
    Resolve descriptors into zero-copy views; maps each segment once.

    A descriptor that names an iceoryx2 service (``iox2:...``) subscribes to
    it instead (``attach``); its messages are then read with ``read_woken``
    like a self-describing ring's.
    """

    def __init__(self, before_close=None):
        self.readers: dict[str, RingReader | IoxTensorReader] = {}
        self.errors: collections.Counter = collections.Counter()
        #: called with (name, RingReader) before a mapping is dropped (writer restarted)
        self.before_close = before_close
        self._layouts: dict[int, tuple[str, list[TensorSpec]]] = {}
        #: CudaTensorReader for device descriptors (created on the first one)
        self.device_reader = None

    def _reader(self, desc: Descriptor) -> RingReader:
        name = desc.segment
        if not shm.valid_name(name):
            raise DescriptorError('unknown_segment', f'`{name}` is not a UniLab segment name')
        reader = self.readers.get(name)
        if reader is not None:
            if desc.writer_pid and reader.owner_pid != desc.writer_pid:
                # The writer restarted: the name now points at a new segment.
                if self.before_close is not None:
                    self.before_close(name, reader)
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

    @staticmethod
    def is_iox(desc: Descriptor) -> bool:
        """Return whether ``desc`` names an iceoryx2 service rather than a ring segment."""
        return desc.segment.startswith(DESCRIPTOR_PREFIX)

    def attach(self, desc: Descriptor) -> IoxTensorReader:
        """Subscribe to the iceoryx2 service ``desc`` names (once); return its reader."""
        reader = self.readers.get(desc.segment)
        if reader is None:
            try:
                reader = IoxTensorReader(desc.segment)
            except DescriptorError as exc:
                self.errors[exc.kind] += 1
                raise
            self.readers[desc.segment] = reader
        reader.owner_pid = desc.writer_pid
        return reader

    def receive(self, desc: Descriptor) -> Received:
        """Return views for ``desc``; raise DescriptorError (counted) if it is bad."""
        try:
            return self._receive(desc)
        except DescriptorError as exc:
            self.errors[exc.kind] += 1
            raise

    def _receive(self, desc: Descriptor) -> Received:
        if desc.device != 'cpu':
            return self._receive_device(desc)
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

    def _receive_device(self, desc: Descriptor) -> Received:
        """Open a device ring's descriptor through CUDA IPC (``transport.cuda``)."""
        if not desc.device.startswith('cuda'):
            raise DescriptorError('bad_device', f'segment `{desc.segment}`: unknown device '
                                  f'`{desc.device}` (expected cpu or cuda[:N])')
        if self.device_reader is None:
            from unilab_core.transport import cuda
            if not cuda.ipc_available():
                raise DescriptorError(
                    'no_cuda', f'segment `{desc.segment}` holds {desc.device} tensors and '
                    f'this process has no CUDA device (torch.cuda.is_available() is false) '
                    f'or no cupy (requirements-gpu.txt): subscribe from a process with a '
                    f'GPU, or publish host arrays')
            self.device_reader = cuda.CudaTensorReader()
        return self.device_reader.receive(desc)

    def already_taken(self, desc: Descriptor) -> bool:
        """Return whether the message ``desc`` names was already read from its ring (woken)."""
        reader = self.readers.get(desc.segment)
        if isinstance(reader, IoxTensorReader):
            return reader.already_read(desc.slot_seq)
        if reader is None or reader.row is None or (
                desc.writer_pid and reader.owner_pid != desc.writer_pid):
            return False
        return reader.already_read(desc.slot_seq)

    def read_woken(self, name: str) -> Received | None:
        """
        Read the next message of mapped segment ``name`` without a descriptor; None if none.

        ``latest``: the newest message (older ones count as skipped);
        ``reliable``: the next one in order. The layout comes from the slot
        header; DescriptorError (counted) if it is unusable.
        """
        reader = self.readers[name]
        if isinstance(reader, IoxTensorReader):
            try:
                return reader.read()
            except DescriptorError as exc:
                self.errors[exc.kind] += 1
                raise
        msg = reader.read_next() if reader.policy == 'reliable' else reader.read_latest()
        if msg is None:
            return None
        try:
            if not msg.meta_len:
                raise DescriptorError('bad_layout', f'segment `{name}` slot {msg.slot}: message '
                                      f'{msg.index} carries no layout')
            layout = self._layouts.get(msg.meta_key)
            if layout is None:
                layout = decode_layout(msg.meta())
                if len(self._layouts) > 256:
                    self._layouts.clear()
                self._layouts[msg.meta_key] = layout
            kind, specs = layout
            tensors = unpack(msg.data, specs, msg.nbytes, reader.capacity)
        except DescriptorError as exc:
            msg.release()
            self.errors[exc.kind] += 1
            raise
        except BaseException:
            msg.release()
            raise
        desc = Descriptor(kind=kind, seq=msg.seq, segment=name, slot=msg.slot,
                          slot_seq=msg.index, payload_bytes=msg.nbytes, tensors=specs,
                          version=msg.version, stamp_ns=msg.stamp_ns,
                          writer_pid=reader.owner_pid, publish_ns=msg.publish_ns)
        return Received(desc, tensors, msg)

    def close(self) -> None:
        """Unmap every segment."""
        for r in self.readers.values():
            r.close()
        self.readers.clear()
        if self.device_reader is not None:
            self.device_reader.close()
            self.device_reader = None
