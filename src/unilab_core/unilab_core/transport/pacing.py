# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
When is the next message of a periodic stream due (ROS-free).

A reader that sleeps on a futex pays for the wake-up of a sleeping thread
(70-400 µs on a VM, more than copying 2.4 MB) on every message of a 20 Hz or
100 Hz sensor. Sensors are periodic, so a reader can wake itself a little
before the next message is due and poll across the due time instead: the
wake-up happens while nothing is waiting on it. :class:`ArrivalClock`
estimates the period from the arrivals (an exponential moving average of the
gaps) and says how long the reader may sleep before it should poll;
``poll_for`` is the poll itself (both backends' ``wait(spin_s=...)``).
"""

from __future__ import annotations

import time
from typing import Callable


class ArrivalClock:
    """Estimate the next arrival of a periodic stream from the past ones."""

    def __init__(self, alpha: float = 0.125, max_period_s: float = 1.0):
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f'alpha must be in (0, 1], got {alpha}')
        if max_period_s <= 0.0:
            raise ValueError(f'max_period_s must be > 0, got {max_period_s}')
        self.alpha = float(alpha)
        self.max_period_s = float(max_period_s)
        self.last: float | None = None
        self.period: float | None = None

    def observe(self, t: float) -> None:
        """Record an arrival at monotonic time ``t`` (s)."""
        if self.last is not None:
            gap = t - self.last
            if not 0.0 < gap <= self.max_period_s:
                self.period = None  # a pause or a clock step: not periodic right now
            elif self.period is None or not 0.25 * self.period <= gap <= 4.0 * self.period:
                self.period = gap  # first gap, or the rate changed: start over from it
            else:
                self.period += self.alpha * (gap - self.period)
        self.last = t

    def due(self) -> float | None:
        """Return when the next arrival is expected (monotonic s), None when unknown."""
        if self.last is None or self.period is None:
            return None
        return self.last + self.period

    def sleep_before_poll(self, now: float, lead_s: float) -> float | None:
        """
        Return how long to sleep before polling ``lead_s`` ahead of the due time.

        0.0 when the poll should start now; None when no period is known (sleep on the
        futex as usual).
        """
        due = self.due()
        if due is None:
            return None
        return max(0.0, due - lead_s - now)


def poll_for(has_news: Callable[[], bool], seconds: float) -> bool:
    """Poll ``has_news`` for up to ``seconds`` (yielding the GIL and CPU); return if it came."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if has_news():
            return True
        time.sleep(0)
    return False
