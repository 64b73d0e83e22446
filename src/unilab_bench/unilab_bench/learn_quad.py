# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench learn --subset quad|quad12``: velocity tracking of a trained quadruped.

Per seed, the task is trained through the graph with the default settings (or a finished
run in ``--run-root`` is scored again), then its deterministic policy runs one episode
(10 s) per env through the gate under each of QUAD_COMMANDS: the mean forward-velocity
and yaw-rate errors, the share of episodes survived and the gate's clamp share
(``QuadWalk.episode_stats`` through ``unilab_bringup.evaluation``). Target (the forward
command): error <= VX_ERROR_TARGET, survival >= SURVIVAL_TARGET.
"""

from __future__ import annotations

import pathlib

from unilab_bench.learn_runs import EVAL_SEED, gym_run, mean_std, read_curve

#: --subset -> task.
QUAD_TASKS = {'quad': 'quad_walk', 'quad12': 'quad12_walk'}
#: Default training budget per seed (the default run's).
QUAD_STEPS = 1_500_000
#: name -> (forward velocity m/s, yaw rate rad/s); None: the training distribution.
QUAD_COMMANDS = {'vx0.5': (0.5, 0.0), 'vx0.3_yaw0.3': (0.3, 0.3),
                 'vx0.3_yaw-0.3': (0.3, -0.3), 'yaw0.5': (0.0, 0.5), 'random': None}
#: Evaluation envs (one episode each, of QUAD_EPISODE_STEPS control steps: 10 s).
QUAD_EVAL_ENVS, QUAD_EPISODE_STEPS = 16, 500
VX_ERROR_TARGET, SURVIVAL_TARGET = 0.1, 0.95
KEYS = ('return', 'vx_error', 'yaw_error', 'survival', 'clamp_share')


def score_quad(cfg, run_dir: pathlib.Path, task: str) -> dict:
    """Return the tracking figures of ``run_dir``'s policy under every QUAD_COMMANDS."""
    from unilab_bringup.evaluation import evaluate_policy
    from unilab_policy.networks import load_trained
    trained = load_trained(run_dir)
    cfg = cfg.model_copy(update={'model': trained.params.model})
    out = {}
    for name, command in QUAD_COMMANDS.items():
        options = {'max_episode_steps': QUAD_EPISODE_STEPS}
        if command is not None:
            vx, yaw = command
            options.update(command_velocity=(vx, vx), command_yaw=(yaw, yaw))
        res = evaluate_policy(cfg, trained.bundle, task, str(run_dir), None, QUAD_EVAL_ENVS,
                              EVAL_SEED, 1, task_options=options)
        out[name] = {k: res.get(k) for k in KEYS}
    return out


def quad(subset: str, seeds, steps, root: pathlib.Path) -> dict:
    """Train (or reuse) and score ``subset``'s quadruped for each seed."""
    task = QUAD_TASKS[subset]
    steps = steps or QUAD_STEPS
    per_seed, curves = {}, {}
    for seed in seeds:
        rd = root / f'{task}_s{seed}'
        cfg, summary = gym_run(task, seed, steps, rd)
        per_seed[seed] = {'run_dir': str(rd), 'train_return_last': summary.get('return_last'),
                          'wall_s': summary.get('wall_s'), **score_quad(cfg, rd, task)}
        curves[seed] = read_curve(rd)
    means = {name: {k: mean_std([s[name][k] for s in per_seed.values()]) for k in KEYS}
             for name in QUAD_COMMANDS}
    forward = [s['vx0.5'] for s in per_seed.values()]
    return {'task': task, 'steps': steps, 'per_seed': per_seed, 'mean': means,
            'vx_error_target': VX_ERROR_TARGET, 'survival_target': SURVIVAL_TARGET,
            'forward_met_every_seed': all(
                f['vx_error'] <= VX_ERROR_TARGET and f['survival'] >= SURVIVAL_TARGET
                for f in forward),
            '_curves': curves, '_expert_line': None}
