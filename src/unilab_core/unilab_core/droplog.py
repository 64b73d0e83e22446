# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Count dropped inputs per kind and decide which drops to log (no ROS).

A node that rejects a malformed message must say so, but a sensor that sends
garbage at 100 Hz must not flood the log (every line costs time on the control
path and hides everything else). :class:`DropLog` counts every drop per kind;
the first drop of a kind is logged at once with its reason, later ones of the
same kind at most once per ``period_s``, as one line with the number dropped
since the last line. The counts are what diagnostics and summaries report.
"""

from __future__ import annotations

import time
from typing import Callable


class DropLog:
    """Per-kind drop counters with a rate-limited log line per kind."""

    def __init__(self, period_s: float = 10.0, clock: Callable[[], float] = time.monotonic):
        self.period_s = float(period_s)
        self.clock = clock
        #: Drops per kind since start.
        self.counts: dict[str, int] = {}
        #: Log lines returned per kind.
        self.logged: dict[str, int] = {}
        self._since: dict[str, int] = {}  # drops not mentioned by a log line yet
        self._last: dict[str, float] = {}  # when a line for the kind was last returned

    @property
    def total(self) -> int:
        """Return the number of drops of every kind."""
        return sum(self.counts.values())

    def drop(self, kind: str, why: str) -> str | None:
        """Count one drop of ``kind``; return the line to log now, or None (rate limit)."""
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self._since[kind] = self._since.get(kind, 0) + 1
        now = self.clock()
        last = self._last.get(kind)
        if last is None:
            line = (f'dropping invalid {kind}: {why} (further drops of this kind are counted; '
                    f'logged at most every {self.period_s:g} s)')
        elif now - last >= self.period_s:
            line = (f'dropped {self._since[kind]} invalid {kind} in the last {now - last:.0f} s '
                    f'({self.counts[kind]} in all); latest: {why}')
        else:
            return None
        self._last[kind] = now
        self._since[kind] = 0
        self.logged[kind] = self.logged.get(kind, 0) + 1
        return line
