# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Runs and figures both ``learn`` and ``learn_quad`` use: train, read the curve, summarise."""

from __future__ import annotations

import csv
import json
import math
import pathlib

import numpy as np
from unilab_bringup.prepare import prepare_run
from unilab_bringup.runner import run_composed

#: Evaluation seed (the same episodes for every policy scored).
EVAL_SEED = 4321


def read_curve(run_dir: pathlib.Path) -> dict:
    """Return env steps, wall time, mean return, success, clamp share, LR per metrics row."""
    cols = {'env_steps': 'charts/env_steps', 'wall_s': 'charts/wall_s',
            'return': 'charts/mean_return', 'success': 'episodes/success_rate',
            'clamp_share': 'safety/clamp_share', 'learning_rate': 'charts/learning_rate'}
    out = {k: [] for k in cols}
    with open(run_dir / 'metrics.csv', newline='') as f:
        for row in csv.DictReader(f):
            for k, c in cols.items():
                v = row.get(c, '')
                out[k].append(float(v) if v not in ('', None) else math.nan)
    return out


def last_finite(values, share: float = 0.1) -> float | None:
    """Return the mean of the finite values in the last ``share`` of a series."""
    tail = np.asarray(values[-max(1, int(len(values) * share)):], float)
    tail = tail[np.isfinite(tail)]
    return round(float(tail.mean()), 4) if tail.size else None


def train_graph(overrides: dict, run_dir: pathlib.Path) -> dict:
    """Train through the composed graph into ``run_dir``; return its config and summary."""
    run = prepare_run([], overrides, run_dir=str(run_dir))
    summary = run_composed(run, progress=False)
    return {'cfg': run.cfg, 'summary': summary}


def mean_std(values) -> dict:
    """Return the mean and std of the values that are not None (None for both when none)."""
    v = np.asarray([x for x in values if x is not None], float)
    if not v.size:
        return {'mean': None, 'std': None}
    return {'mean': round(float(v.mean()), 3), 'std': round(float(v.std()), 3)}


def gym_run(task: str, seed: int, steps: int, rd: pathlib.Path) -> tuple:
    """Train ``task`` through the graph into ``rd`` (or reuse a finished run there)."""
    overrides = {'run.task': task, 'run.total_steps': steps, 'run.seed': seed,
                 'logging.tensorboard': False, 'logging.progress': False}
    if (rd / 'summary.json').is_file():
        cfg = prepare_run([], overrides, run_dir=str(rd.parent / f'.score_{rd.name}')).cfg
        return cfg, json.loads((rd / 'summary.json').read_text())
    t = train_graph(overrides, rd)
    return t['cfg'], t['summary']
