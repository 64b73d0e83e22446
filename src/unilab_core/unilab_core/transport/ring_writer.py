# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The owner and writer of a shared-memory ring (layout and memory ordering: ``ring_layout``).

Seqlock, writer side: ``begin`` makes the slot's generation odd, the caller
fills the payload, ``commit`` writes the slot header and makes the
generation even again (a ``fence()`` first where stores may be reordered).

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
``FUTEX_WAIT`` (``RingReader.wait``), which fails at once if the word
already moved. The same Dekker argument as for pins: either the writer sees
the flag and wakes, or the reader sees the new word and does not sleep.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Callable

import numpy as np
from unilab_core.transport import futex, shm
from unilab_core.transport.ring_layout import (
    ARCH_X86, fence, H_BOOT0, H_BOOT1, H_CAPACITY, H_EXT_BYTES, H_HEAD, H_LATEST, H_MAGIC,
    H_NOTIFY, H_NSLOTS, H_OWNER_PID, H_OWNER_START, H_POLICY, H_SELF_DESCRIBING, H_STRIDE,
    H_VERSION, HEADER_BYTES, MAGIC, META_BYTES, pack_latest, PAGE, POLICIES, R_CURSOR, R_PID,
    R_PIN, R_START, R_STATE, R_WAITING, R_WAKE, read_owner, ring_bytes, RingFullError,
    RingMapping, round_up, S_CLAIM, S_GEN, S_INDEX, S_META_KEY, S_META_LEN, S_NBYTES, S_PUB_NS,
    S_SEQ, S_STAMP, S_VERSION, segment_is_stale, SegmentBusyError, slot_stride, TransportError,
    VERSION)


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
        stride = slot_stride(capacity)
        ext = round_up(ext_bytes, PAGE)
        size = ring_bytes(capacity, n_slots, ext_bytes)
        try:
            seg = shm.Segment.create(name, size)
        except FileExistsError:
            if not segment_is_stale(name, grace_s=0.0):
                owner = read_owner(name)
                raise SegmentBusyError(
                    f'shared-memory segment `{name}` is owned by live process '
                    f'{owner.pid if owner else "?"}: is the same node running twice in one '
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
        self.m = RingMapping(seg)
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

    def min_cursor(self) -> int | None:
        """Return the lowest cursor of the registered readers (None without readers)."""
        active = self._active()
        if not active.any():
            return None
        return int(self.m.readers[active, R_CURSOR].min())

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
            slowest = self.min_cursor()
            if slowest is None:
                return
            lag = index - slowest
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
                slow = [int(self.m.readers[i, R_PID]) for i in np.flatnonzero(self._active())
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
            if not ARCH_X86:
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
                self.abort()
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
        if not ARCH_X86:
            fence()  # release: payload and slot header before the even generation
        sh[S_GEN] = g + 2
        sh[S_CLAIM] = 0
        hdr = self.m.hdr
        hdr[H_HEAD] = index + 1
        hdr[H_LATEST] = pack_latest(index, slot)
        # Stored last: a reader that sees this value also sees head / latest above (TSO;
        # the fence orders it elsewhere) and the futex compares exactly this word.
        hdr[H_NOTIFY] = (index + 1) & 0xFFFFFFFF
        fence()  # Dekker: the notify word before loading the readers' waiting flags
        if self.m.readers[:, R_WAITING].any():
            self.wakes += 1
            futex.wake(self.m.notify_addr)
        self.stats.writes += 1
        return slot, index

    def publish_ns(self, slot: int) -> int:
        """Return the monotonic time (ns) at which ``slot``'s message was committed."""
        return int(self.m.slot_hdr[slot, S_PUB_NS])

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
            self.abort()
            raise
        return self.commit(stamp_ns)

    def abort(self) -> None:
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
            self.m.close()
            self.m = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
