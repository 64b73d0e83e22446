# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Live progress: steps, steps/s, mean return and ETA (rich on a terminal, lines otherwise)."""

from __future__ import annotations

import sys
import time


class ProgressDisplay:
    """Show training progress; plain lines every 10 % when not on a terminal."""

    def __init__(self, total_steps: int, enabled: bool = True):
        self.total = total_steps
        self.enabled = enabled
        self.tty = sys.stdout.isatty()
        self._progress = None
        self._task = None
        self._t0 = time.monotonic()
        self._next_line = 0.1

    def __enter__(self):
        if self.enabled and self.tty:
            from rich.progress import (BarColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)
            self._progress = Progress(
                TextColumn('[bold]train'), BarColumn(),
                TextColumn('{task.completed:>10,.0f}/{task.total:,.0f} steps'),
                TextColumn('{task.fields[sps]:>8,.0f} steps/s'),
                TextColumn('return {task.fields[ret]}'),
                TimeElapsedColumn(), TextColumn('ETA'), TimeRemainingColumn())
            self._progress.start()
            self._task = self._progress.add_task('train', total=self.total, sps=0.0, ret='-')
        return self

    def update(self, steps: int, start_steps: int, mean_return: float | None) -> None:
        """Report the current step count and recent mean episode return."""
        if not self.enabled:
            return
        elapsed = max(time.monotonic() - self._t0, 1e-9)
        sps = (steps - start_steps) / elapsed
        ret = '-' if mean_return is None else f'{mean_return:8.2f}'
        if self._progress is not None:
            self._progress.update(self._task, completed=min(steps, self.total), sps=sps, ret=ret)
        elif steps >= self._next_line * self.total:
            while self._next_line * self.total <= steps:
                self._next_line += 0.1
            eta = max(0.0, self.total - steps) / sps if sps > 0 else float('nan')
            print(f'train: {steps:,}/{self.total:,} steps  {sps:,.0f} steps/s  '
                  f'return {ret}  ETA {eta:,.0f} s', flush=True)

    def __exit__(self, *exc):
        if self._progress is not None:
            self._progress.stop()
        return False
