# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench learn``: learning quality, several seeds, baselines side by side in one run.

Subsets (``--subset``):

- ``arm6`` (default): the default ``bin/unilab train`` (arm6_reach through the ROS
  graph) for each seed of ``--seeds`` (0,1,2); each trained policy is scored
  deterministically through the gate (``unilab_bringup.evaluation``, the nominal model,
  a fixed evaluation seed) next to the scripted Jacobian IK expert on the same
  episodes. Targets: return >= 63 and >= 90 % of the expert's, reach success >= 95 %.
- ``hopper`` / ``walker`` / ``halfcheetah`` / ``ant``: gymnasium MuJoCo tasks through the
  graph against SB3 PPO with rl-zoo's tuned parameters for the task, per seed (or
  ``--sb3-seeds``), side by side. Two figures
  each: the training return (the last training episodes, exploration noise included,
  as CleanRL reports) and the evaluation return (GYM_EVAL_EPISODES deterministic
  episodes, the policy mean, observation normalisation frozen, as rl-zoo's
  benchmark reports), so each published figure is compared with its own protocol.
  With ``--run-root`` of an earlier run, finished runs (their ``summary.json``, and
  SB3's ``sb3_<task>_s<seed>.json``) are scored again instead of trained again.
- ``quad`` / ``quad12``: quad_walk / quad12_walk trained with the defaults, their
  velocity tracking under fixed commands (``learn_quad``).
- ``go2``: the Unitree Go2 (go2_walk, its preset's budget) under the Go2 protocol:
  forward, backward, sideways, turning in place, standing, random commands and a
  slippery floor, 20 s episodes with pushes, against the issue's targets (``learn_quad``).
- ``ranks``: data-parallel learning against one rank with all the envs:
  ``bin/unilab train --nproc-per-node 2 --num-envs N/2`` (two ranks, each its own
  graph, gradients all-reduced) against the default one-rank ``--num-envs N``,
  per seed, both scored as above; ``--steps`` defaults to RANKS_STEPS.
- ``--peer rsl_rl`` / ``--peer rsl_rl_our_settings`` with ``arm6``, ``quad``,
  ``quad12`` or ``go2``: rsl_rl's PPO (its published defaults, or our settings) beside ours on
  the same task, budget and seeds, both scored through the gate (``learn_peer``).

Writes per-seed figures, mean and std, and (``--png``) the learning curves
against env steps and wall time. The trained runs go to ``--run-root`` (default: a new
folder in the system's temporary folder, never the current one), named in the result.
"""

from __future__ import annotations

import pathlib
import tempfile
import time

import numpy as np
from unilab_bench.learn_runs import (EVAL_SEED, gym_run, last_finite, mean_std, read_curve,
                                     train_graph)
from unilab_bench.train import sb3_zoo
from unilab_core.atomic import atomic_path, atomic_write_text
from unilab_core.config import ConfigError

#: Evaluation: envs x episodes per env, from one seed (the same episodes for every policy).
EVAL_ENVS, EVAL_EPISODES_PER_ENV = 64, 2
#: arm6_reach targets: 90 % of the IK expert's return (and at least RETURN_TARGET, 90 % of
#: the expert's ~70 without the gate), reach success.
EXPERT_SHARE_TARGET, RETURN_TARGET, SUCCESS_TARGET = 0.9, 63.0, 0.95
GYM_TASKS = {'hopper': 'Hopper-v5', 'walker': 'Walker2d-v5', 'halfcheetah': 'HalfCheetah-v5',
             'ant': 'Ant-v5'}
#: Published PPO figures at 1 M steps (mean episode return): rl-baselines3-zoo's
#: benchmark table (benchmark.md: PPO, *-v3 envs, one run each, deterministic evaluation)
#: and CleanRL's ppo_continuous_action report (docs/benchmark/ppo_continuous_action.md,
#: tag pr-424, *-v4, training episodes; it has no Ant).
PUBLISHED = {'Hopper-v5': {'rl_zoo': 2410.0, 'cleanrl': 2382.86},
             'Walker2d-v5': {'rl_zoo': 3478.8, 'cleanrl': 2287.95},
             'HalfCheetah-v5': {'rl_zoo': 5819.1, 'cleanrl': 1442.64},
             'Ant-v5': {'rl_zoo': 1327.2}}
#: Gymnasium tasks: deterministic evaluation episodes per policy (one per env, one seed).
GYM_EVAL_EPISODES = 10
#: ``ranks`` subset: env steps per run (the default arm run's return still rises there,
#: so a difference in learning shows) and the data-parallel split compared.
RANKS_STEPS, RANKS = 600_000, 2


class ExpertActor:
    """The scripted Jacobian IK reach controller behind PolicyActor's ``step`` protocol."""

    def __init__(self, num_envs: int, joints: int, asset=None):
        """Drive ``asset`` (a reach task's MJCF; default arm6_reach's) with the IK expert."""
        from unilab_bridge.tasks.arm6_reach import ASSET
        from unilab_bridge.tasks.model_cache import load_model
        from unilab_bridge.tasks.reach_expert import JacobianReachController
        self.controller = JacobianReachController(load_model(asset or ASSET))
        self.joints = int(joints)
        self._none = np.zeros(num_envs, np.float32)

    def step(self, step):
        """Return the expert's command for an observation ``[q, qd, extras]``."""
        from unilab_policy.actor import ActOut, StepResult
        obs = np.asarray(step.obs, np.float64)
        command = self.controller(obs[:, :self.joints], obs[:, 2 * self.joints:])
        return StepResult(action=ActOut(step.seq, 0, 0, command.astype(np.float32),
                                        self._none, self._none, step.episode_starts()))


def _score(cfg, run_dir, task: str, actor=None) -> dict:
    from unilab_bringup.evaluation import evaluate_policy
    from unilab_policy.networks import load_trained
    bundle = None
    if actor is None:
        trained = load_trained(run_dir)
        bundle = trained.bundle
        cfg = cfg.model_copy(update={'model': trained.params.model})
    return evaluate_policy(cfg, bundle, task, str(run_dir), None, EVAL_ENVS, EVAL_SEED,
                           EVAL_EPISODES_PER_ENV, actor=actor)


def _score_gym(cfg, run_dir, task: str) -> dict:
    """Return the deterministic evaluation of a gymnasium run (GYM_EVAL_EPISODES episodes)."""
    from unilab_bringup.evaluation import evaluate_policy
    from unilab_policy.networks import load_trained
    trained = load_trained(run_dir)
    cfg = cfg.model_copy(update={'model': trained.params.model})
    return evaluate_policy(cfg, trained.bundle, task, str(run_dir), None, GYM_EVAL_EPISODES,
                           EVAL_SEED, 1)


def _arm6(seeds, steps, root: pathlib.Path) -> dict:
    per_seed, curves = {}, {}
    for seed in seeds:
        overrides = {'run.seed': seed, 'logging.tensorboard': False,
                     'logging.progress': False}
        if steps:
            overrides['run.total_steps'] = steps
        rd = root / f'arm6_reach_s{seed}'
        t = train_graph(overrides, rd)
        ev = _score(t['cfg'], rd, 'arm6_reach')
        curve = read_curve(rd)
        curves[seed] = curve
        per_seed[seed] = {
            'run_dir': str(rd), 'train_return_first': t['summary'].get('return_first'),
            'train_return_last': t['summary'].get('return_last'),
            'train_success_last': last_finite(curve['success']),
            'train_clamp_share_last': last_finite(curve['clamp_share']),
            'train_clamp_share_first': last_finite(curve['clamp_share'][:10], 1.0),
            'eval_return': ev['return'], 'eval_success': ev['success'],
            'eval_clamp_share': ev['clamp_share'],
            'eval_tool_speed_p99_mps': ev.get('tool_speed_p99_mps'),
            'wall_s': t['summary'].get('wall_s'), 'fps': t['summary'].get('fps')}
        cfg = t['cfg']
    expert = _score(cfg, root / 'expert', 'arm6_reach',
                    actor=ExpertActor(EVAL_ENVS, 6))
    ret = mean_std([s['eval_return'] for s in per_seed.values()])
    suc = mean_std([s['eval_success'] for s in per_seed.values()])
    target_return = max(RETURN_TARGET, round(EXPERT_SHARE_TARGET * expert['return'], 3))
    return {'per_seed': per_seed, 'expert': expert, 'eval_return': ret, 'eval_success': suc,
            'target_return': target_return, 'target_success': SUCCESS_TARGET,
            'return_met_every_seed': all(s['eval_return'] >= target_return
                                         for s in per_seed.values()),
            'success_met_every_seed': all((s['eval_success'] or 0) >= SUCCESS_TARGET
                                          for s in per_seed.values()),
            'expert_share': round(ret['mean'] / expert['return'], 3)
            if expert['return'] > 0 else None,
            '_curves': curves, '_expert_line': expert['return']}


def _gym_sb3(task: str, seed: int, steps: int, root: pathlib.Path) -> dict:
    """Run SB3 (rl-zoo settings) once per task and seed; the result is kept in ``root``."""
    import json
    path = root / f'sb3_{task}_s{seed}.json'
    if path.is_file():
        kept = json.loads(path.read_text())
        if kept.get('steps') == steps and 'eval_return' in kept:
            return kept
    out = {'steps': steps, **sb3_zoo(task, steps, seed, eval_episodes=GYM_EVAL_EPISODES,
                                     eval_seed=EVAL_SEED)}
    root.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(out, indent=1))
    return out


def _gym(task: str, seeds, steps, root: pathlib.Path, sb3_seeds) -> dict:
    """Train/score ``task`` per seed; SB3 beside it on ``sb3_seeds`` (compared on those)."""
    steps = steps or 1_000_000
    per_seed, curves = {}, {}
    for seed in seeds:
        rd = root / f'{task}_s{seed}'
        cfg, summary = gym_run(task, seed, steps, rd)
        ev = _score_gym(cfg, rd, task)
        curves[seed] = read_curve(rd)
        entry = {'run_dir': str(rd), 'unilab_return': summary.get('return_last'),
                 'unilab_eval_return': ev['return'], 'unilab_eval_return_std': ev['return_std'],
                 'unilab_fps': summary.get('fps')}
        if seed in sb3_seeds:
            try:
                sb3 = _gym_sb3(task, seed, steps, root)
                entry.update({'sb3_return': sb3['return'], 'sb3_fps': round(sb3['fps'], 1),
                              'sb3_eval_return': sb3['eval_return'],
                              'sb3_eval_return_std': sb3['eval_return_std']})
            except ImportError:
                entry['sb3_note'] = 'stable-baselines3 not installed (requirements-bench.txt)'
        per_seed[seed] = entry
    out = {'per_seed': per_seed, 'steps': steps, 'eval_episodes': GYM_EVAL_EPISODES,
           'published': PUBLISHED.get(task, {}), '_curves': curves, '_expert_line': None}
    for key in ('unilab_return', 'sb3_return', 'unilab_eval_return', 'sb3_eval_return'):
        out[key] = mean_std([s.get(key) for s in per_seed.values()])
    both = [s for s in per_seed.values() if s.get('sb3_return') is not None]
    for kind in ('', 'eval_'):
        # Compared on the seeds both ran.
        ours = mean_std([s.get(f'unilab_{kind}return') for s in both])
        sb3 = out[f'sb3_{kind}return']
        if ours['mean'] is not None and sb3['mean'] is not None:
            out[f'unilab_vs_sb3{"_" + kind[:-1] if kind else ""}'] = round(
                ours['mean'] - sb3['mean'], 1)
    # Each published figure against the figure of the same protocol: rl-zoo's benchmark
    # evaluates deterministically, CleanRL reports training episodes.
    protocol = {'rl_zoo': 'unilab_eval_return', 'cleanrl': 'unilab_return'}
    out['vs_published'] = {
        name: {'published': value, 'ours': out[protocol[name]]['mean'],
               'ratio': round(out[protocol[name]]['mean'] / value, 3)
               if out[protocol[name]]['mean'] is not None else None}
        for name, value in PUBLISHED.get(task, {}).items()}
    return out


def _two_rank_run(overrides: dict, envs_per_rank: int, run_dir: pathlib.Path) -> dict:
    """Train with RANKS ranks (``unilab train --nproc-per-node``); return the summary."""
    import json
    import os
    import subprocess
    import sys
    import yaml
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    config = run_dir.parent / f'{run_dir.name}.yaml'
    doc: dict = {}
    for key, value in overrides.items():
        section, name = key.split('.')
        doc.setdefault(section, {})[name] = value
    doc.setdefault('rollout', {})['num_envs'] = envs_per_rank
    config.write_text(yaml.safe_dump(doc))
    cmd = [sys.executable, '-m', 'unilab.cli', 'train', '--nproc-per-node', str(RANKS),
           '--config', str(config), '--run-dir', str(run_dir), '--no-progress']
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f'`{" ".join(cmd)}` failed ({done.returncode}):\n'
                           f'{(done.stdout + done.stderr)[-2000:]}')
    return json.loads((run_dir / 'summary.json').read_text())


def _ranks(seeds, steps, root: pathlib.Path) -> dict:
    steps = steps or RANKS_STEPS
    per_seed, curves = {}, {}
    for seed in seeds:
        overrides = {'run.seed': seed, 'run.total_steps': steps,
                     'logging.tensorboard': False, 'logging.progress': False}
        rd1, rd2 = root / f'one_rank_s{seed}', root / f'two_ranks_s{seed}'
        one = train_graph(overrides, rd1)
        envs = one['cfg'].rollout.num_envs
        if envs % RANKS:
            raise ValueError(f'bench learn --subset ranks: {envs} envs do not split into '
                             f'{RANKS} ranks')
        two = _two_rank_run(overrides, envs // RANKS, rd2)
        entry = {'envs': envs}
        for name, rd, summary in (('one_rank', rd1, one['summary']), ('two_ranks', rd2, two)):
            ev = _score(one['cfg'], rd, 'arm6_reach')
            curves[f'{name} s{seed}'] = read_curve(rd)
            entry[name] = {'run_dir': str(rd), 'eval_return': ev['return'],
                           'eval_success': ev['success'], 'steps': summary.get('steps'),
                           'wall_s': summary.get('wall_s'), 'fps': summary.get('fps'),
                           'ranks': summary.get('ranks', 1)}
        per_seed[seed] = entry
    one_r = mean_std([s['one_rank']['eval_return'] for s in per_seed.values()])
    two_r = mean_std([s['two_ranks']['eval_return'] for s in per_seed.values()])
    diff = round(two_r['mean'] - one_r['mean'], 3)
    spread = max(one_r['std'], two_r['std'])
    return {'per_seed': per_seed, 'steps': steps, 'ranks': RANKS,
            'one_rank_return': one_r, 'two_ranks_return': two_r,
            'one_rank_success': mean_std([s['one_rank']['eval_success']
                                          for s in per_seed.values()]),
            'two_ranks_success': mean_std([s['two_ranks']['eval_success']
                                           for s in per_seed.values()]),
            'difference': diff, 'seed_spread': spread,
            'within_seed_spread': abs(diff) <= spread,
            '_curves': curves, '_expert_line': None}


def _plot(path: str, title: str, result: dict) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for seed, c in result['_curves'].items():
        for ax, x in zip(axes, ('env_steps', 'wall_s')):
            ax.plot(c[x], c['return'], label=seed if isinstance(seed, str) else f'seed {seed}')
    for ax, label in zip(axes, ('env steps', 'wall time [s]')):
        if result['_expert_line'] is not None:
            ax.axhline(result['_expert_line'], color='k', ls='--', label='IK expert')
        ax.set_xlabel(label)
        ax.set_ylabel('mean episode return (training)')
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.suptitle(title)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format='png', dpi=110)
    plt.close(fig)


def _sb3_seeds(args, seeds) -> list:
    """Return the seeds SB3 runs: none with --no-sb3, else --sb3-seeds (default: all)."""
    if getattr(args, 'no_sb3', False):
        return []
    given = getattr(args, 'sb3_seeds', None)
    if given is None:
        return list(seeds)
    try:
        chosen = [int(x) for x in str(given).split(',') if x.strip()]
    except ValueError:
        chosen = None
    if not chosen or not set(chosen) <= set(seeds):
        raise ConfigError(f'bench learn --sb3-seeds {given!r}: expected comma-separated '
                          f'integers among --seeds {",".join(map(str, seeds))}')
    return chosen


def _seeds(args) -> list:
    """Return ``--seeds`` as integers (default 0,1,2); ConfigError naming a bad value."""
    try:
        seeds = [int(x) for x in str(getattr(args, 'seeds', None) or '0,1,2').split(',')
                 if x.strip()]
    except ValueError:
        seeds = []
    if not seeds:
        raise ConfigError(f'bench learn --seeds {args.seeds!r}: expected comma-separated '
                          'integers, e.g. 0,1,2')
    return seeds


def _run_root(args, prefix: str = '') -> pathlib.Path:
    """Return ``--run-root``, or a new temporary folder: a bench never writes into the checkout."""
    given = getattr(args, 'run_root', None)
    if given:
        return pathlib.Path(given)
    return pathlib.Path(tempfile.mkdtemp(prefix=f'unilab-bench-learn-{prefix}'))


def _with_peer(args, peer: str, subset: str) -> dict:
    """``--peer rsl_rl``: the peer's PPO beside ours on one of our tasks (learn_peer)."""
    from unilab_bench.learn_peer import PEER_TASKS, PEERS, rsl_peer
    if peer not in PEERS or subset not in PEER_TASKS:
        raise ConfigError(f'bench learn --peer {peer} --subset {subset}: expected --peer '
                          f'{"|".join(PEERS)} with --subset {"|".join(PEER_TASKS)}')
    seeds = _seeds(args)
    root = _run_root(args, f'{peer}-')
    t0 = time.monotonic()
    result = rsl_peer(subset, seeds, args.steps, root, _score, peer)
    result = {k: v for k, v in result.items() if not k.startswith('_')}
    return {'benchmark': 'learn', 'subset': subset, 'seeds': seeds, 'runs': str(root),
            'wall_s': round(time.monotonic() - t0, 1), **result}


def bench_learn(args) -> dict:
    """Train the subset's task for each seed; score against the baselines; write curves."""
    from unilab_bench.learn_quad import quad, QUAD_TASKS
    subset = getattr(args, 'subset', None) or 'arm6'
    peer = getattr(args, 'peer', None)
    if peer is not None:
        return _with_peer(args, peer, subset)
    if subset not in ('arm6', 'ranks') and subset not in GYM_TASKS | QUAD_TASKS:
        raise ConfigError(f'bench learn --subset {subset}: expected arm6, ranks or one of '
                          f'{", ".join([*GYM_TASKS, *QUAD_TASKS])}')
    if getattr(args, 'sb3_seeds', None) is not None and subset not in GYM_TASKS:
        raise ConfigError(f'bench learn --sb3-seeds: SB3 runs beside the gymnasium subsets '
                          f'({", ".join(GYM_TASKS)}), not {subset}')
    seeds = _seeds(args)
    root = _run_root(args)
    t0 = time.monotonic()
    if subset == 'arm6':
        result = _arm6(seeds, args.steps, root)
        title = 'arm6_reach: default training through the graph'
    elif subset == 'ranks':
        result = _ranks(seeds, args.steps, root)
        title = f'arm6_reach: {RANKS} ranks x N/{RANKS} envs vs 1 rank x N envs'
    elif subset in QUAD_TASKS:
        result = quad(subset, seeds, args.steps, root)
        title = f'{QUAD_TASKS[subset]}: default training'
    else:
        task = GYM_TASKS[subset]
        result = _gym(task, seeds, args.steps, root, _sb3_seeds(args, seeds))
        title = f'{task}: UniLab graph'
    if args.png:
        _plot(args.png, title, result)
    result = {k: v for k, v in result.items() if not k.startswith('_')}
    return {'benchmark': 'learn', 'subset': subset, 'seeds': seeds, 'runs': str(root),
            'wall_s': round(time.monotonic() - t0, 1), **result}
