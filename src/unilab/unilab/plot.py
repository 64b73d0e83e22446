# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab plot RUN_DIR...``: training curves as a PNG, one panel per metric.

The default panel is the mean episode return; ``--metric`` names any column of
``metrics.csv`` (``episodes/success_rate``, ``safety/clamp_share``, ...), and
``--metric operations`` stands for ``OPERATIONS``: what an operator watches
besides the return (success, episode length, the safety gate's rates,
transport drops).
"""

from __future__ import annotations

import csv
import math
import pathlib

from unilab_core.atomic import atomic_path


#: The default panel.
RETURN = 'charts/mean_return'
#: ``--metric operations``: the rates an operator watches besides the return.
OPERATIONS = ('episodes/success_rate', 'episodes/length_mean', 'safety/clamp_share',
              'safety/fallback_share', 'safety/reject_share', 'transport/drop_share')
LABELS = {RETURN: 'mean episode return', 'episodes/success_rate': 'success rate',
          'episodes/length_mean': 'mean episode length (steps)',
          'safety/clamp_share': 'share of rows clamped',
          'safety/fallback_share': 'share of watchdog fallbacks',
          'safety/reject_share': 'share of rows rejected',
          'transport/drop_share': 'share of messages dropped'}


class MetricsFileError(ValueError):
    """A metrics or monitor CSV cannot be read (the message names the file)."""


def expand_metrics(names) -> list[str]:
    """Return the panels for ``--metric`` values (``operations`` expanded; default: return)."""
    out = []
    for n in names or [RETURN]:
        out += list(OPERATIONS) if n == 'operations' else [n]
    return list(dict.fromkeys(out))


def read_curve(run_dir: str | pathlib.Path,
               metric: str = RETURN) -> tuple[list[float], list[float]]:
    """Return (env steps, ``metric``) from a run's metrics.csv, rows where it is a number."""
    path = pathlib.Path(run_dir) / 'metrics.csv'
    steps, values = [], []
    try:
        with open(path) as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is not None and metric not in reader.fieldnames:
                raise MetricsFileError(f'{path}: no column `{metric}` (a run from before it '
                                       'was logged, or a misspelt name)')
            for row in reader:
                value = float(row.get(metric) or 'nan')
                if not math.isnan(value):
                    steps.append(float(row['env_steps']))
                    values.append(value)
    except (UnicodeDecodeError, csv.Error, KeyError, ValueError, TypeError) as exc:
        if isinstance(exc, MetricsFileError):
            raise
        raise MetricsFileError(f'{path}: not a metrics file ({type(exc).__name__}: {exc})'
                               ) from None
    return steps, values


def rolling_mean(values: list[float], window: int) -> list[float]:
    """Return the mean of each value and the ``window - 1`` before it (fewer at the start)."""
    if window < 1:
        raise ValueError(f'rolling mean over {window} points: expected at least 1')
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def read_monitor(path: str | pathlib.Path, window: int = 64) -> tuple[list[float], list[float]]:
    """Return (env steps, rolling mean return) from an SB3 ``Monitor`` CSV (r, l, t columns)."""
    steps, returns, total = [], [], 0
    try:
        with open(path) as f:
            if not next(f).startswith('#'):  # the '#{"t_start": ...}' header line
                raise ValueError('no #{"t_start": ...} first line')
            reader = csv.DictReader(f)
            if not {'r', 'l'} <= set(reader.fieldnames or ()):
                raise ValueError('no r and l columns')
            for row in reader:
                total += int(row['l'])
                returns.append(float(row['r']))
                steps.append(float(total))
    except (StopIteration, UnicodeDecodeError, csv.Error, KeyError, ValueError,
            TypeError) as exc:
        raise MetricsFileError(f'{path}: not an SB3 Monitor CSV ({type(exc).__name__}: {exc})'
                               ) from None
    return steps, rolling_mean(returns, window)


def plot_runs(run_dirs: list[str], out: str, title: str = '',
              monitors: list[str] = (), labels: list[str] = (),
              metrics: list[str] = (), smooth: int = 1) -> pathlib.Path:
    """
    Plot one curve per run (and per SB3 monitor file) into ``out`` (PNG, atomic).

    ``labels`` name the curves in order (runs first, then monitors); the
    default label is the run directory's or file's name. ``metrics`` are the
    panels (``expand_metrics``); SB3 monitors have a return only. ``smooth``
    plots each run's rolling mean over that many metrics rows (1: as logged; a
    run of few envs logs the return of one or two episodes per row).
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt

    panels = expand_metrics(metrics)
    curves = {}
    for m in panels:
        curves[m] = []
        for r in run_dirs:
            steps, values = read_curve(r, m)
            curves[m].append(((steps, rolling_mean(values, smooth)), pathlib.Path(r).name))
    if RETURN in curves:
        curves[RETURN] += [(read_monitor(m), pathlib.Path(m).name) for m in monitors]
    fig, axes = plt.subplots(len(panels), 1, figsize=(7, 2.2 + 1.8 * len(panels)), dpi=110,
                             sharex=True, squeeze=False)
    for ax, metric in zip(axes[:, 0], panels):
        for i, ((steps, values), name) in enumerate(curves[metric]):
            label = labels[i] if i < len(labels) else name
            ax.plot([s / 1e6 for s in steps], values, label=label, lw=1.5)
        ax.set_ylabel(LABELS.get(metric, metric), fontsize=8)
        ax.grid(alpha=0.3)
    axes[0, 0].set_title(title or 'UniLab training')
    axes[0, 0].legend(loc='best', fontsize=8)
    axes[-1, 0].set_xlabel('environment steps (millions)')
    fig.tight_layout()
    out_path = pathlib.Path(out)
    with atomic_path(out_path) as tmp:
        fig.savefig(tmp, format='png')
    plt.close(fig)
    return out_path
