# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Rehearse a periodic control path a little before its next input is due (ROS-free).

A robot's joint states come every 20 ms at 50 Hz; between two of them the deploy
process sleeps, and whatever else runs on the core (the robot's driver, DDS, other
processes) takes the caches and branch predictors the control path had warmed. The
next pass then runs cold: timed in one process, the same deploy chain took several
times longer with 20 ms pauses between passes than back to back. ``Rehearsal`` runs the
path's own work once, ``lead_s`` before the next input is due (estimated from the
arrivals by :class:`~unilab_core.transport.pacing.ArrivalClock`), on the last input and
with every result thrown away, so the real pass that follows finds its code and data
warm. A step must change nothing anyone can see: no publish, no counter but its own,
no random number drawn, no state the next real pass reads.

The executor's thread runs it (``unilab_core.ros.runtime.spin_nodes`` asks
``wait_s`` how long it may sleep, then ``run``), between callbacks, so a rehearsal
never races the real pass. A stream faster than twice the lead (joint states at 500
Hz and a lead of 4 ms) is not rehearsed: the rehearsal would come right after the real
pass, warming nothing, at the cost of a second pass per input.
"""

from __future__ import annotations

from typing import Callable

from unilab_core.transport.pacing import ArrivalClock


class Rehearsal:
    """Run ``steps`` once per input, ``lead_s`` before the input is due."""

    def __init__(self, lead_s: float, clock: ArrivalClock | None = None,
                 counters: dict | None = None, log: Callable[[str], None] = print):
        """
        ``counters``: a node's counters dict to count in (its keys added), else our own.

        ``log``: where a step's error is said, the first time that step fails.
        """
        if not lead_s > 0.0:
            raise ValueError(f'lead_s must be > 0, got {lead_s}')
        self.lead_s = float(lead_s)
        self.clock = clock if clock is not None else ArrivalClock()
        self.steps: list[Callable[[], None]] = []
        self._done_for: float | None = None  # the due time last rehearsed (or skipped)
        self.counters = counters if counters is not None else {}
        self.counters.update(rehearsals=0, rehearsals_late=0, rehearsal_errors=0)
        self.log = log
        self._failed: set = set()  # steps whose error was said

    def add(self, step: Callable[[], None]) -> None:
        """Add a step; steps run in the order added (the chain's order)."""
        self.steps.append(step)

    def observe(self, t: float) -> None:
        """Record that an input arrived (and its real pass ran) at monotonic ``t`` (s)."""
        self.clock.observe(t)

    def _pending(self) -> float | None:
        """Return the due time to rehearse for, None when there is none."""
        due, period = self.clock.due(), self.clock.period
        if due is None or not self.steps or due == self._done_for:
            return None
        if period < 2.0 * self.lead_s:
            return None  # inputs too close together: nothing would stay cold between
        return due

    def wait_s(self, now: float) -> float | None:
        """Return how long the caller may sleep before ``run`` (0: now); None: nothing due."""
        due = self._pending()
        if due is None:
            return None
        return max(0.0, due - self.lead_s - now)

    def run(self, now: float) -> bool:
        """
        Rehearse once if it is time (``wait_s`` gave 0); return whether the steps ran.

        A rehearsal starts in the first half of the lead only: later (the executor woke
        late, or the input is late) it could still be running when the input comes and
        would delay its real pass: counted (``rehearsals_late``), skipped. A step that
        raises is counted (``rehearsal_errors``; its first error logged) and the others
        still run: a rehearsal only warms, it never stops the real path.
        """
        due = self._pending()
        if due is None or now < due - self.lead_s:
            return False
        self._done_for = due
        if now > due - 0.5 * self.lead_s:
            self.counters['rehearsals_late'] += 1
            return False
        for step in self.steps:
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - a warm-up never takes the path down
                self.counters['rehearsal_errors'] += 1
                name = getattr(step, '__qualname__', repr(step))
                if name not in self._failed:
                    self._failed.add(name)
                    self.log(f'rehearsal step {name} failed (counted in rehearsal_errors; '
                             f'the real path is not affected): {exc}')
        self.counters['rehearsals'] += 1
        return True
