# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Metrics of a run: one CSV row per update plus TensorBoard scalars.

After a kill, a run resumes from its last checkpoint, but its ``metrics.csv``
and event files already hold the updates logged after that checkpoint, which
the resumed run logs again. :meth:`RunLog.truncate` takes both back to the
checkpoint: the CSV is rewritten (atomically) without the later rows, and the
TensorBoard writer is opened with ``purge_step`` just after the checkpoint's
step, which makes TensorBoard discard the earlier events from that step on
(``SummaryWriter(purge_step=...)``, a ``SessionLog.START`` event).
"""

from __future__ import annotations

import csv
import io
import math
import pathlib

from unilab_core.atomic import atomic_write_text


class RunLog:
    """Append metrics to ``metrics.csv`` (flushed each row) and TensorBoard events."""

    def __init__(self, run_dir: str | pathlib.Path, tensorboard: bool = True):
        self.run_dir = pathlib.Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.run_dir / 'metrics.csv'
        self.tensorboard = tensorboard
        self._file = None
        self._writer = None
        self._fields: list[str] | None = None
        self._tb = None
        self._purge_step: int | None = None

    def truncate(self, update: int, env_steps: int) -> int:
        """
        Forget everything logged after ``update`` / ``env_steps`` (the resume point).

        Returns how many CSV rows were dropped (rows of later updates, and a
        row cut short by a kill). The next TensorBoard writer purges steps
        after ``env_steps``.
        """
        self.close()
        self._purge_step = int(env_steps) + 1
        if not self.path.exists():
            return 0
        with open(self.path, newline='', errors='replace') as f:
            rows = list(csv.reader(f))
        if not rows:
            return 0
        header, body = rows[0], rows[1:]
        keep = [r for r in body if len(r) == len(header) and _update_of(r, header) is not None
                and _update_of(r, header) <= update]
        if len(keep) < len(body):
            out = io.StringIO()
            csv.writer(out).writerows([header] + keep)
            atomic_write_text(self.path, out.getvalue())
        return len(body) - len(keep)

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
        if self.tensorboard:
            if self._tb is None:
                from torch.utils.tensorboard import SummaryWriter
                self._tb = SummaryWriter(log_dir=str(self.run_dir / 'tensorboard'),
                                         purge_step=self._purge_step)
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


def _update_of(row: list[str], header: list[str]) -> int | None:
    try:
        return int(float(row[header.index('update')]))
    except (ValueError, IndexError):
        return None
