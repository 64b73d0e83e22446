# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A training run's live curves from the graph's statuses on ``/diagnostics``.

Three curves over env steps (``CURVES``): the trainer's mean return of the last
episodes (its last metrics row's ``charts/mean_return``, which it repeats in its status
beside ``updates`` and ``env_steps``: ``TRAINER_STATUS_METRICS``), and the success rate
and the gate's clamp share over the interval since the previous point, from every
node's cumulative counters (``unilab_core.health.RunMetrics``, the trainer's own
computation of its metrics row). A point comes with each trainer status whose
``updates`` grew, i.e. about once per diagnostics period: a trainer that updates many
times a second would give rows whose intervals hold no new counters (NaN), so the
rates are taken over the view's own intervals instead. NaN (no episode ended, no
action gated) is kept: the plot leaves a gap.
"""

from __future__ import annotations

import math

import numpy as np
from unilab_core.health import RunMetrics, TRAINER_STATUS_METRICS

#: the curves, by metric name (the trainer's and RunMetrics' names)
CURVES = ('charts/mean_return', 'episodes/success_rate', 'safety/clamp_share')
#: points kept per curve; beyond, every second one is dropped (the curve keeps its span)
CAPACITY = 4096


def _float(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def is_trainer_status(values: dict) -> bool:
    """Return whether a status's values are the trainer's (its counters and its return)."""
    return 'updates' in values and 'env_steps' in values and all(
        k in values for k in TRAINER_STATUS_METRICS)


class TrainingCurves:
    """Points ``(env_steps, value)`` of each of ``CURVES``, one per trainer status that moved."""

    def __init__(self, capacity: int = CAPACITY):
        if capacity < 2:
            raise ValueError(f'capacity must be >= 2, got {capacity}')
        self.x = np.zeros(capacity, np.float64)
        self.y = np.zeros((len(CURVES), capacity), np.float64)
        self.count = 0
        self.updates = 0  # the trainer's last update seen (0: none yet)
        self.rates = RunMetrics()

    def observe(self, node: str, values: dict) -> bool:
        """Take one node's status values (strings, as published); return whether a point came."""
        self.rates.observe(node, values)
        if not is_trainer_status(values):
            return False
        u = _float(values['updates'])
        updates = int(u) if math.isfinite(u) else 0
        if updates < self.updates:  # a new run (or a restarted trainer): start again
            self.count = self.updates = 0
            self.rates = RunMetrics()
            self.rates.observe(node, values)
        if updates <= self.updates:
            return False
        self.updates = updates
        row = self.rates.row()
        row.update({k: _float(values[k]) for k in TRAINER_STATUS_METRICS})
        if self.count == self.x.size:  # full: halve the resolution, keep the span
            keep = self.x.size // 2
            self.x[:keep] = self.x[0:2 * keep:2]
            self.y[:, :keep] = self.y[:, 0:2 * keep:2]
            self.count = keep
        self.x[self.count] = _float(values['env_steps'])
        for k, name in enumerate(CURVES):
            self.y[k, self.count] = row[name]
        self.count += 1
        return True

    def series(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Return ``(env_steps, values)`` of one of ``CURVES`` (copies)."""
        k = CURVES.index(name)
        return self.x[:self.count].copy(), self.y[k, :self.count].copy()
