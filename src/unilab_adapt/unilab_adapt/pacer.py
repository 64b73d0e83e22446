# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Yielding to the control loop: the adapter's work paused around each control step.

The adapter runs beside a robot's control loop on the same few cores. Under
SCHED_IDLE it never takes a core the loop is waiting for, yet its fine-tuning
and simulation test still slow the loop's steps: the loop's code and data are
evicted from the caches it shares with them, and on a small machine the two
contend for memory. The loop steps at a known period, so the adapter can stay
out of its way: every rollout chunk is stamped with the wall clock as its
step's command has gone out (``policy_node``), which gives the phase of the
steps; the adapter's work calls ``pause()`` between small pieces (a minibatch,
a simulation step), and inside a quiet window -- from ``before_s`` ahead of a
step's command being due out to ``after_s`` after it (a slow step still
running) -- ``pause`` sleeps until the window has passed.

Yielding is off when it cannot help: no control rate known, a quiet window
over ``MAX_QUIET_SHARE`` of a period (the learner would barely run: with the
default 7 ms window, above about 100 Hz the steps come too fast to yield around;
SCHED_IDLE alone keeps the loop first there), or
no chunk for ``STALE_S`` (the robot is not acting: nothing to stay out of the
way of). What was paused is counted (``pauses``, ``paused_s``). A stamp from
the future (more than a period ahead of this host's clock: another host's
clock, or a broken sender) is not taken, so it cannot switch yielding off for
good; such stamps are counted (``future_stamps``).
"""

from __future__ import annotations

import time
from typing import Callable

#: Without a chunk for this long, the phase is no longer trusted: no pauses.
STALE_S = 1.0
#: Yielding is off where the quiet windows would take more of each period than this.
MAX_QUIET_SHARE = 0.75


class ControlPacer:
    """Pause a learner's work in the quiet windows around the control steps."""

    def __init__(self, control_rate_hz: float, before_s: float, after_s: float,
                 clock: Callable[[], int] = time.time_ns,
                 sleep: Callable[[float], None] = time.sleep):
        self.period_ns = int(1e9 / control_rate_hz) if control_rate_hz > 0 else 0
        self.before_ns, self.after_ns = int(before_s * 1e9), int(after_s * 1e9)
        quiet = self.before_ns + self.after_ns
        self.enabled = self.period_ns > 0 and 0 < quiet <= MAX_QUIET_SHARE * self.period_ns
        self.clock, self.sleep = clock, sleep
        self.last_end_ns: int | None = None
        self.pauses = 0
        self.paused_ns = 0
        self.future_stamps = 0

    def describe(self) -> str:
        """Return how the pacer acts, for the node's start-up log."""
        if self.enabled:
            return (f'yielding {self.before_ns / 1e6:g} ms before to {self.after_ns / 1e6:g} '
                    f'ms after each control step (period {self.period_ns / 1e6:g} ms)')
        if not self.period_ns:
            return 'not yielding around control steps (control rate unknown)'
        if self.before_ns + self.after_ns == 0:
            return 'not yielding around control steps (switched off)'
        return (f'not yielding around control steps: the quiet window '
                f'({(self.before_ns + self.after_ns) / 1e6:g} ms) is over '
                f'{MAX_QUIET_SHARE:g} of the period ({self.period_ns / 1e6:g} ms)')

    def observe(self, end_ns: int) -> None:
        """Take a control step's end (a rollout chunk's stamp, wall clock ns; one caller)."""
        if end_ns <= 0:
            return  # an unstamped chunk (an older publisher) says nothing of the phase
        if end_ns > self.clock() + self.period_ns:
            self.future_stamps += 1
            return
        if self.last_end_ns is None or end_ns > self.last_end_ns:
            self.last_end_ns = int(end_ns)

    def quiet_left_ns(self, now_ns: int) -> int:
        """Return how long the quiet window around ``now_ns`` still lasts (0: none)."""
        last = self.last_end_ns
        if not self.enabled or last is None:
            return 0
        age = now_ns - last
        if age < 0 or age > STALE_S * 1e9:
            return 0
        phase = age % self.period_ns  # since the latest expected end of a step
        if phase <= self.after_ns:
            return self.after_ns - phase
        if phase >= self.period_ns - self.before_ns:
            return self.period_ns + self.after_ns - phase
        return 0

    def pause(self) -> None:
        """Sleep through the current quiet window, if any."""
        left = self.quiet_left_ns(self.clock())
        if left > 0:
            self.pauses += 1
            self.paused_ns += left
            self.sleep(left / 1e9)

    def counters(self) -> dict:
        """Return the pauses so far and the time spent in them (seconds)."""
        return {'pauses': self.pauses, 'paused_s': round(self.paused_ns / 1e9, 3),
                'future_stamps': self.future_stamps}
