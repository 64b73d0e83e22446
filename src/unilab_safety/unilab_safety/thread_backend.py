# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The safety loop in the node's process: ``rt_mode: thread`` and ``rt_mode: inline``.

Same interface as rt_process.RtProcess. Simpler and cheaper to start, but
the loop shares the GIL with rclpy's executor and every other thread of the
process, which bounds its wake-up tail (see docs/safety.md). The node's
default (``auto``) is the process mode in lock-step training and the inline
mode on a robot.

``thread``: the loop thread gates each action, woken through an eventfd.
``inline``: the thread that delivers an action gates it at once (in a
composed graph: inside the policy's publish), and the loop thread runs the
watchdog and the rest of the cycle on its timed ticks; one lock makes the two
take turns, so the loop state sees one cycle at a time as in the other modes.
No hand-over to another thread or process on the way to the actuators: the
lowest latency, for a robot whose watchdog deadline (control periods) is far
above the GIL's wake-up tail.
"""

from __future__ import annotations

import os
import select
import threading
import time

import numpy as np

from unilab_safety.build import build_gate, build_loop
from unilab_safety.params import SafetySpec
from unilab_safety.rt import RtLoop
from unilab_safety.slots import LatestArray, LatestSlot, OutputRing


class ThreadBackend:
    """RtLoop thread + SafetyLoop + in-process slots behind RtProcess's interface."""

    #: True when ``put`` has gated the action before it returns (``InlineBackend``)
    answers_inline = False

    def __init__(self, spec: SafetySpec, capacity=64):
        self.spec = spec
        s = spec.safety
        self.slot = LatestSlot()
        self.state = LatestArray()  # measured joint positions: the reference after resets
        self.ring = OutputRing(capacity, spec.num_envs, len(spec.joint_names))
        self.loop = build_loop(spec, self.slot, self.ring, self.state)
        self.gate = self.loop.gate
        # An action wakes the loop at once: answered now, not at the next tick (lock-step
        # training waits for every answer; on a robot it is control latency).
        self.wake_in = os.eventfd(0, os.EFD_NONBLOCK)
        self.wake_out = os.eventfd(0, os.EFD_NONBLOCK)
        self.rt = RtLoop(self._tick, s.rate_hz, s.busy_wait_us, s.rt_priority,
                         s.cpu_affinity, s.mlockall, wake_fd=self.wake_in)
        self.period_ns = self.rt.period_ns
        self.stats = self.rt.stats
        self._poll = select.poll()
        self._poll.register(self.wake_out, select.POLLIN)

    def _tick(self, deadline_ns):
        head = self.ring.head
        self.loop.cycle(deadline_ns)
        if self.ring.head != head:
            os.eventfd_write(self.wake_out, 1)

    def start(self, timeout_s=5.0):
        """Start the loop thread; return the RT answers."""
        return self.rt.start(timeout_s)

    def stop(self, timeout_s=2.0):
        """Stop the loop thread and wake the publisher."""
        self.rt.stop(timeout_s)
        os.eventfd_write(self.wake_out, 1)

    def close(self):
        """Release the eventfds."""
        for fd in (self.wake_in, self.wake_out):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.wake_in = self.wake_out = None

    granted = property(lambda self: self.rt.granted, doc='RT answers of the loop thread.')
    alive = property(lambda self: self.rt.alive, doc='True while the loop thread runs.')
    cycles = property(lambda self: self.rt.cycles, doc="The loop's timed cycles.")
    deadline_misses = property(lambda self: self.rt.deadline_misses, doc='Missed deadlines.')
    early_cycles = property(lambda self: self.rt.early_cycles, doc='Cycles run on a wake-up.')
    estopped = property(lambda self: self.loop.estopped, doc='True while e-stop is latched.')
    fallback_delay_max_ns = property(lambda self: self.loop.fallback_delay_max_ns,
                                     doc='Largest action-to-first-fallback delay (ns).')
    pid = None

    @property
    def error(self):
        """Return the loop's exception as text, or None."""
        return None if self.rt.error is None else repr(self.rt.error)

    def put(self, item):
        """Hand one action over; in lock-step mode wake the loop at once."""
        self.slot.put(item)
        if self.wake_in is not None:
            os.eventfd_write(self.wake_in, 1)

    def set_armed(self, armed):
        """Let commands reach the actuators (True) or stop them (False)."""
        self.loop.armed_request = bool(armed)

    def put_state(self, positions):
        """Hand the latest measured joint positions [N, J] over (a copy: the caller reuses)."""
        self.state.put(np.array(positions, dtype=np.float64))

    def request_reset(self):
        """Ask the loop to clear a latched e-stop; return the request id."""
        rid = self.loop.request_reset()
        if self.wake_in is not None:
            os.eventfd_write(self.wake_in, 1)
        return rid

    def reset_done(self, request_id):
        """Return True once the loop has handled request ``request_id``."""
        return self.loop.reset_done(request_id)

    def wait_output(self, timeout_s=None):
        """Block until output is ready or ``timeout_s`` passed (0.1 s if None)."""
        # A dead thread writes nothing: wake now and then so the caller sees ``alive``.
        if self._poll.poll(int((0.1 if timeout_s is None else timeout_s) * 1000)):
            try:
                os.eventfd_read(self.wake_out)
            except (BlockingIOError, TypeError):
                pass

    def pop(self):
        """Return the oldest unread output entry, or None."""
        return self.ring.pop()

    def counters(self):
        """Return the loop counters."""
        return self.loop.counters()

    def period_summary(self):
        """Return the period-error percentiles."""
        return self.stats.summary()


class InlineBackend(ThreadBackend):
    """``rt_mode: inline``: actions gated on the caller's thread; the loop thread watches."""

    answers_inline = True

    def __init__(self, spec: SafetySpec, capacity=64):
        self._turn = threading.Lock()  # one cycle at a time: the caller's or the loop's
        self._last_ns = 0  # the latest time a cycle ran at: the loop's time never goes back
        self._failed = None  # an exception a cycle raised on the caller's thread
        super().__init__(spec, capacity)
        # On a robot: a second gate of the same spec, its own state, that only rehearses.
        self._shadow = build_gate(spec) if spec.robot_rules else None
        self._last_item = None

    def rehearse(self) -> bool:
        """
        Gate the last action once more on the shadow gate, the result thrown away.

        ``unilab_core.rehearsal``: the gate's code runs warm when the next action comes.
        The shadow has its own state (references, counters): this gate's commands,
        counters and watchdog are untouched. Returns whether it ran (a robot's gate, an
        action gated before).
        """
        item = self._last_item
        if self._shadow is None or item is None or not item.shape_ok:
            return False
        measured = self.state.latest()
        self._shadow.filter(item.action, state_position=measured, measured=measured)
        return True

    def _tick(self, deadline_ns):
        with self._turn:
            if self._failed is not None:
                return
            # A tick's deadline can lie just before an action gated on the wall clock.
            self._last_ns = max(deadline_ns, self._last_ns)
            super()._tick(self._last_ns)

    def put(self, item):
        """
        Gate one action now, on this thread; its answer is in the ring on return.

        A cycle that raises ends the loop as in the other modes (``alive`` turns
        False, ``error`` says why, the node then publishes the e-stop hold), and
        the exception goes no further: the caller is the node's action callback.
        """
        with self._turn:
            if self._failed is not None:
                return
            self.slot.put(item)
            self._last_item = item
            # The wall clock, as the loop's ticks (CLOCK_MONOTONIC deadlines): the step
            # credit and the watchdog compare the two.
            self._last_ns = max(time.monotonic_ns(), self._last_ns)
            try:
                self.loop.cycle(self._last_ns)
            except Exception as exc:  # noqa: B902 - reported through ``error``, never silent
                self._failed = exc
        if self._failed is not None:
            self.stop()  # outside the lock: the loop thread may be waiting for it

    alive = property(lambda self: self._failed is None and self.rt.alive,
                     doc='True while the loop runs and no cycle has failed.')

    @property
    def error(self):
        """Return the exception that ended the loop as text, or None."""
        if self._failed is not None:
            return repr(self._failed)
        return super().error
