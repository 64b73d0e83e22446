# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab plot RUN_DIR...``: training curves (mean episode return vs steps) as a PNG."""

from __future__ import annotations

import csv
import math
import pathlib

from unilab_core.atomic import atomic_path


class MetricsFileError(ValueError):
    """A metrics or monitor CSV cannot be read (the message names the file)."""


def read_curve(run_dir: str | pathlib.Path) -> tuple[list[float], list[float]]:
    """Return (env steps, mean return) from a run's metrics.csv."""
    path = pathlib.Path(run_dir) / 'metrics.csv'
    steps, returns = [], []
    try:
        with open(path) as f:
            for row in csv.DictReader(f):
                value = float(row.get('charts/mean_return') or 'nan')
                if not math.isnan(value):
                    steps.append(float(row['env_steps']))
                    returns.append(value)
    except (UnicodeDecodeError, csv.Error, KeyError, ValueError, TypeError) as exc:
        raise MetricsFileError(f'{path}: not a metrics file ({type(exc).__name__}: {exc})'
                               ) from None
    return steps, returns


def read_monitor(path: str | pathlib.Path, window: int = 64) -> tuple[list[float], list[float]]:
    """Return (env steps, rolling mean return) from an SB3 ``Monitor`` CSV (r, l, t columns)."""
    steps, returns, total, recent = [], [], 0, []
    try:
        with open(path) as f:
            next(f)  # the '#{"t_start": ...}' header line
            for row in csv.DictReader(f):
                total += int(row['l'])
                recent = (recent + [float(row['r'])])[-window:]
                steps.append(float(total))
                returns.append(sum(recent) / len(recent))
    except (StopIteration, UnicodeDecodeError, csv.Error, KeyError, ValueError,
            TypeError) as exc:
        raise MetricsFileError(f'{path}: not an SB3 Monitor CSV ({type(exc).__name__}: {exc})'
                               ) from None
    return steps, returns


def plot_runs(run_dirs: list[str], out: str, title: str = '',
              monitors: list[str] = (), labels: list[str] = ()) -> pathlib.Path:
    """
    Plot one curve per run (and per SB3 monitor file) into ``out`` (PNG, atomic).

    ``labels`` name the curves in order (runs first, then monitors); the
    default label is the run directory's or file's name.
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    curves = [(read_curve(r), pathlib.Path(r).name) for r in run_dirs]
    curves += [(read_monitor(m), pathlib.Path(m).name) for m in monitors]
    for i, ((steps, returns), name) in enumerate(curves):
        label = labels[i] if i < len(labels) else name
        ax.plot([s / 1e6 for s in steps], returns, label=label, lw=1.5)
    ax.set_xlabel('environment steps (millions)')
    ax.set_ylabel('mean episode return')
    ax.set_title(title or 'UniLab training')
    ax.grid(alpha=0.3)
    ax.legend(loc='lower right', fontsize=8)
    fig.tight_layout()
    out_path = pathlib.Path(out)
    with atomic_path(out_path) as tmp:
        fig.savefig(tmp, format='png')
    plt.close(fig)
    return out_path
