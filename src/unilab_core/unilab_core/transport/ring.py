# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A shared-memory ring of fixed-size slots with a seqlock per slot.

Layout (all counters are aligned little-endian uint64 words)::

    [header page: 4096 B]  magic, version, policy, n_slots, capacity, stride,
                           owner pid / start time / boot id, head, latest,
                           reader table (MAX_READERS x 8 words)
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
store, which the pin protocol below (Dekker-style: store mine, then load
yours) must forbid. ``fence()`` provides a full barrier from Python: an
uncontended ``threading.Lock`` release + acquire is a ``sem_post`` /
``sem_wait`` pair in CPython on Linux, i.e. a locked read-modify-write on
x86-64 (a full fence) and a release followed by an acquire on AArch64.

Delivery policies:

* ``latest`` (sensors): the writer never waits. A reader *pins* the newest
  slot (its reader-table entry names slot and index), then checks the
  generation; the writer, after making a slot's generation odd, checks the
  pins and skips a pinned slot. With a fence on both sides one of the two
  always sees the other, so a zero-copy view is never overwritten while it
  is pinned (the claim is a separate slot word; see ``_claim_latest_slot``).
  Messages a slow reader never looked at are counted as skips.
  If every slot is pinned (more concurrent pins than ``n_slots - 1``) the
  message is dropped and counted: never torn.
* ``reliable`` (training data): each reader's cursor (next index it will
  read) lives in the reader table; the writer writes index ``k`` only when
  every live reader's cursor is above ``k - n_slots``, waiting with a
  bounded timeout otherwise (``stalls``, ``RingFullError``), never
  overwriting. A reader holds a zero-copy view until ``release()``.

Readers that die (even by SIGKILL) are detected by pid + start time and
their pins / cursors dropped, so they never block the writer.

Wake-up without DDS: the writer stores ``index + 1`` into the header's
*notify* word after every commit and, if any reader's table entry says it
is waiting, issues a shared ``FUTEX_WAKE`` on that word (``futex.py``). A
reader sets its waiting flag, fences, re-checks for news and then sleeps in
``FUTEX_WAIT`` (which fails at once if the word already moved). The same
Dekker argument as for pins: either the writer sees the flag and wakes, or
the reader sees the new word and does not sleep.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import platform
import threading
import time
from typing import Callable

import numpy as np
from unilab_core.transport import futex, shm

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

# header words
H_MAGIC, H_VERSION, H_POLICY, H_NSLOTS, H_CAPACITY, H_STRIDE = 0, 1, 2, 3, 4, 5
H_OWNER_PID, H_OWNER_START, H_BOOT0, H_BOOT1 = 6, 7, 8, 9
H_HEAD, H_LATEST, H_READY, H_EXT_BYTES = 10, 11, 12, 13
H_NOTIFY = 14              # futex word (low 32 bits): index + 1 of the newest commit
H_SELF_DESCRIBING = 15     # 1: every slot carries its layout (readers need no descriptor)
READER_TABLE = 64          # first word of the reader table
READER_WORDS = 8
# reader-table fields
R_STATE, R_PID, R_START, R_CURSOR, R_PIN, R_PIN_INDEX = 0, 1, 2, 3, 4, 5
R_WAITING, R_WAKE = 6, 7   # asleep in FUTEX_WAIT; reads by futex wake-ups (not descriptors)
# slot-header words
S_GEN, S_INDEX, S_NBYTES, S_STAMP, S_PUB_NS, S_CLAIM = 0, 1, 2, 3, 4, 5
S_SEQ, S_VERSION, S_META_KEY, S_META_LEN = 6, 7, 8, 9

_ARCH_X86 = platform.machine().lower() in ('x86_64', 'amd64', 'i686', 'i386')
_fence_local = threading.local()


def fence() -> None:
    """Issue a full memory barrier (see the module docstring for why this works)."""
    lk = getattr(_fence_local, 'lock', None)
    if lk is None:
        lk = _fence_local.lock = threading.Lock()
        lk.acquire()
    lk.release()
    lk.acquire()


class TransportError(RuntimeError):
    """Base class of transport errors."""


class RingFullError(TransportError):
    """A reliable ring had no free slot within the timeout (a reader is too slow)."""


class SegmentBusyError(TransportError):
    """A live process already owns the segment name (two writers for one topic and node)."""


class StaleSlotError(TransportError):
    """A slot no longer holds the message a reader asked for."""


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


def ring_bytes(capacity: int, n_slots: int, ext_bytes: int = 0) -> int:
    """Return the segment size of a ring: header page, extension area, page-rounded slots."""
    stride = _round_up(SLOT_HEADER_BYTES + capacity, PAGE)
    return HEADER_BYTES + _round_up(ext_bytes, PAGE) + n_slots * stride


@dataclasses.dataclass
class WriterStats:
    """Counters of one writer (names as reported in diagnostics)."""

    writes: int = 0
    pinned_skips: int = 0       # latest: slots skipped because a reader pinned them
    dropped_all_pinned: int = 0  # latest: messages dropped, every slot pinned
    stalls: int = 0             # reliable: writes that had to wait for a free slot
    stall_s: float = 0.0        # reliable: total time waited
    timeouts: int = 0           # reliable: waits that ran out (RingFullError)
    readers_reaped: int = 0     # dead readers removed from the table


@dataclasses.dataclass
class ReaderStats:
    """Counters of one reader."""

    reads: int = 0
    skipped: int = 0        # latest: messages published but never read (reader too slow)
    torn: int = 0           # slot overwritten while being read: rejected, never delivered
    stale: int = 0          # asked for an index the slot no longer holds
    retries: int = 0


class _Mapped:
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

    def ext(self) -> memoryview:
        """Return the extension area (CUDA IPC handles live there)."""
        return memoryview(self.seg.mm)[HEADER_BYTES:HEADER_BYTES + self.ext_bytes]

    def registration_lock(self):
        """Hold the segment's registration lock (flock) in a ``with`` block."""
        return _Flock(self.seg.fd)

    def release_views(self):
        self.hdr = self.readers = self.slot_hdr = self.payload = self.slot_meta = None


class _Flock:
    def __init__(self, fd):
        self.fd = fd

    def __enter__(self):
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)


def read_owner(name: str) -> tuple[int, int, bytes] | None:
    """Return (pid, start time, boot id) of a segment's owner, or None if unreadable."""
    try:
        fd = os.open(shm.segment_path(name), os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = os.pread(fd, 80, 0)
    finally:
        os.close(fd)
    if len(raw) < 80:
        return None
    w = np.frombuffer(raw, np.uint64)
    if int(w[H_MAGIC]) != MAGIC:
        return None
    return int(w[H_OWNER_PID]), int(w[H_OWNER_START]), w[H_BOOT0:H_BOOT1 + 1].tobytes()


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
    pid, start, boot = owner
    if boot != shm.boot_id():
        return True
    return not shm.process_alive(pid, start)


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


class RingWriter:
    """The owner of a ring: creates the segment, writes slots, unlinks on close/exit."""

    def __init__(self, name: str, capacity: int, n_slots: int = 4, policy: str = 'latest',
                 timeout_s: float = 1.0, ext_bytes: int = 0,
                 on_stall: Callable[[float], None] | None = None,
                 self_describing: bool = False):
        if policy not in POLICIES:
            raise ValueError(f'policy must be one of {sorted(POLICIES)}, got `{policy}`')
        if not 2 <= n_slots <= 256:
            raise ValueError(f'a ring has 2..256 slots, got {n_slots}')
        if capacity <= 0:
            raise ValueError('slot capacity must be positive')
        self.policy = policy
        self.timeout_s = float(timeout_s)
        self.on_stall = on_stall
        self.stats = WriterStats()
        self.reclaimed: list[str] = []
        stride = _round_up(SLOT_HEADER_BYTES + capacity, PAGE)
        ext = _round_up(ext_bytes, PAGE)
        size = ring_bytes(capacity, n_slots, ext_bytes)
        try:
            seg = shm.Segment.create(name, size)
        except FileExistsError:
            if not segment_is_stale(name, grace_s=0.0):
                owner = read_owner(name)
                raise SegmentBusyError(
                    f'shared-memory segment `{name}` is owned by live process '
                    f'{owner[0] if owner else "?"}: is the same node running twice in one '
                    f'ROS domain?') from None
            os.unlink(shm.segment_path(name))
            self.reclaimed.append(name)
            seg = shm.Segment.create(name, size)
        hdr = np.ndarray((HEADER_BYTES // 8,), np.uint64, seg.mm, 0)
        hdr[H_VERSION] = VERSION
        hdr[H_POLICY] = POLICIES[policy]
        hdr[H_NSLOTS] = n_slots
        hdr[H_CAPACITY] = capacity
        hdr[H_STRIDE] = stride
        hdr[H_EXT_BYTES] = ext
        hdr[H_SELF_DESCRIBING] = int(self_describing)
        pid = os.getpid()
        hdr[H_OWNER_PID] = pid
        hdr[H_OWNER_START] = shm.process_start_time(pid)
        hdr[H_BOOT0:H_BOOT1 + 1] = np.frombuffer(shm.boot_id(), np.uint64)
        fence()
        hdr[H_MAGIC] = MAGIC  # last: readers accept the segment only once it is complete
        del hdr
        self.m = _Mapped(seg)
        self.name = name
        self.n_slots = n_slots
        self.capacity = capacity
        self._pids_checked_at = -1.0
        self._pending = None
        self.wakes = 0  # FUTEX_WAKE calls issued (only when a reader was waiting)

    # -- reader bookkeeping ------------------------------------------------------------
    def _active(self) -> np.ndarray:
        return self.m.readers[:, R_STATE] == 1

    def reap_dead_readers(self) -> int:
        """Drop the table entries (pins, cursors) of readers whose process is gone."""
        n = 0
        with self.m.registration_lock():
            for i in np.flatnonzero(self._active()):
                row = self.m.readers[i]
                if not shm.process_alive(int(row[R_PID]), int(row[R_START])):
                    row[R_PIN] = 0
                    row[R_WAITING] = 0
                    row[R_STATE] = 0
                    n += 1
        self.stats.readers_reaped += n
        return n

    def reader_count(self) -> int:
        """Return the number of registered readers."""
        return int(self._active().sum())

    def wait_for_readers(self, count: int, timeout_s: float) -> bool:
        """Wait until ``count`` readers registered (reliable rings lose nothing after that)."""
        deadline = time.monotonic() + timeout_s
        while self.reader_count() < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True

    # -- writing -----------------------------------------------------------------------
    def _reliable_wait(self, index: int) -> None:
        t0 = None
        sleep = 20e-6
        while True:
            active = self._active()
            if not active.any():
                return
            lag = index - int(self.m.readers[active, R_CURSOR].min())
            if lag < self.n_slots:
                if t0 is not None:
                    waited = time.monotonic() - t0
                    self.stats.stall_s += waited
                    if self.on_stall is not None:
                        self.on_stall(waited)
                return
            now = time.monotonic()
            if t0 is None:
                t0 = now
                self.stats.stalls += 1
                self.reap_dead_readers()
                continue
            if now - self._pids_checked_at > 0.05:
                self._pids_checked_at = now
                if self.reap_dead_readers():
                    continue
            if now - t0 > self.timeout_s:
                self.stats.timeouts += 1
                self.stats.stall_s += now - t0
                slow = [int(self.m.readers[i, R_PID]) for i in np.flatnonzero(active)
                        if index - int(self.m.readers[i, R_CURSOR]) >= self.n_slots]
                raise RingFullError(
                    f'ring `{self.name}`: no free slot for message {index} after '
                    f'{self.timeout_s:.3f} s; slow reader pid(s) {slow} hold all '
                    f'{self.n_slots} slots (reliable policy never overwrites)')
            time.sleep(sleep)
            sleep = min(sleep * 2, 1e-3)

    def _claim_latest_slot(self, index: int) -> int | None:
        """
        Return a slot that no reader pins, marked as claimed (latest policy).

        Dekker's protocol on (claim word, reader pin): the writer stores the
        claim, fences, then loads the pins; a reader stores its pin, fences,
        then loads the claim. At least one of them sees the other's store, so
        either the writer skips the slot or the reader refuses it. The claim
        is a word of its own (not the generation) so that a claim that backs
        off leaves the generation untouched and a held view's final check
        stays exact.
        """
        sh = self.m.slot_hdr
        readers = self.m.readers
        start = index % self.n_slots
        for k in range(self.n_slots):
            s = (start + k) % self.n_slots
            sh[s, S_CLAIM] = 1
            fence()
            if not ((readers[:, R_STATE] == 1) & (readers[:, R_PIN] == s + 1)).any():
                g = int(sh[s, S_GEN])
                sh[s, S_GEN] = g + 1      # odd: writing
                return s
            sh[s, S_CLAIM] = 0
            self.stats.pinned_skips += 1
            # A pinner that died (SIGKILL mid-read) would cost us this slot for good:
            # check the pinners' processes, at most every 10 ms (a /proc read each).
            now = time.monotonic()
            if now - self._pids_checked_at > 0.01:
                self._pids_checked_at = now
                if self.reap_dead_readers():
                    return self._claim_latest_slot(index)
        # every slot pinned: dead pinners may be holding them
        if self.reap_dead_readers():
            return self._claim_latest_slot(index)
        return None

    def begin(self, nbytes: int) -> tuple[int, int, np.ndarray] | None:
        """
        Claim the next slot for writing in place; return ``(slot, index, view)``.

        ``view`` is the writable uint8 payload of the slot (``nbytes`` long);
        fill it, then ``commit()``. Returns None when the message must be
        dropped (latest policy, every slot pinned). Reliable rings wait here
        (bounded by ``timeout_s``, then RingFullError).
        """
        if self._pending is not None:
            raise TransportError(f'ring `{self.name}`: commit the open loan first')
        if nbytes > self.capacity or nbytes < 0:
            raise ValueError(f'ring `{self.name}`: payload of {nbytes} B does not fit a slot '
                             f'of {self.capacity} B')
        index = int(self.m.hdr[H_HEAD])
        if self.policy == 'reliable':
            self._reliable_wait(index)
            slot = index % self.n_slots
            g = int(self.m.slot_hdr[slot, S_GEN])
            self.m.slot_hdr[slot, S_GEN] = g + 1
            if not _ARCH_X86:
                fence()
        else:
            slot = self._claim_latest_slot(index)
            if slot is None:
                self.stats.dropped_all_pinned += 1
                return None
            g = int(self.m.slot_hdr[slot, S_GEN]) - 1
        self._pending = (slot, index, g, nbytes)
        return slot, index, self.m.payload[slot, :nbytes]

    def commit(self, stamp_ns: int = 0, nbytes: int | None = None, seq: int = 0,
               version: int = 0, meta_key: int = 0,
               meta: bytes | None = None) -> tuple[int, int]:
        """
        Publish the slot claimed by ``begin``; return ``(slot, index)``.

        ``nbytes`` overrides the recorded payload size (device rings keep the
        payload in GPU memory and only the slot header here). ``seq``,
        ``version``, ``meta_key`` and ``meta`` (at most ``META_BYTES``; the
        layout of the payload, see channel.py) go into the slot header so a
        reader woken through the futex needs no descriptor. Readers asleep
        on the notify word are woken.
        """
        slot, index, g, claimed = self._pending
        nbytes = claimed if nbytes is None else int(nbytes)
        sh = self.m.slot_hdr[slot]
        if meta is not None:
            if len(meta) > META_BYTES:
                self._abort()
                raise ValueError(f'ring `{self.name}`: message layout of {len(meta)} B does not '
                                 f'fit the slot header ({META_BYTES} B): fewer tensors or '
                                 f'shorter names')
            if int(sh[S_META_KEY]) != meta_key or int(sh[S_META_LEN]) != len(meta):
                self.m.slot_meta[slot, :len(meta)] = np.frombuffer(meta, np.uint8)
        self._pending = None
        sh[S_INDEX] = index
        sh[S_NBYTES] = nbytes
        sh[S_STAMP] = stamp_ns
        sh[S_SEQ] = seq & 0xFFFFFFFFFFFFFFFF
        sh[S_VERSION] = version & 0xFFFFFFFFFFFFFFFF
        sh[S_META_KEY] = meta_key
        sh[S_META_LEN] = 0 if meta is None else len(meta)
        sh[S_PUB_NS] = time.monotonic_ns()
        if not _ARCH_X86:
            fence()  # release: payload and slot header before the even generation
        sh[S_GEN] = g + 2
        sh[S_CLAIM] = 0
        hdr = self.m.hdr
        hdr[H_HEAD] = index + 1
        hdr[H_LATEST] = ((index + 1) << 8) | slot
        # Stored last: a reader that sees this value also sees head / latest above (TSO;
        # the fence orders it elsewhere) and the futex compares exactly this word.
        hdr[H_NOTIFY] = (index + 1) & 0xFFFFFFFF
        fence()  # Dekker: the notify word before loading the readers' waiting flags
        if self.m.readers[:, R_WAITING].any():
            self.wakes += 1
            futex.wake(self.m.notify_addr)
        self.stats.writes += 1
        return slot, index

    def wake_reader_count(self) -> int:
        """Return the number of live registered readers that read on futex wake-ups."""
        r = self.m.readers
        return int(((r[:, R_STATE] == 1) & (r[:, R_WAKE] == 1)).sum())

    def write(self, parts: list[np.ndarray] | None = None, nbytes: int | None = None,
              stamp_ns: int = 0,
              fill: Callable[[np.ndarray], None] | None = None) -> tuple[int, int] | None:
        """
        Publish one message; return ``(slot, index)`` or None if dropped (latest, all pinned).

        The payload is the concatenation of ``parts`` (byte-viewable arrays) or
        whatever ``fill(view)`` writes into the slot's payload view; ``nbytes``
        is the payload size when ``fill`` is used.
        """
        if parts is not None:
            nbytes = sum(p.nbytes for p in parts)
        if nbytes is None:
            raise ValueError('give `parts` or `nbytes` with `fill`')
        got = self.begin(nbytes)
        if got is None:
            return None
        _, _, view = got
        try:
            if parts is not None:
                off = 0
                for p in parts:
                    view[off:off + p.nbytes] = p.reshape(-1).view(np.uint8)
                    off += p.nbytes
            else:
                fill(view)
        except BaseException:
            self._abort()
            raise
        return self.commit(stamp_ns)

    def _abort(self) -> None:
        """Give up an open loan: the slot keeps an odd generation until rewritten."""
        slot, index, g, nbytes = self._pending
        self._pending = None
        # Readers reject the half-written slot (index no longer matches after +2).
        self.m.slot_hdr[slot, S_INDEX] = 2 ** 63
        self.m.slot_hdr[slot, S_GEN] = g + 2
        self.m.slot_hdr[slot, S_CLAIM] = 0

    def close(self) -> None:
        """Unlink the segment (readers keep their mappings until they close)."""
        if self.m is not None:
            seg = self.m.seg
            self.m.release_views()
            self.m = None
            seg.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Message:
    """A delivered message: a read-only zero-copy view of the payload plus its slot metadata."""

    __slots__ = ('reader', 'slot', 'index', 'gen', 'nbytes', 'stamp_ns', 'publish_ns', 'data',
                 'released', 'seq', 'version', 'meta_key', 'meta_len')

    def __init__(self, reader, slot, index, gen, nbytes, stamp_ns, publish_ns, data,
                 seq=0, version=0, meta_key=0, meta_len=0):
        self.reader, self.slot, self.index, self.gen = reader, slot, index, gen
        self.nbytes, self.stamp_ns, self.publish_ns, self.data = nbytes, stamp_ns, publish_ns, data
        self.seq, self.version, self.meta_key, self.meta_len = seq, version, meta_key, meta_len
        self.released = False

    def meta(self) -> bytes:
        """Return the layout bytes the writer stored with this message (b'' if none)."""
        n = min(self.meta_len, META_BYTES)
        return self.reader.m.slot_meta[self.slot, :n].tobytes() if n else b''

    def still_valid(self) -> bool:
        """Return whether the slot still holds this message (it should while held)."""
        return self.reader.slot_matches(self.slot, self.index, self.gen)

    def release(self) -> bool:
        """Give the slot back; return whether it stayed intact the whole time."""
        return self.reader.release(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class RingReader:
    """Map a ring by name and read it (``latest``: newest message; ``reliable``: in order)."""

    def __init__(self, name: str, register: bool = True, start: int | None = None):
        seg = shm.Segment.open(name)
        try:
            self.m = _Mapped(seg)
        except BaseException:
            seg.close()
            raise
        self.name = name
        self.policy = self.m.policy
        self.n_slots = self.m.n_slots
        self.capacity = self.m.capacity
        self.stats = ReaderStats()
        self.row = None
        self._last_index = -1
        self._held = 0
        if register:
            self._register(start)

    def _register(self, start: int | None) -> None:
        pid = os.getpid()
        with self.m.registration_lock():
            free = np.flatnonzero(self.m.readers[:, R_STATE] == 0)
            if free.size == 0:
                raise TransportError(f'ring `{self.name}`: all {MAX_READERS} reader entries '
                                     f'are in use')
            i = int(free[0])
            row = self.m.readers[i]
            row[R_PID] = pid
            row[R_START] = shm.process_start_time(pid)
            row[R_PIN] = 0
            row[R_WAITING] = 0
            row[R_WAKE] = 0
            head = int(self.m.hdr[H_HEAD])
            # A reader that attaches on its first descriptor starts at that message (if the
            # slot still holds it, ``take`` succeeds; otherwise it is reported stale).
            row[R_CURSOR] = head if start is None else max(0, min(int(start), head))
            fence()
            row[R_STATE] = 1
        self.row = row
        # reliable: everything before the cursor is not ours; latest: the newest message
        # already in the ring is still news to a reader that just arrived.
        self._last_index = int(row[R_CURSOR]) - 1 if self.policy == 'reliable' else -1

    @property
    def head(self) -> int:
        """Return the number of messages written so far."""
        return int(self.m.hdr[H_HEAD])

    def slot_matches(self, slot: int, index: int, gen: int) -> bool:
        """Return whether ``slot`` holds message ``index`` at even generation ``gen``."""
        sh = self.m.slot_hdr[slot]
        if not _ARCH_X86:
            fence()
        return int(sh[S_GEN]) == gen and int(sh[S_INDEX]) == index

    def _view(self, slot: int, index: int, expect_gen: int | None = None) -> Message:
        sh = self.m.slot_hdr[slot]
        g = int(sh[S_GEN])
        if g & 1 or int(sh[S_INDEX]) != index or (expect_gen is not None and g != expect_gen):
            raise StaleSlotError(f'ring `{self.name}` slot {slot} no longer holds message '
                                 f'{index} (now {int(sh[S_INDEX])}, generation {g})')
        if not _ARCH_X86:
            fence()  # acquire: generation before the payload
        nbytes = int(sh[S_NBYTES])
        data = self.m.payload[slot, :min(nbytes, self.capacity)]
        data.flags.writeable = False
        return Message(self, slot, index, g, nbytes, int(sh[S_STAMP]), int(sh[S_PUB_NS]), data,
                       int(sh[S_SEQ]), int(sh[S_VERSION]), int(sh[S_META_KEY]),
                       int(sh[S_META_LEN]))

    # -- waiting (futex) ---------------------------------------------------------------
    @property
    def self_describing(self) -> bool:
        """Return whether every slot carries its layout (a futex-woken reader can decode it)."""
        return bool(int(self.m.hdr[H_SELF_DESCRIBING]))

    def set_wake_mode(self, on: bool) -> None:
        """Mark this reader as reading on futex wake-ups (the writer then may skip descriptors)."""
        if self.row is not None:
            self.row[R_WAKE] = int(on)

    def has_news(self) -> bool:
        """Return whether a message this reader has not taken yet is in the ring."""
        if self.policy == 'reliable':
            return self.row is not None and int(self.row[R_CURSOR]) < int(self.m.hdr[H_HEAD])
        return (int(self.m.hdr[H_LATEST]) >> 8) - 1 > self._last_index

    def wait(self, timeout_s: float, spin_s: float = 0.0) -> bool:
        """
        Block (GIL released) until ``has_news()`` or ``timeout_s``; return ``has_news()``.

        Needs a registered reader (its waiting flag tells the writer to wake it).
        Without futexes (not Linux x86-64 / AArch64) it polls every millisecond.
        ``spin_s`` > 0 first polls for that long, yielding the GIL and the CPU
        between polls (``sleep(0)``), before sleeping on the futex: waking a
        sleeping thread costs 70-150 µs on a VM, a poll a few µs, at the price
        of a busy core while spinning.
        """
        if self.has_news():
            return True
        if spin_s > 0.0:
            deadline = time.monotonic() + min(spin_s, timeout_s)
            while time.monotonic() < deadline:
                if self.has_news():
                    return True
                time.sleep(0)
        if not futex.available():
            deadline = time.monotonic() + timeout_s
            while not self.has_news() and time.monotonic() < deadline:
                time.sleep(0.001)
            return self.has_news()
        word = int(self.m.hdr[H_NOTIFY])
        self.row[R_WAITING] = 1
        fence()  # Dekker: my waiting flag before loading the notify word (in has_news/futex)
        try:
            if not self.has_news():
                futex.wait(self.m.notify_addr, word, timeout_s)
        finally:
            self.row[R_WAITING] = 0
        return self.has_news()

    def interrupt(self) -> None:
        """Wake every thread waiting on this ring's notify word (used to stop a waiter)."""
        if futex.available() and self.m is not None:
            futex.wake(self.m.notify_addr)

    # -- latest ------------------------------------------------------------------------
    def pin(self, slot: int, index: int) -> Message:
        """Pin ``slot`` holding message ``index`` (latest policy); raise StaleSlotError if not."""
        if self._held:
            raise TransportError('release the previous message before pinning the next')
        if not 0 <= slot < self.n_slots:
            raise StaleSlotError(f'ring `{self.name}` has no slot {slot}')
        row = self.row
        row[R_PIN_INDEX] = index
        row[R_PIN] = slot + 1
        fence()  # Dekker: my pin before loading the writer's claim
        try:
            if int(self.m.slot_hdr[slot, S_CLAIM]):
                raise StaleSlotError(f'ring `{self.name}` slot {slot} is being rewritten')
            msg = self._view(slot, index)
        except StaleSlotError:
            row[R_PIN] = 0
            raise
        self._held += 1
        return msg

    def read_latest(self) -> Message | None:
        """Pin and return the newest message, or None when there is nothing new."""
        for _ in range(8):
            word = int(self.m.hdr[H_LATEST])
            if word == 0:
                return None
            index, slot = (word >> 8) - 1, word & 0xFF
            if index <= self._last_index:
                return None
            try:
                msg = self.pin(slot, index)
            except StaleSlotError:
                self.stats.retries += 1
                continue  # a newer message replaced it: look again
            self.stats.skipped += max(0, index - self._last_index - 1)
            self._last_index = index
            self.stats.reads += 1
            return msg
        return None

    def read_copy(self, out: np.ndarray | None = None) -> tuple[np.ndarray, int] | None:
        """
        Copy the newest message without pinning (pure seqlock); None if nothing new.

        The copy is checked against the generation afterwards; a copy that was
        overwritten meanwhile is counted in ``torn`` and retried, never returned.
        """
        for _ in range(64):
            word = int(self.m.hdr[H_LATEST])
            if word == 0:
                return None
            index, slot = (word >> 8) - 1, word & 0xFF
            if index <= self._last_index:
                return None
            sh = self.m.slot_hdr[slot]
            g1 = int(sh[S_GEN])
            if g1 & 1 or int(sh[S_INDEX]) != index:
                self.stats.retries += 1
                continue
            if not _ARCH_X86:
                fence()
            nbytes = min(int(sh[S_NBYTES]), self.capacity)
            dst = np.empty(nbytes, np.uint8) if out is None else out[:nbytes]
            np.copyto(dst, self.m.payload[slot, :nbytes])
            if not _ARCH_X86:
                fence()
            if int(sh[S_GEN]) != g1 or int(sh[S_INDEX]) != index:
                self.stats.torn += 1
                continue
            self.stats.skipped += max(0, index - self._last_index - 1)
            self._last_index = index
            self.stats.reads += 1
            return dst, index
        return None

    # -- reliable ----------------------------------------------------------------------
    def read_next(self) -> Message | None:
        """Return the next unread message in order (reliable policy), or None."""
        if self._held:
            raise TransportError('release the previous message before reading the next')
        cursor = int(self.row[R_CURSOR])
        if cursor >= self.head:
            return None
        slot = cursor % self.n_slots
        msg = self._view(slot, cursor)
        self._held += 1
        self.stats.reads += 1
        self._last_index = cursor
        return msg

    def take(self, slot: int, index: int) -> Message:
        """Take message ``index`` from ``slot`` as named by a descriptor (either policy)."""
        if self.policy == 'latest':
            msg = self.pin(slot, index)
            self.stats.skipped += max(0, index - self._last_index - 1)
            self._last_index = max(self._last_index, index)
            self.stats.reads += 1
            return msg
        if self._held:
            raise TransportError('release the previous message before taking the next')
        if not 0 <= slot < self.n_slots:
            raise StaleSlotError(f'ring `{self.name}` has no slot {slot}')
        cursor = int(self.row[R_CURSOR])
        if index < cursor:
            raise StaleSlotError(f'ring `{self.name}`: message {index} was already consumed '
                                 f'(cursor {cursor})')
        msg = self._view(slot, index)
        self.stats.skipped += index - cursor  # lost before this reader registered
        self._held += 1
        self.stats.reads += 1
        self._last_index = index
        return msg

    def release(self, msg: Message) -> bool:
        """Release a message; return whether its slot stayed intact while held."""
        if msg.released:
            return True
        msg.released = True
        self._held -= 1
        ok = self.slot_matches(msg.slot, msg.index, msg.gen)
        if not ok:
            self.stats.torn += 1
        fence()  # all my loads of the payload before the store that frees the slot
        if self.policy == 'latest':
            self.row[R_PIN] = 0
        else:
            self.row[R_CURSOR] = max(int(self.row[R_CURSOR]), msg.index + 1)
        return ok

    def close(self) -> None:
        """Deregister and unmap."""
        if self.m is None:
            return
        if self.row is not None:
            with self.m.registration_lock():
                self.row[R_PIN] = 0
                self.row[R_WAITING] = 0
                self.row[R_WAKE] = 0
                self.row[R_STATE] = 0
        self.row = None
        seg = self.m.seg
        self.m.release_views()
        self.m = None
        seg.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
