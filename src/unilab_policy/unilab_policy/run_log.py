# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Metrics of a run: one CSV row per update plus TensorBoard scalars."""

from __future__ import annotations

import csv
import math
import pathlib


class RunLog:
    """Append metrics to ``metrics.csv`` (flushed each row) and TensorBoard events."""

    def __init__(self, run_dir: str | pathlib.Path, tensorboard: bool = True):
        self.run_dir = pathlib.Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / 'metrics.csv'
        self._file = None
        self._writer = None
        self._fields: list[str] | None = None
        self._tb = None
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter
            self._tb = SummaryWriter(log_dir=str(self.run_dir / 'tensorboard'))

    def write(self, update: int, env_steps: int, metrics: dict[str, float]) -> None:
        """Record one update's metrics."""
        row = {'update': update, 'env_steps': env_steps, **metrics}
        if self._writer is None:
            resume = self.path.exists() and self.path.stat().st_size > 0
            self._file = open(self.path, 'a', newline='')
            if resume:
                with open(self.path) as f:
                    self._fields = next(csv.reader(f))
            else:
                self._fields = list(row)
            self._writer = csv.DictWriter(self._file, fieldnames=self._fields,
                                          extrasaction='ignore')
            if not resume:
                self._writer.writeheader()
        self._writer.writerow(row)
        self._file.flush()
        if self._tb is not None:
            for k, v in metrics.items():
                if isinstance(v, (int, float)) and not math.isnan(v):
                    self._tb.add_scalar(k, v, env_steps)

    def close(self) -> None:
        """Close files."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self._writer = None
        if self._tb is not None:
            self._tb.close()
            self._tb = None
