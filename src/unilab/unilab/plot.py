# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab plot RUN_DIR...``: training curves (mean episode return vs steps) as a PNG."""

from __future__ import annotations

import csv
import math
import pathlib

from unilab_core.atomic import atomic_path


def read_curve(run_dir: str | pathlib.Path) -> tuple[list[float], list[float]]:
    """Return (env steps, mean return) from a run's metrics.csv."""
    path = pathlib.Path(run_dir) / 'metrics.csv'
    steps, returns = [], []
    with open(path) as f:
        for row in csv.DictReader(f):
            value = float(row.get('charts/mean_return') or 'nan')
            if not math.isnan(value):
                steps.append(float(row['env_steps']))
                returns.append(value)
    return steps, returns


def plot_runs(run_dirs: list[str], out: str, title: str = '') -> pathlib.Path:
    """Plot one curve per run into ``out`` (PNG, written atomically)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=110)
    for run in run_dirs:
        steps, returns = read_curve(run)
        ax.plot([s / 1e6 for s in steps], returns, label=pathlib.Path(run).name, lw=1.5)
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
