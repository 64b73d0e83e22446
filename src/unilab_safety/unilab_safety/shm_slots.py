# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Shared-memory hand-over between the safety node and its real-time process.

One anonymous shared mapping (``memfd_create``, inherited by the child
through ``pass_fds``, so nothing is left under /dev/shm) holds:

- a control block of int64 words: the input slots' seqlock words, the output
  head, the stop / reset handshake, the loop's counters and timing figures;
- latest-value **input slots** (action ``[N, J]`` + reset mask; measured
  joint positions for the optional PID) written by the node and read by the
  loop, each guarded by a seqlock (Lamport; Linux ``include/linux/seqlock.h``);
- the **output ring** of ``[N, J]`` commands written by the loop and read by
  the node's publisher thread (single producer, single consumer);
- the ring of wake-up errors behind the period-error percentiles.

Why plain numpy loads and stores are enough is argued in
``unilab_core.transport.ring_layout`` (aligned 8-byte words are single-copy
atomic on x86-64 and AArch64; ``fence()`` orders them); this module uses its
``fence``.
Neither side ever waits for the other: a reader that finds a slot being
written (odd generation) or rewritten during its copy simply returns nothing
and tries at its next cycle or wake-up, so a descheduled writer can never stall
the SCHED_FIFO loop (no spinning, no lock, no priority inversion).
"""

from __future__ import annotations

import mmap
import os

import numpy as np
from unilab_core.transport.ring_layout import fence

from unilab_safety.loop import ActionIn
from unilab_safety.slots import OutputEntry

MAGIC = 0x31464153424C55  # b'ULBSAF1'
KINDS = ('command', 'fallback', 'estop')
_KIND_CODE = {k: i for i, k in enumerate(KINDS)}

# Control words.
C_MAGIC, C_OUT_HEAD, C_STOP, C_RESET_REQ, C_RESET_DONE, C_STATE = 0, 1, 2, 3, 4, 5
C_CYCLES, C_MISSES, C_EARLY, C_STATS_COUNT, C_STATS_MAX, C_TAKEN = 6, 7, 8, 9, 10, 11
C_FALLBACK_DELAY_MAX = 12
C_ARMED = 13     # node -> loop: 1 while commands may reach the actuators
C_IN = 16      # action slot: gen, puts, seq, version, stamp_ns, recv_ns, shape_ok, has_reset
C_STATE_IN = 24  # joint-state slot: gen, puts, stamp_ns (monotonic time received)
C_COUNTERS = 32
COUNTER_NAMES = ('passed', 'clamped', 'rejected', 'batches', 'commands', 'fallbacks',
                 'stale_events', 'estop_events', 'estop_rows', 'estopped', 'workspace_stops',
                 'pid_active_rows', 'resent_actions', 'unreferenced_actions',
                 'stale_state_actions', 'armed', 'unarmed_actions', 'early_actions',
                 'envelope_clamps', 'tracking_clamps', 'tracking_holds', 'tool_speed_clamps',
                 'stale_references')
N_CTRL = 64
assert C_COUNTERS + len(COUNTER_NAMES) <= N_CTRL, "the counters must fit the control block"
# Loop states (C_STATE).
STARTING, RUNNING, STOPPED, FAILED = 0, 1, 2, 3


class SharedBlock:
    """The views of one shared mapping; ``create`` makes it, ``attach`` maps an inherited fd."""

    def __init__(self, fd, n_rows, n_joints, capacity, stats_size):
        if capacity < 2 or capacity & (capacity - 1):
            raise ValueError(f'capacity must be a power of two >= 2, got {capacity}')
        if stats_size & (stats_size - 1):
            raise ValueError('stats_size must be a power of two')
        self.fd = fd
        self.n_rows, self.n_joints = n, j = int(n_rows), int(n_joints)
        self.capacity, self.stats_size = capacity, stats_size
        sizes = [('ctrl', np.int64, (N_CTRL,)), ('action', np.float64, (n, j)),
                 ('reset', np.uint8, (n,)), ('state', np.float64, (n, j)),
                 ('out', np.float64, (capacity, n, j)), ('out_meta', np.int64, (capacity, 5)),
                 ('errors', np.int64, (stats_size,))]
        offset, layout = 0, []
        for name, dtype, shape in sizes:
            nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
            layout.append((name, dtype, shape, offset))
            offset += -(-nbytes // 64) * 64  # each array on its own cache lines
        self.nbytes = offset
        if os.fstat(fd).st_size < offset:
            os.ftruncate(fd, offset)
        self._mm = mmap.mmap(fd, offset)
        for name, dtype, shape, off in layout:
            setattr(self, name, np.ndarray(shape, dtype, buffer=self._mm, offset=off))

    @classmethod
    def create(cls, n_rows, n_joints, capacity=64, stats_size=1 << 16):
        """Create a new zeroed mapping backed by an inheritable memfd."""
        fd = os.memfd_create('unilab_safety', 0)  # no MFD_CLOEXEC: the child inherits it
        block = cls(fd, n_rows, n_joints, capacity, stats_size)
        block.ctrl[C_MAGIC] = MAGIC
        return block

    @classmethod
    def attach(cls, fd, n_rows, n_joints, capacity, stats_size):
        """Map an inherited fd; raise ValueError if it is not a safety block."""
        block = cls(fd, n_rows, n_joints, capacity, stats_size)
        if int(block.ctrl[C_MAGIC]) != MAGIC:
            raise ValueError('shared block has the wrong magic')
        return block

    def close(self):
        """Unmap and close the fd (views must not be used afterwards)."""
        for name in ('ctrl', 'action', 'reset', 'state', 'out', 'out_meta', 'errors'):
            setattr(self, name, None)
        try:
            self._mm.close()
        except BufferError:  # a view still alive somewhere: leave the mapping to the GC
            pass
        os.close(self.fd)


class ActionWriter:
    """Node side of the action slot (one writer: the action callback)."""

    def __init__(self, block):
        self.b = block
        self.w = block.ctrl[C_IN:C_IN + 8]

    def put(self, item):
        """Copy ``item`` (an ActionIn) into the slot; the reader sees all of it or none."""
        w = self.w
        gen = int(w[0]) + 1
        w[0] = gen  # odd: being written
        fence()
        if item.shape_ok:
            np.copyto(self.b.action, item.action, casting='unsafe')
        if item.reset is not None:
            np.copyto(self.b.reset, item.reset, casting='unsafe')
        w[2], w[3], w[4], w[5] = item.seq, item.version, item.stamp_ns, item.recv_ns
        w[6], w[7] = int(bool(item.shape_ok)), int(item.reset is not None)
        w[1] += 1
        fence()
        w[0] = gen + 1  # even: complete

    @property
    def puts(self):
        """Return how many actions were put."""
        return int(self.w[1])


class ActionReader:
    """
    Loop side of the action slot; ``take`` has LatestSlot's contract.

    The returned ActionIn's arrays are this reader's own buffers, valid until
    the next ``take`` (the loop uses them within the cycle).
    """

    def __init__(self, block):
        self.b = block
        self.w = block.ctrl[C_IN:C_IN + 8]
        self._action = np.zeros_like(block.action)
        self._reset = np.zeros(block.n_rows, dtype=bool)
        self._seen = 0
        self.taken = 0
        self.torn = 0

    def take(self):
        """Return the newest complete action not returned before, else None (never waits)."""
        w = self.w
        gen = int(w[0])
        if gen == self._seen or gen & 1:
            return None  # nothing new, or the writer is mid-copy: next cycle
        fence()
        np.copyto(self._action, self.b.action)
        np.copyto(self._reset, self.b.reset, casting='unsafe')
        seq, version, stamp, recv = int(w[2]), int(w[3]), int(w[4]), int(w[5])
        shape_ok, has_reset = bool(w[6]), bool(w[7])
        fence()
        if int(w[0]) != gen:
            self.torn += 1  # rewritten while we copied; the newer one comes next
            return None
        self._seen = gen
        self.taken += 1
        self.b.ctrl[C_TAKEN] = self.taken
        return ActionIn(seq, version, stamp, self._action, self._reset if has_reset else None,
                        shape_ok, recv)

    @property
    def superseded(self):
        """Return how many actions were overwritten before being taken."""
        return max(0, int(self.w[1]) - self.taken)


class StateWriter:
    """Node side of the measured joint-position slot ([N, J]) and its time of receipt."""

    def __init__(self, block):
        self.b = block
        self.w = block.ctrl[C_STATE_IN:C_STATE_IN + 3]

    def put(self, positions, stamp_ns):
        """Copy ``positions`` [N, J] received at ``stamp_ns`` (CLOCK_MONOTONIC) into the slot."""
        w = self.w
        gen = int(w[0]) + 1
        w[0] = gen
        fence()
        np.copyto(self.b.state, positions, casting='unsafe')
        w[2] = stamp_ns
        w[1] += 1
        fence()
        w[0] = gen + 1


class StateReader:
    """Loop side of the joint-position slot: ``latest()`` is the last complete copy or None."""

    def __init__(self, block):
        self.b = block
        self.w = block.ctrl[C_STATE_IN:C_STATE_IN + 3]
        self._state = np.zeros_like(block.state)
        self._tmp = np.zeros_like(block.state)
        self._seen = 0
        self._have = False
        self.stamp_ns = 0  # when the newest complete positions were received

    def latest(self):
        """Return the newest complete positions (own buffer), or None before the first."""
        gen = int(self.w[0])
        if gen != self._seen and not gen & 1:
            fence()
            np.copyto(self._tmp, self.b.state)
            stamp = int(self.w[2])
            fence()
            if int(self.w[0]) == gen:
                np.copyto(self._state, self._tmp)
                self.stamp_ns = stamp
                self._seen = gen
                self._have = True
        return self._state if self._have else None


class SharedOutputRing:
    """
    Producer side: OutputRing's ``push`` into shared memory; ``commit`` publishes.

    Entries pushed during a cycle become visible to the reader only at
    ``commit``, after the loop has written its counters, so a published command
    is never ahead of the counters that account for it.
    """

    def __init__(self, block):
        self.b = block
        self._mask = block.capacity - 1
        self.head = int(block.ctrl[C_OUT_HEAD])
        self.overruns = 0  # counted by the reader (ShmOutputReader); kept for SafetyLoop

    def push(self, kind, seq, version, stamp_ns, command, t_ns=0):
        """Copy one command into the next slot (no allocation, not yet visible)."""
        i = self.head & self._mask
        np.copyto(self.b.out[i], command, casting='unsafe')
        m = self.b.out_meta[i]
        m[0], m[1], m[2], m[3], m[4] = _KIND_CODE[kind], seq, version, stamp_ns, t_ns
        self.head += 1

    @property
    def pending(self):
        """Return True if pushed entries wait for ``commit``."""
        return self.head != int(self.b.ctrl[C_OUT_HEAD])

    def commit(self):
        """Make every pushed entry visible to the reader."""
        fence()
        self.b.ctrl[C_OUT_HEAD] = self.head


class ShmOutputReader:
    """Consumer side of the shared output ring (the node's publisher thread)."""

    def __init__(self, block):
        self.b = block
        self.capacity = block.capacity
        self._mask = block.capacity - 1
        self.tail = 0
        self.overruns = 0

    def pop(self):
        """Return the oldest unread OutputEntry (a copy), or None if there is none."""
        ctrl = self.b.ctrl
        while True:
            head = int(ctrl[C_OUT_HEAD])
            if self.tail == head:
                return None
            if head - self.tail > self.capacity:
                self.overruns += head - self.tail - self.capacity
                self.tail = head - self.capacity
            fence()
            i = self.tail & self._mask
            m = self.b.out_meta[i]
            entry = OutputEntry(KINDS[int(m[0])], int(m[1]), int(m[2]), int(m[3]),
                                self.b.out[i].copy(), int(m[4]))
            self.tail += 1
            fence()
            # The producer may have lapped us while we copied: drop a torn entry.
            if int(ctrl[C_OUT_HEAD]) - (self.tail - 1) <= self.capacity:
                return entry
            self.overruns += 1
