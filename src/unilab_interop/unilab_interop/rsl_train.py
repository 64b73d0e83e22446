# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
rsl_rl's PPO on a UniLab task: ``OnPolicyRunner`` over ``unilab_interop.vecenv``.

The runner is rsl_rl's own, with its published defaults (``convert.RSL_DEFAULTS``);
the environment is our task with our action map and safety gate, so the
figures compare learning algorithms, not simulators. The budget is given in env
steps like ours: ``steps / (num_envs * num_steps_per_env)`` iterations, rounded.
rsl_rl writes its checkpoints ``model_<it>.pt`` and TensorBoard events into
``run_dir/rsl_rl``; its console report goes to ``run_dir/rsl_rl/train.log``, and the
figures of a finished run to ``run_dir/summary.json``.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import time

import numpy as np
from rsl_rl.runners import OnPolicyRunner
import torch
from unilab_core.atomic import atomic_write_text
from unilab_interop.convert import rsl_train_cfg
from unilab_interop.vecenv import make_vec_env, task_config
from unilab_policy.device import setup_device


#: Written into the run directory when training finished.
SUMMARY = 'summary.json'


def iterations_for(steps: int, num_envs: int, steps_per_env: int) -> int:
    """Return the rsl_rl iterations closest to ``steps`` env steps (at least one)."""
    return max(1, round(steps / (num_envs * steps_per_env)))


def train_rsl(task: str, seed: int, steps: int, run_dir: str | pathlib.Path,
              num_envs: int | None = None, train_cfg: dict | None = None) -> dict:
    """Train rsl_rl's PPO on ``task``; return the checkpoint and training figures."""
    run_dir = pathlib.Path(run_dir)
    log_dir = run_dir / 'rsl_rl'
    log_dir.mkdir(parents=True, exist_ok=True)
    cfg = task_config(task, {'run.seed': seed})
    num_envs = int(num_envs or cfg.rollout.num_envs)
    # The same CPU threads as our trainer gets (run.torch_threads).
    device = str(setup_device(cfg.run.device, cfg.run.torch_threads, log=lambda _: None))
    train_cfg = train_cfg or rsl_train_cfg()
    train_cfg['seed'] = seed
    iters = iterations_for(steps, num_envs, train_cfg['num_steps_per_env'])
    torch.manual_seed(seed)
    np.random.seed(seed)
    env = make_vec_env(task, num_envs, seed, run_dir, device=device, cfg=cfg)
    try:
        with open(log_dir / 'train.log', 'w') as log, contextlib.redirect_stdout(log):
            runner = OnPolicyRunner(env, train_cfg, log_dir=str(log_dir), device=device)
            t0 = time.monotonic()
            runner.learn(iters)
            wall = time.monotonic() - t0
    finally:
        env.close()
    env_steps = iters * num_envs * train_cfg['num_steps_per_env']
    rewards = list(runner.logger.rewbuffer)
    summary = {'checkpoint': str(log_dir / f'model_{runner.current_learning_iteration}.pt'),
               'iterations': iters, 'env_steps': env_steps, 'num_envs': num_envs,
               'wall_s': round(wall, 1), 'fps': round(env_steps / wall, 1),
               'train_return_last': round(float(np.mean(rewards)), 3) if rewards else None}
    # A finished run says so (``finished_rsl``): a benchmark scores it again without training.
    atomic_write_text(run_dir / SUMMARY, json.dumps(summary, indent=2) + '\n')
    return summary


def finished_rsl(run_dir: str | pathlib.Path) -> dict | None:
    """Return the summary of a finished ``train_rsl`` run in ``run_dir``, or None."""
    path = pathlib.Path(run_dir) / SUMMARY
    if not path.is_file():
        return None
    summary = json.loads(path.read_text())
    return summary if pathlib.Path(summary.get('checkpoint', '')).is_file() else None
