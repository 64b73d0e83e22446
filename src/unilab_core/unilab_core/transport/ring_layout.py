# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Layout, ownership and memory ordering of the shared-memory ring (shared by writer and reader).

A ring is a segment of fixed-size slots with a seqlock per slot; its writer
is ``ring_writer.RingWriter``, its readers ``ring_reader.RingReader``.
Layout (all counters are aligned little-endian uint64 words)::

    [header page: 4096 B]  magic, version, policy, n_slots, capacity, stride,
                           owner pid / start time / boot id, head, latest,
                           reader table (MAX_READERS x 8 words)
    [extension area]       ``ext_bytes`` rounded to 4096 B (CUDA IPC record)
    [slot 0] [slot 1] ...  each: 4096 B slot header (gen, index, nbytes, stamp,
                           publish time, seq, version, meta key / length, then
                           the message's layout as bytes) + payload, stride
                           rounded to 4096 B

Seqlock (Lamport; Linux ``include/linux/seqlock.h``): the writer makes the
slot's generation odd, writes the payload and the slot header, then makes it
even again. A reader accepts a slot only if it saw the same even generation
and the expected message index before and after it used the bytes.

Why plain numpy stores suffice: each counter is one naturally aligned 8-byte
word, written by numpy as a single 64-bit store and read as a single 64-bit
load, which x86-64 and AArch64 perform atomically (Intel SDM vol. 3A 9.1.1;
Arm ARM B2.2.1), so no reader sees half a counter. Ordering is the second
half: x86-64 (TSO) keeps stores in program order and loads in program order,
which is all a seqlock needs; but it may let a later load pass an earlier
store, which the pin protocol (Dekker-style: store mine, then load yours;
``RingWriter._claim_latest_slot``) must forbid. ``fence()`` is a real full
barrier: C11 ``atomic_thread_fence(memory_order_seq_cst)`` in a small C
extension (``unilab_fence``, ``csrc/unilab_fence.c``; MFENCE or a locked instruction on x86-64,
``DMB ISH`` on AArch64), so it holds whatever the interpreter does (a
free-threaded CPython, another lock implementation). Elsewhere than x86-64
the seqlock's release / acquire points call ``fence()`` too (``ARCH_X86``).

Ownership: the header names the owner (pid, process start time, boot id).
A segment whose owner no longer runs is *stale*; the next writer in the same
ROS domain unlinks it (``reclaim_stale``), so SIGKILL and power loss leave
nothing behind after the next start.
"""

from __future__ import annotations

import fcntl
import os
import platform
import time
from typing import NamedTuple

import numpy as np
from unilab_core.transport import shm
try:
    from unilab_fence import fence  # noqa: F401  (re-exported)
except ImportError as exc:  # a source tree that was never built
    raise ImportError('unilab_fence (the C memory fence of the shared-memory ring, built with '
                      'unilab_core) is missing: run `bin/unilab tasks` (colcon build) and source '
                      'install/setup.bash') from exc

MAGIC = 0x31474E4952424C55  # b'ULBRING1' little-endian
VERSION = 2  # 2: notify word, waiting flags, 4 KiB slot headers with the layout
POLICIES = {'latest': 1, 'reliable': 2}
HEADER_BYTES = 4096
SLOT_HEADER_BYTES = 4096
#: the message layout (channel.py) lives in the slot header from this byte on
META_OFFSET = 128
META_BYTES = SLOT_HEADER_BYTES - META_OFFSET
PAGE = 4096
MAX_READERS = 32

# header words (word 12 is reserved: always 0)
H_MAGIC, H_VERSION, H_POLICY, H_NSLOTS, H_CAPACITY, H_STRIDE = 0, 1, 2, 3, 4, 5
H_OWNER_PID, H_OWNER_START, H_BOOT0, H_BOOT1 = 6, 7, 8, 9
H_HEAD, H_LATEST, H_EXT_BYTES = 10, 11, 13
H_NOTIFY = 14              # futex word (low 32 bits): index + 1 of the newest commit
H_SELF_DESCRIBING = 15     # 1: every slot carries its layout (readers need no descriptor)
#: bytes of the header that name the owner (magic .. boot id), read by ``read_owner``
OWNER_BYTES = (H_BOOT1 + 1) * 8
READER_TABLE = 64          # first word of the reader table
READER_WORDS = 8
# reader-table fields
R_STATE, R_PID, R_START, R_CURSOR, R_PIN, R_PIN_INDEX = 0, 1, 2, 3, 4, 5
R_WAITING, R_WAKE = 6, 7   # asleep in FUTEX_WAIT; reads by futex wake-ups (not descriptors)
# slot-header words
S_GEN, S_INDEX, S_NBYTES, S_STAMP, S_PUB_NS, S_CLAIM = 0, 1, 2, 3, 4, 5
S_SEQ, S_VERSION, S_META_KEY, S_META_LEN = 6, 7, 8, 9
#: the latest word packs ``(index + 1) << LATEST_SLOT_BITS | slot``
LATEST_SLOT_BITS = 8

#: x86-64 keeps loads and stores in program order (TSO): the seqlock needs no fence there
ARCH_X86 = platform.machine().lower() in ('x86_64', 'amd64', 'i686', 'i386')


def round_up(n: int, to: int) -> int:
    """Return ``n`` rounded up to a multiple of ``to``."""
    return (n + to - 1) // to * to


def slot_stride(capacity: int) -> int:
    """Return the bytes one slot takes: its 4 KiB header plus the payload, page-rounded."""
    return round_up(SLOT_HEADER_BYTES + capacity, PAGE)


def ring_bytes(capacity: int, n_slots: int, ext_bytes: int = 0) -> int:
    """Return the segment size of a ring: header page, extension area, page-rounded slots."""
    return HEADER_BYTES + round_up(ext_bytes, PAGE) + n_slots * slot_stride(capacity)


def unpack_latest(word: int) -> tuple[int, int]:
    """Return ``(index, slot)`` of a nonzero latest word."""
    return (word >> LATEST_SLOT_BITS) - 1, word & ((1 << LATEST_SLOT_BITS) - 1)


def pack_latest(index: int, slot: int) -> int:
    """Return the latest word naming message ``index`` in ``slot``."""
    return ((index + 1) << LATEST_SLOT_BITS) | slot


class TransportError(RuntimeError):
    """Base class of transport errors."""


class RingFullError(TransportError):
    """A reliable ring had no free slot within the timeout (a reader is too slow)."""


class SegmentBusyError(TransportError):
    """A live process already owns the segment name (two writers for one topic and node)."""


class StaleSlotError(TransportError):
    """A slot no longer holds the message a reader asked for."""


class RingMapping:
    """Numpy views of a mapped ring (shared by writer and reader)."""

    def __init__(self, seg: shm.Segment):
        self.seg = seg
        self.hdr = np.ndarray((HEADER_BYTES // 8,), np.uint64, seg.mm, 0)
        if int(self.hdr[H_MAGIC]) != MAGIC or int(self.hdr[H_VERSION]) != VERSION:
            raise TransportError(f'segment `{seg.name}` is not a UniLab ring (version '
                                 f'{VERSION}); bad magic or version')
        self._bind()

    def _bind(self):
        hdr = self.hdr
        self.n_slots = int(hdr[H_NSLOTS])
        self.capacity = int(hdr[H_CAPACITY])
        self.stride = int(hdr[H_STRIDE])
        self.ext_bytes = int(hdr[H_EXT_BYTES])
        self.slots_base = HEADER_BYTES + self.ext_bytes
        need = self.slots_base + self.n_slots * self.stride
        if self.seg.size < need:
            raise TransportError(f'segment `{self.seg.name}` is {self.seg.size} B, its header '
                                 f'describes {need} B')
        self.policy = {v: k for k, v in POLICIES.items()}.get(int(hdr[H_POLICY]), '?')
        self.readers = np.ndarray((MAX_READERS, READER_WORDS), np.uint64, self.seg.mm,
                                  READER_TABLE * 8)
        # [n_slots, 8] view of the slot headers (strided over the slots)
        self.slot_hdr = np.ndarray((self.n_slots, SLOT_HEADER_BYTES // 8), np.uint64,
                                   self.seg.mm, self.slots_base,
                                   strides=(self.stride, 8))
        self.payload = np.ndarray((self.n_slots, self.capacity), np.uint8, self.seg.mm,
                                  self.slots_base + SLOT_HEADER_BYTES,
                                  strides=(self.stride, 1))
        self.slot_meta = np.ndarray((self.n_slots, META_BYTES), np.uint8, self.seg.mm,
                                    self.slots_base + META_OFFSET, strides=(self.stride, 1))
        # Address of the futex word (the mapping stays put while these views live).
        self.notify_addr = self.hdr.ctypes.data + H_NOTIFY * 8

    @property
    def owner_pid(self) -> int:
        """Return the pid of the process that created the segment."""
        return int(self.hdr[H_OWNER_PID])

    def ext(self) -> memoryview:
        """Return the extension area (CUDA IPC handles live there)."""
        return memoryview(self.seg.mm)[HEADER_BYTES:HEADER_BYTES + self.ext_bytes]

    def registration_lock(self):
        """Hold the segment's registration lock (flock) in a ``with`` block."""
        return _Flock(self.seg.fd)

    def close(self):
        """Drop the numpy views and close the segment (its owner also unlinks it)."""
        self.hdr = self.readers = self.slot_hdr = self.payload = self.slot_meta = None
        self.seg.close()


class _Flock:
    def __init__(self, fd):
        self.fd = fd

    def __enter__(self):
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)


class Owner(NamedTuple):
    """The process that created a segment, as its header names it."""

    pid: int
    start_time: int  # clock ticks since boot (/proc/<pid>/stat field 22)
    boot_id: bytes


def read_owner(name: str) -> Owner | None:
    """Return the owner record of segment ``name``, or None if unreadable."""
    try:
        fd = os.open(shm.segment_path(name), os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = os.pread(fd, OWNER_BYTES, 0)
    finally:
        os.close(fd)
    if len(raw) < OWNER_BYTES:
        return None
    w = np.frombuffer(raw, np.uint64)
    if int(w[H_MAGIC]) != MAGIC:
        return None
    return Owner(int(w[H_OWNER_PID]), int(w[H_OWNER_START]), w[H_BOOT0:H_BOOT1 + 1].tobytes())


def segment_is_stale(name: str, grace_s: float = 5.0) -> bool:
    """
    Return whether segment ``name`` belongs to an owner that no longer runs.

    A segment whose header is not readable yet is stale only after
    ``grace_s`` (it may be a writer still initialising it).
    """
    owner = read_owner(name)
    if owner is None:
        try:
            age = time.time() - os.stat(shm.segment_path(name)).st_mtime
        except OSError:
            return False
        return age > grace_s
    if owner.boot_id != shm.boot_id():
        return True
    return not shm.process_alive(owner.pid, owner.start_time)


def reclaim_stale(domain: int | None = None) -> list[str]:
    """Unlink the stale UniLab segments (of ``domain``, or all) and return their names."""
    gone = []
    for name in shm.list_segments(domain):
        if segment_is_stale(name):
            try:
                os.unlink(shm.segment_path(name))
                gone.append(name)
            except FileNotFoundError:
                pass
    return gone
