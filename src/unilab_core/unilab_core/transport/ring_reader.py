# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Readers of a shared-memory ring: zero-copy views of its slots (layout, ordering: ``ring_layout``).

Seqlock, reader side: a slot is taken only at an even generation with the
expected message index, and checked again when its view is released
(``Message.release``) or after a copy (``read_copy``); where loads may be
reordered a ``fence()`` sits between the generation and the payload.

``latest``: the reader stores its pin (slot and index in its reader-table
entry), fences, then loads the writer's claim word of that slot: one half
of the Dekker protocol whose other half, and why it never lets a pinned
view be overwritten, is ``RingWriter._claim_latest_slot``. ``reliable``:
the reader's cursor in the table is what the writer waits for; ``release``
advances it.

Waiting (``wait``): the reader sets its waiting flag, fences, re-checks for
news and then sleeps in ``FUTEX_WAIT`` on the header's notify word, which
fails at once if the word already moved. With the writer's half (store the
notify word, fence, load the waiting flags) either the writer sees the flag
and wakes, or the reader sees the new word and does not sleep.
"""

from __future__ import annotations

import dataclasses
import os
import time

import numpy as np
from unilab_core.transport import futex, shm
from unilab_core.transport.pacing import poll_for
from unilab_core.transport.ring_layout import (
    ARCH_X86, fence, H_HEAD, H_LATEST, H_NOTIFY, H_SELF_DESCRIBING, MAX_READERS, META_BYTES,
    R_CURSOR, R_PID, R_PIN, R_PIN_INDEX, R_START, R_STATE, R_WAITING, R_WAKE, RingMapping,
    S_CLAIM, S_GEN, S_INDEX, S_META_KEY, S_META_LEN, S_NBYTES, S_PUB_NS, S_SEQ, S_STAMP,
    S_VERSION, StaleSlotError, TransportError, unpack_latest)


@dataclasses.dataclass
class ReaderStats:
    """Counters of one reader."""

    reads: int = 0
    skipped: int = 0        # latest: messages published but never read (reader too slow)
    torn: int = 0           # slot overwritten while being read: rejected, never delivered
    retries: int = 0


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
            self.m = RingMapping(seg)
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

    @property
    def owner_pid(self) -> int:
        """Return the pid of the ring's writer (a restarted writer has a new one)."""
        return self.m.owner_pid

    def already_read(self, index: int) -> bool:
        """Return whether this registered reader already took (or skipped) message ``index``."""
        if self.row is None:
            return False
        if self.policy == 'reliable':
            return index < int(self.row[R_CURSOR])
        return index <= self._last_index

    def slot_matches(self, slot: int, index: int, gen: int) -> bool:
        """Return whether ``slot`` holds message ``index`` at even generation ``gen``."""
        sh = self.m.slot_hdr[slot]
        if not ARCH_X86:
            fence()
        return int(sh[S_GEN]) == gen and int(sh[S_INDEX]) == index

    def _view(self, slot: int, index: int, expect_gen: int | None = None) -> Message:
        sh = self.m.slot_hdr[slot]
        g = int(sh[S_GEN])
        if g & 1 or int(sh[S_INDEX]) != index or (expect_gen is not None and g != expect_gen):
            raise StaleSlotError(f'ring `{self.name}` slot {slot} no longer holds message '
                                 f'{index} (now {int(sh[S_INDEX])}, generation {g})')
        if not ARCH_X86:
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
        return unpack_latest(int(self.m.hdr[H_LATEST]))[0] > self._last_index

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
        if spin_s > 0.0 and poll_for(self.has_news, min(spin_s, timeout_s)):
            return True
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

    def _newest_unread(self) -> tuple[int, int] | None:
        """Return ``(index, slot)`` of the newest message if this reader has not had it."""
        word = int(self.m.hdr[H_LATEST])
        if word == 0:
            return None
        index, slot = unpack_latest(word)
        return None if index <= self._last_index else (index, slot)

    def _count_read(self, index: int) -> None:
        """Count message ``index`` as read and the unread ones before it as skipped."""
        self.stats.skipped += max(0, index - self._last_index - 1)
        self._last_index = max(self._last_index, index)
        self.stats.reads += 1

    def read_latest(self) -> Message | None:
        """Pin and return the newest message, or None when there is nothing new."""
        for _ in range(8):
            newest = self._newest_unread()
            if newest is None:
                return None
            index, slot = newest
            try:
                msg = self.pin(slot, index)
            except StaleSlotError:
                self.stats.retries += 1
                continue  # a newer message replaced it: look again
            self._count_read(index)
            return msg
        return None

    def read_copy(self, out: np.ndarray | None = None) -> tuple[np.ndarray, int] | None:
        """
        Copy the newest message without pinning (pure seqlock); None if nothing new.

        The copy is checked against the generation afterwards; a copy that was
        overwritten meanwhile is counted in ``torn`` and retried, never returned.
        """
        for _ in range(64):
            newest = self._newest_unread()
            if newest is None:
                return None
            index, slot = newest
            sh = self.m.slot_hdr[slot]
            g1 = int(sh[S_GEN])
            if g1 & 1 or int(sh[S_INDEX]) != index:
                self.stats.retries += 1
                continue
            if not ARCH_X86:
                fence()
            nbytes = min(int(sh[S_NBYTES]), self.capacity)
            dst = np.empty(nbytes, np.uint8) if out is None else out[:nbytes]
            np.copyto(dst, self.m.payload[slot, :nbytes])
            if not ARCH_X86:
                fence()
            if int(sh[S_GEN]) != g1 or int(sh[S_INDEX]) != index:
                self.stats.torn += 1
                continue
            self._count_read(index)
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
            self._count_read(index)
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
        self.m.close()
        self.m = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
