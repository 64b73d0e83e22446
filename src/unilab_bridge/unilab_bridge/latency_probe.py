# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The robot double's latency probe (``bench deploy``), without ROS: joint state out -> command in.

In probe mode the double publishes one joint state per control period, at
deadline-scheduled times and stamped with them (so a controller that takes one
state per period by stamps takes every one), and times each command's arrival.
Cycle ``k`` runs from joint state ``k`` leaving to joint state ``k + 1``
leaving: its latency is the first command arriving in it, minus the send time;
a cycle without a command is a deadline miss (its command, if it comes later,
lands in a later cycle and is counted as ``extra_commands`` there). Latencies
above one control period therefore show up as misses, not as samples.

Measurement starts ``warmup`` cycles after the first command arrives (the
controller's start-up), and ends after ``cycles`` cycles.
"""

from __future__ import annotations

import numpy as np


class CycleLatency:
    """Per-cycle latency from a joint state leaving to the first command arriving."""

    def __init__(self, cycles: int, warmup: int = 50):
        if cycles < 1:
            raise ValueError(f'cycles must be >= 1, got {cycles}')
        self.cycles, self.warmup = int(cycles), int(warmup)
        self.latency_ns = np.full(self.cycles, -1, np.int64)  # -1: no command (a miss)
        self.index = -1 - self.warmup  # measured cycle of the last joint state; < 0: warm-up
        self.started = False           # a first command has arrived
        self.sent_ns = 0
        self.extra_commands = 0

    @property
    def done(self) -> bool:
        """Return whether every measured cycle is closed (the next joint state was sent)."""
        return self.index >= self.cycles

    def sent(self, t_ns: int) -> None:
        """Record joint state leaving at monotonic ``t_ns`` (closes the previous cycle)."""
        if self.started and not self.done:
            self.index += 1
        self.sent_ns = t_ns

    def arrived(self, t_ns: int) -> None:
        """Record a command arriving at monotonic ``t_ns``."""
        if not self.started:
            self.started = True
            return
        i = self.index
        if 0 <= i < self.cycles:
            if self.latency_ns[i] < 0:
                self.latency_ns[i] = t_ns - self.sent_ns
            else:
                self.extra_commands += 1

    def summary(self) -> dict:
        """Return the latencies (ms, cycles with a command) and the misses."""
        n = min(max(self.index, 0), self.cycles)
        lat = self.latency_ns[:n]
        hit = lat[lat >= 0] / 1e6
        return {'cycles': int(n), 'deadline_misses': int((lat < 0).sum()),
                'extra_commands': int(self.extra_commands),
                'latency_ms': [round(float(v), 4) for v in hit]}
