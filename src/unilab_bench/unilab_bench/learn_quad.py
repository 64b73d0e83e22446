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

``--subset go2``: the Unitree Go2 (go2_walk) under GO2_COMMANDS: 20 s episodes with the
training's pushes and randomised world, each command held for the whole episode (errors
are mean absolute errors after the first second, ``Go2Walk.settle_s``), stand-still drift,
and random commands on a floor of friction 0.3. GO2_TARGETS are the issue's.
``lr_at_floor_share`` (per seed): the share of the run's updates whose KL-adaptive learning
rate sat at its floor (``ppo.LR_MIN``).
"""

from __future__ import annotations

import pathlib

from unilab_bench.learn_runs import EVAL_SEED, gym_run, mean_std, read_curve
from unilab_bringup.paths import training_config

#: --subset -> task.
QUAD_TASKS = {'quad': 'quad_walk', 'quad12': 'quad12_walk', 'go2': 'go2_walk'}
#: Default training budget per seed (the default run's).
QUAD_STEPS = 1_500_000
#: name -> (forward velocity m/s, yaw rate rad/s); None: the training distribution.
QUAD_COMMANDS = {'vx0.5': (0.5, 0.0), 'vx0.3_yaw0.3': (0.3, 0.3),
                 'vx0.3_yaw-0.3': (0.3, -0.3), 'yaw0.5': (0.0, 0.5), 'random': None}
#: Evaluation envs (one episode each, of QUAD_EPISODE_STEPS control steps: 10 s).
QUAD_EVAL_ENVS, QUAD_EPISODE_STEPS = 16, 500
VX_ERROR_TARGET, SURVIVAL_TARGET = 0.1, 0.95
KEYS = ('return', 'vx_error', 'yaw_error', 'survival', 'clamp_share')

#: go2_walk: name -> (v_x m/s, v_y m/s, yaw rate rad/s, task options); None: the training
#: distribution (full ranges, no curriculum). Every condition keeps the training's pushes
#: and randomised world; ``friction0.3`` fixes the floor's friction at 0.3.
GO2_COMMANDS = {
    'vx0.5': (0.5, 0.0, 0.0, {}), 'vx1.0': (1.0, 0.0, 0.0, {}),
    'vx-0.5': (-0.5, 0.0, 0.0, {}), 'vy0.3': (0.0, 0.3, 0.0, {}),
    'yaw0.8': (0.0, 0.0, 0.8, {}), 'stand': (0.0, 0.0, 0.0, {}),
    'random': None, 'friction0.3': ('random', {'ranges': {'friction': (0.3, 0.3)}}),
}
GO2_EVAL_ENVS, GO2_EPISODE_STEPS = 16, 1000  # 20 s episodes
GO2_KEYS = ('return', 'vx_error', 'vy_error', 'yaw_error', 'drift', 'survival', 'clamp_share')
#: The issue's targets: tracking errors, survival, stand-still drift, slippery survival.
GO2_TARGETS = {'vx_error': 0.10, 'vy_error': 0.10, 'yaw_error': 0.10, 'survival': 0.99,
               'drift': 0.05, 'slippery_survival': 0.95}


def lr_at_floor_share(rates) -> float | None:
    """Return the share of updates whose adaptive learning rate sat at its floor (LR_MIN)."""
    from unilab_policy.ppo import LR_MIN
    finite = [r for r in rates if r == r]
    if not finite:
        return None
    return round(sum(r <= LR_MIN * (1 + 1e-9) for r in finite) / len(finite), 4)


def default_steps(task: str) -> int:
    """Return a quadruped task's default budget: go2_walk's preset, else QUAD_STEPS."""
    if task != 'go2_walk':
        return QUAD_STEPS
    return training_config([], {'run.task': task}).run.total_steps


def go2_options(command) -> dict:
    """Return go2_walk's task options for one GO2_COMMANDS entry."""
    options = {'max_episode_steps': GO2_EPISODE_STEPS, 'curriculum': False}
    if command is None:
        return options
    if command[0] == 'random':
        return {**options, **command[1]}
    vx, vy, yaw, extra = command
    return {**options, 'command_vx': (vx, vx), 'command_vy': (vy, vy),
            'command_yaw': (yaw, yaw), 'stand_share': 0.0, **extra}


def go2_targets_met(figures: dict) -> dict:
    """Return, per GO2_TARGETS entry, whether one seed's figures meet it."""
    def worst(key, names):
        values = [figures[n][key] for n in names if figures[n].get(key) is not None]
        return max(values) if values else None
    moving = [n for n in GO2_COMMANDS if n not in ('stand', 'friction0.3')]
    checks = {'vx_error': worst('vx_error', ['vx0.5', 'vx1.0', 'vx-0.5', 'random']),
              'vy_error': worst('vy_error', ['vy0.3', 'random']),
              'yaw_error': worst('yaw_error', ['yaw0.8', 'random']),
              'drift': figures['stand'].get('drift')}
    out = {k: v is not None and v <= GO2_TARGETS[k] for k, v in checks.items()}
    out['survival'] = min(figures[n]['survival'] for n in moving + ['stand']) \
        >= GO2_TARGETS['survival']
    out['slippery_survival'] = figures['friction0.3']['survival'] \
        >= GO2_TARGETS['slippery_survival']
    return out


def score_quad(cfg, run_dir: pathlib.Path, task: str) -> dict:
    """Return the tracking figures of ``run_dir``'s policy under every QUAD_COMMANDS."""
    from unilab_bringup.evaluation import evaluate_policy
    from unilab_policy.networks import load_trained
    trained = load_trained(run_dir)
    cfg = cfg.model_copy(update={'model': trained.params.model})
    out = {}
    if task == 'go2_walk':
        for name, command in GO2_COMMANDS.items():
            res = evaluate_policy(cfg, trained.bundle, task, str(run_dir), None,
                                  GO2_EVAL_ENVS, EVAL_SEED, 1,
                                  task_options=go2_options(command))
            out[name] = {k: res.get(k) for k in GO2_KEYS}
        return out
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
    steps = steps or default_steps(task)
    per_seed, curves = {}, {}
    for seed in seeds:
        rd = root / f'{task}_s{seed}'
        peer = root / f'unilab_{task}_s{seed}'  # the same task and seed, trained by --peer
        if not (rd / 'summary.json').is_file() and (peer / 'summary.json').is_file():
            rd = peer
        cfg, summary = gym_run(task, seed, steps, rd)
        per_seed[seed] = {'run_dir': str(rd), 'train_return_last': summary.get('return_last'),
                          'wall_s': summary.get('wall_s'), **score_quad(cfg, rd, task)}
        curves[seed] = read_curve(rd)
        per_seed[seed]['lr_at_floor_share'] = lr_at_floor_share(curves[seed]['learning_rate'])
    if task == 'go2_walk':
        means = {name: {k: mean_std([s[name][k] for s in per_seed.values()])
                        for k in GO2_KEYS} for name in GO2_COMMANDS}
        met = {seed: go2_targets_met(s) for seed, s in per_seed.items()}
        return {'task': task, 'steps': steps, 'per_seed': per_seed, 'mean': means,
                'targets': GO2_TARGETS, 'targets_met': met,
                'every_target_met_every_seed': all(all(m.values()) for m in met.values()),
                '_curves': curves, '_expert_line': None}
    means = {name: {k: mean_std([s[name][k] for s in per_seed.values()]) for k in KEYS}
             for name in QUAD_COMMANDS}
    forward = [s['vx0.5'] for s in per_seed.values()]
    return {'task': task, 'steps': steps, 'per_seed': per_seed, 'mean': means,
            'vx_error_target': VX_ERROR_TARGET, 'survival_target': SURVIVAL_TARGET,
            'forward_met_every_seed': all(
                f['vx_error'] <= VX_ERROR_TARGET and f['survival'] >= SURVIVAL_TARGET
                for f in forward),
            '_curves': curves, '_expert_line': None}
