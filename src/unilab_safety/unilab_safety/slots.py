# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Lock-free hand-over between ROS callbacks and the real-time loop.

Both structures rely on one fact of CPython: storing or loading a reference
in an attribute or a list item is atomic (one bytecode under the GIL; the
free-threaded build keeps it atomic with per-object locks). So the writer
never waits on the reader and neither takes a lock, which a SCHED_FIFO
thread must not do (priority inversion).

- :class:`LatestSlot`: one writer, one reader, latest value wins (input).
- :class:`OutputRing`: single-producer single-consumer ring of preallocated
  ``[N, J]`` command buffers plus metadata (output); the reader detects a
  slot overwritten while it copied, like a seqlock.
"""

import time
from typing import NamedTuple

import numpy as np


class LatestSlot:
    """
    Hold the latest item put; ``take`` returns each put item at most once.

    ``puts`` counts writes and ``taken`` counts reads that returned an item,
    so ``puts - taken`` items were overwritten before the reader saw them
    (latest-value semantics: a newer command makes an older one worthless).
    """

    def __init__(self):
        self._item = (0, None)  # (put count, value): swapped as one reference
        self.puts = 0
        self.taken = 0
        self._seen = 0

    def put(self, value):
        """Store ``value`` (writer side; allocates one small tuple)."""
        self.puts += 1
        self._item = (self.puts, value)

    def take(self):
        """Return the newest item not returned before, else None (reader side, no allocation)."""
        count, value = self._item
        if count == self._seen:
            return None
        self._seen = count
        self.taken += 1
        return value

    @property
    def superseded(self):
        """Return how many items were overwritten before being taken."""
        # Racy by at most one in-flight put; used for diagnostics only.
        return max(0, self.puts - self.taken)


class LatestArray:
    """Latest-value holder of one array (measured joint positions) and its time of receipt."""

    def __init__(self):
        self._item = (0, None)  # (stamp_ns, value), swapped as one reference

    def put(self, value, stamp_ns=None):
        """Store ``value`` (not copied: the writer must not modify it afterwards)."""
        self._item = (time.monotonic_ns() if stamp_ns is None else int(stamp_ns), value)

    def latest(self):
        """Return the newest value, or None before the first."""
        return self._item[1]

    @property
    def stamp_ns(self):
        """Return when the newest value was received (CLOCK_MONOTONIC ns; 0 before one)."""
        return self._item[0]


class OutputEntry(NamedTuple):
    """One command read back from an OutputRing (the array is the reader's copy)."""

    kind: str
    seq: int
    version: int
    stamp_ns: int
    command: np.ndarray
    t_ns: int  # when the answered action was received (0 for fallbacks)


class OutputRing:
    """
    Single-producer single-consumer ring of ``capacity`` commands of shape ``[N, J]``.

    The producer (RT loop) copies into a preallocated slot and then bumps
    ``head``; the consumer (publisher thread) reads slots ``tail .. head-1``.
    A consumer that falls ``capacity`` entries behind loses the oldest ones,
    counted in ``overruns``; a slot overwritten during the copy is detected
    by re-reading ``head`` afterwards and dropped (also an overrun).
    """

    def __init__(self, capacity, n_rows, n_joints):
        if capacity < 2 or capacity & (capacity - 1):
            raise ValueError(f'capacity must be a power of two >= 2, got {capacity}')
        self.capacity = capacity
        self._mask = capacity - 1
        self.data = np.zeros((capacity, n_rows, n_joints), dtype=np.float64)
        self.kind = [''] * capacity
        self.meta = np.zeros((capacity, 4), dtype=np.int64)  # seq, version, stamp_ns, t_ns
        self.head = 0  # entries written (producer only)
        self.tail = 0  # entries consumed (consumer only)
        self.overruns = 0

    def push(self, kind, seq, version, stamp_ns, command, t_ns=0):
        """Copy one command in (producer side, no allocation)."""
        i = self.head & self._mask
        np.copyto(self.data[i], command, casting='unsafe')
        self.kind[i] = kind
        m = self.meta[i]
        m[0] = seq
        m[1] = version
        m[2] = stamp_ns
        m[3] = t_ns
        self.head += 1  # publish only after the slot is complete

    def pop(self):
        """Return the oldest unread OutputEntry (a copy), or None if the ring is empty."""
        while True:
            head = self.head
            if self.tail == head:
                return None
            if head - self.tail > self.capacity:
                self.overruns += head - self.tail - self.capacity
                self.tail = head - self.capacity
            i = self.tail & self._mask
            entry = OutputEntry(self.kind[i], int(self.meta[i, 0]), int(self.meta[i, 1]),
                                int(self.meta[i, 2]), self.data[i].copy(), int(self.meta[i, 3]))
            self.tail += 1
            # The producer may have lapped us while we copied: drop a torn entry.
            if self.head - (self.tail - 1) <= self.capacity:
                return entry
            self.overruns += 1
