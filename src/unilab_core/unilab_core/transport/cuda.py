# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Device-memory slots shared between processes through CUDA IPC (cupy + torch's public API).

The slot payloads live in one CUDA allocation of ``n_slots`` x ``stride``
bytes; the slot headers (seqlock generation, index, pins / cursors) stay in
a host ring exactly as for host payloads, so both policies and the stale /
dead-reader handling are the same code. The allocation is a plain
``cudaMalloc`` (``cupy.cuda.runtime.malloc``: its own allocation, so its IPC
handle maps exactly these bytes, which a sub-allocation of a caching
allocator would not guarantee), handed to torch without a copy through
DLPack. Its IPC handle (``cupy.cuda.runtime.ipcGetMemHandle``) and one
interprocess event per slot (``torch.cuda.Event(interprocess=True)``,
``ipc_handle()``) are written once into the segment's extension area (JSON,
never pickle: a segment is data, not code); a reader opens them once
(``ipcOpenMemHandle``, ``torch.cuda.Event.from_ipc_handle``). No private
torch call is involved.

Ordering: the writer enqueues the copy into the slot on its current stream
and records the slot's event after it, then commits the host slot; the
reader makes its current stream wait on that event before any kernel reads
the views. Before a reader releases a slot it synchronises its stream, so
the writer never overwrites device memory a queued kernel still reads.

Development and CI machines have no GPU: the tests skip without CUDA (and
cupy); ``scripts/gpu_checks.sh`` runs them on a GPU machine.
"""

from __future__ import annotations

import json
import os
import struct

from unilab_core.transport import shm
from unilab_core.transport.descriptor import Descriptor, DescriptorError, layout_shapes
from unilab_core.transport.received import Received
from unilab_core.transport.ring_layout import reclaim_stale, StaleSlotError, TransportError
from unilab_core.transport.ring_reader import RingReader
from unilab_core.transport.ring_writer import RingWriter

EXT_BYTES = 8192


def torch_dtype_name(dtype) -> str:
    """Return the numpy-style name of a torch dtype (``torch.float32`` -> ``float32``)."""
    return str(dtype).replace('torch.', '')


def cuda_available() -> bool:
    """Return whether torch sees a CUDA device."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def ipc_available() -> bool:
    """Return whether device tensors can cross processes here (CUDA and cupy)."""
    if not cuda_available():
        return False
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


def _cupy():
    """Return ``cupy`` (a clear error where it is not installed)."""
    try:
        import cupy
    except ImportError as exc:
        raise ImportError('CUDA tensors across processes need cupy: pip install -r '
                          'requirements-gpu.txt (cupy-cuda12x)') from exc
    return cupy


def _device_bytes(cp, ptr: int, size: int, owner, device: int):
    """Return a torch uint8 tensor over ``size`` device bytes at ``ptr`` (no copy, DLPack)."""
    import torch
    mem = cp.cuda.UnownedMemory(ptr, size, owner, device_id=device)
    arr = cp.ndarray((size,), cp.uint8, cp.cuda.MemoryPointer(mem, 0))
    return torch.from_dlpack(arr)


class CudaTensorWriter:
    """Write named CUDA tensors into device slots; descriptors as for host rings."""

    def __init__(self, node: str, topic: str, capacity: int, n_slots: int = 4,
                 policy: str = 'latest', timeout_s: float = 1.0, device='cuda',
                 domain: int | None = None):
        import torch
        domain = shm.ros_domain() if domain is None else domain
        self.reclaimed = reclaim_stale(domain)
        cp = _cupy()
        self.device = torch.device(device)
        dev = self.device.index if self.device.index is not None else \
            torch.cuda.current_device()
        self.device = torch.device('cuda', dev)
        self.stride = (capacity + 511) // 512 * 512
        size = n_slots * self.stride
        with cp.cuda.Device(dev):
            self._ptr = cp.cuda.runtime.malloc(size)  # its own allocation: the IPC unit
            handle = bytes(cp.cuda.runtime.ipcGetMemHandle(self._ptr))
        self._cp = cp
        self.buf = _device_bytes(cp, self._ptr, size, self, dev).view(n_slots, self.stride)
        with torch.cuda.device(dev):
            self.events = [torch.cuda.Event(interprocess=True) for _ in range(n_slots)]
            for ev in self.events:
                ev.record()  # an event must be recorded once before its handle is usable
        self.ring = RingWriter(shm.segment_name(domain, node, topic), 64, n_slots, policy,
                               timeout_s, ext_bytes=EXT_BYTES)
        record = {
            'device': int(dev), 'handle': handle.hex(), 'size': int(size),
            'stride': self.stride, 'n_slots': n_slots,
            'events': [bytes(ev.ipc_handle()).hex() for ev in self.events],
        }
        blob = json.dumps(record).encode()
        if len(blob) + 4 > EXT_BYTES:
            raise TransportError('CUDA IPC record does not fit the extension area')
        ext = self.ring.m.ext()
        ext[:4 + len(blob)] = struct.pack('<I', len(blob)) + blob
        self.handle = bytes(handle)
        self.pid = os.getpid()
        self.boot_id = shm.boot_id()

    def write(self, kind: str, seq: int, tensors: dict, version: int = 0,
              stamp_ns: int = 0) -> Descriptor | None:
        """Copy CUDA ``tensors`` into the next device slot; return the descriptor."""
        import torch
        specs, nbytes = layout_shapes({k: (tuple(t.shape), torch_dtype_name(t.dtype))
                                       for k, t in tensors.items()})
        if nbytes > self.stride:
            raise ValueError(f'payload of {nbytes} B does not fit a device slot of '
                             f'{self.stride} B')
        got = self.ring.begin(0)
        if got is None:
            return None
        slot, index, _ = got
        row = self.buf[slot]
        for spec, t in zip(specs, tensors.values()):
            dst = row[spec.offset:spec.offset + spec.nbytes].view(t.dtype).view(t.shape)
            dst.copy_(t, non_blocking=True)
        self.events[slot].record(torch.cuda.current_stream(self.device))
        slot, index = self.ring.commit(stamp_ns, nbytes=nbytes)
        return Descriptor(kind=kind, seq=int(seq), segment=self.ring.name, slot=slot,
                          slot_seq=index, payload_bytes=nbytes, tensors=specs,
                          version=int(version), stamp_ns=int(stamp_ns),
                          device=str(self.device), cuda_ipc_handle=self.handle,
                          writer_pid=self.pid, boot_id=self.boot_id,
                          publish_ns=self.ring.publish_ns(slot))

    def close(self) -> None:
        """Unlink the segment and free the device allocation."""
        self.ring.close()
        if getattr(self, '_ptr', 0):
            self.buf = None
            torch_sync()
            self._cp.cuda.runtime.free(self._ptr)
            self._ptr = 0


def torch_sync() -> None:
    """Wait for queued device work (before device memory is freed or unmapped)."""
    import torch
    torch.cuda.synchronize()


class _Opened:
    def __init__(self, reader: RingReader, record: dict):
        import torch
        cp = _cupy()
        self.reader = reader
        dev = record['device']
        self.device = torch.device('cuda', dev)
        with cp.cuda.Device(dev):
            self._ptr = cp.cuda.runtime.ipcOpenMemHandle(bytes.fromhex(record['handle']))
        self._cp = cp
        self.stride = record['stride']
        flat = _device_bytes(cp, self._ptr, record['size'], self, dev)
        self.buf = flat[:record['n_slots'] * self.stride].view(record['n_slots'], self.stride)
        self.events = [torch.cuda.Event.from_ipc_handle(self.device, bytes.fromhex(h))
                       for h in record['events']]

    def close(self) -> None:
        """Unmap the writer's allocation (after the queued kernels that read it)."""
        if self._ptr:
            self.buf = None
            torch_sync()
            with self._cp.cuda.Device(self.device.index):
                self._cp.cuda.runtime.ipcCloseMemHandle(self._ptr)
            self._ptr = 0


class CudaTensorReader:
    """Resolve device descriptors into CUDA tensor views (no copy)."""

    def __init__(self):
        self.opened: dict[str, _Opened] = {}

    def _open(self, desc: Descriptor) -> _Opened:
        o = self.opened.get(desc.segment)
        if o is not None and o.reader.owner_pid == desc.writer_pid:
            return o
        if o is not None:  # the writer restarted: its old allocation is gone
            o.reader.close()
            o.close()
            del self.opened[desc.segment]
        if not shm.valid_name(desc.segment):
            raise DescriptorError('unknown_segment', f'`{desc.segment}` is not a UniLab '
                                  f'segment name')
        try:
            reader = RingReader(desc.segment, start=desc.slot_seq)
        except (FileNotFoundError, TransportError) as exc:
            raise DescriptorError('unknown_segment', f'segment `{desc.segment}`: {exc}') from None
        ext = reader.m.ext()
        if len(ext) < 4:
            reader.close()
            raise DescriptorError('unknown_segment', f'segment `{desc.segment}` has no CUDA '
                                  f'IPC record (host ring?)')
        (n,) = struct.unpack('<I', bytes(ext[:4]))
        record = json.loads(bytes(ext[4:4 + n]))
        o = _Opened(reader, record)
        self.opened[desc.segment] = o
        return o

    def receive(self, desc: Descriptor) -> Received:
        """Return CUDA views for ``desc`` after the writer's event; release when done."""
        import torch
        o = self._open(desc)
        if desc.payload_bytes > o.stride or not 0 <= desc.slot < len(o.events):
            raise DescriptorError('bad_size', f'descriptor ({desc.payload_bytes} B, slot '
                                  f'{desc.slot}) does not fit segment `{desc.segment}`')
        try:
            msg = o.reader.take(desc.slot, desc.slot_seq)
        except StaleSlotError as exc:
            raise DescriptorError('stale', str(exc)) from None
        torch.cuda.current_stream(o.device).wait_event(o.events[desc.slot])
        row = o.buf[desc.slot]
        tensors = {}
        for spec in desc.tensors:
            if spec.offset + spec.nbytes > desc.payload_bytes:
                msg.release()
                raise DescriptorError('bad_size', f'tensor `{spec.name}` exceeds the payload')
            dt = getattr(torch, spec.dtype)
            tensors[spec.name] = row[spec.offset:spec.offset + spec.nbytes].view(dt).view(
                spec.shape)
        return Received(desc, tensors, _SyncRelease(msg, o.device))

    def close(self) -> None:
        """Unmap every host ring header (the device mappings go with their tensors)."""
        for o in self.opened.values():
            o.reader.close()
            o.close()
        self.opened.clear()


class _SyncRelease:
    """Synchronise the reader's stream before the host slot is given back."""

    def __init__(self, msg, device):
        self.msg, self.device = msg, device

    def release(self) -> bool:
        import torch
        torch.cuda.current_stream(self.device).synchronize()
        return self.msg.release()


__all__ = ['CudaTensorReader', 'CudaTensorWriter', 'cuda_available', 'ipc_available']
