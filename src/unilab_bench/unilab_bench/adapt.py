# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench adapt --model RUN_DIR``: does online adaptation help, and does the fuse hold.

(``--robot go2 --variant slippery``: a walking policy on the legged double,
``unilab_bench.adapt_legged``.)

A nominal-trained arm policy is deployed on a shifted robot (the ``payload``
variant: masses x3, servo gains x0.3, friction x0.25, 2-3 steps of command
delay) and adapted for ``--steps`` rounds (default 30, 16 robot episodes each:
a budget of 480 episodes; ``unilab_adapt.sim_robot``: the adapter's rounds, fuse
and version files as ``unilab adapt`` runs them, with the robot simulated in the
same process so that many rounds fit in minutes). Reported, as fractions:
``success_before`` / ``success_after``, the starting version and the version
running at the end, each deployed (deterministic, as ``unilab deploy`` acts) on
the shifted robot for ``EVAL_EPISODES`` goals from a fixed seed (success: final
distance < 5 cm); ``robot_success_before`` / ``robot_success_after``, what the
adapter itself saw while the policy sampled (as it must to learn): the first
round, and the last three rounds pooled (16 episodes a round: noisy); versions
deployed and rolled back.

Then the sabotaged runs (``adapt.sabotage``, for this bench and the tests only):
``huge_lr`` with the simulation test on (every candidate must be rejected
before it reaches the robot: ``sabotage_sim_rejections``), and ``sign_flip``
with the simulation test off (``sim_tolerance`` 1), so that harmful versions
do reach the robot and the robot-side rule must roll back
(``sabotage_rollbacks``). ``sabotage_start_success`` /
``sabotage_final_success`` score the starting version and the one running at
the end like ``success_before`` (``sabotage_robot_*``: the sampled rounds);
with ``adapt.hold_after_rollback`` (default) the fuse holds the last good
version after the rollback, so the run ends on it.
``--png FILE`` draws robot success per round with deployments and rollbacks, and
the latency part's histograms beside it (``FILE`` with ``_latency`` before the suffix).
``adaptation_target_met``: a gain of at least 20 points, at least one sabotage
rollback, and the sabotaged run ending within 5 points of its start;
``target_met``: those and, where the latency part ran, the control p99 during
adaptation within 1 ms of the same loop without it (``targets``).

Last, the control latency with and without the adapter beside the robot, over
the ROS path (``unilab_bench.adapt_latency``: ``deploy_p99_ms``,
``deploy_p99_ms_during_adapt``, ``--latency-cycles`` cycles each, 0 skips it).
"""

from __future__ import annotations

import json
import pathlib
import tempfile
import time

import numpy as np
from unilab_bench.adapt_legged import bench_adapt_legged
from unilab_bridge.variants import VARIANTS
from unilab_bringup.paths import default_config_files, profile_path
from unilab_core.config import ConfigError, load_run_config
from unilab_core.robot_profile import load_profile

VARIANT = 'payload'
EVAL_SEED = 10_007
#: Goals each scored version is deployed for (``EVAL_ENVS`` envs, the same episodes each).
EVAL_ENVS = 16
EVAL_EPISODES = 128
#: The targets: success gain (points), control p99 increase while adapting (ms).
GAIN_TARGET_POINTS = 20.0
LATENCY_TARGET_MS = 1.0
DEFAULT_ROUNDS = 30


def _history(run_dir: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in open(run_dir / 'adapt' / 'history.jsonl')]


def _robot(history: list[dict]) -> list[dict]:
    return [h for h in history if h['kind'] == 'robot']


def _run(cfg, model, rounds: int, run_dir: pathlib.Path, seed: int) -> dict:
    from unilab_adapt.sim_robot import adapt_in_simulation
    t0 = time.monotonic()
    results = adapt_in_simulation(cfg, model, VARIANTS[VARIANT], rounds, run_dir, seed=seed)
    robot = _robot(_history(run_dir))
    return {'results': results, 'robot': robot, 'wall_s': time.monotonic() - t0}


def _eval(cfg, model, flat, run_dir) -> float:
    import torch
    from unilab_bringup.evaluation import evaluate_policy
    from unilab_bridge.variants import VARIANTS
    from unilab_policy.networks import load_trained
    from unilab_policy.weights import flatten_state, unflatten_into
    trained = load_trained(model)
    bundle = trained.bundle
    cfg = cfg.model_copy(update={'model': trained.params.model})  # the network's action map
    unflatten_into(bundle, torch.from_numpy(np.asarray(flat, np.float32)),
                   flatten_state(bundle)[1])
    return evaluate_policy(cfg, bundle, 'arm6_reach', run_dir, VARIANTS[VARIANT], EVAL_ENVS,
                           EVAL_SEED, EVAL_EPISODES // EVAL_ENVS)['success']


def _plot(path: str, runs: dict) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(runs), figsize=(6 * len(runs), 3.6), squeeze=False)
    for ax, (title, hist) in zip(axes[0], runs.items()):
        robot = _robot(hist)
        x = np.arange(1, len(robot) + 1)
        ax.plot(x, [h['robot_success'] for h in robot], 'o-', label='robot success of the '
                'running version')
        for i, h in enumerate(robot):
            ax.annotate(f"v{h['version']}", (x[i], h['robot_success']), fontsize=7,
                        textcoords='offset points', xytext=(0, 5), ha='center')
        rounds = {h['round'] for h in hist if h['kind'] == 'rollback'}
        for i, h in enumerate(robot):
            if h['round'] in rounds:
                ax.axvline(x[i], color='red', alpha=0.5)
        ax.plot([], [], color='red', alpha=0.5, label='rollback')
        ax.set(title=title, xlabel='adaptation round', ylabel='success', ylim=(-0.05, 1.1))
        ax.legend(fontsize=7, loc='lower right')
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def bench_adapt(args) -> dict:
    """Run the benchmark (see the module docstring); a legged ``--robot``: ``adapt_legged``."""
    robot = getattr(args, 'robot', None)
    if robot:
        if load_profile(profile_path(robot)).legged is None:
            raise ConfigError(f'bench adapt --robot {robot}: not a legged robot (the arm\'s '
                              'bench runs without --robot)')
        return bench_adapt_legged(args, robot)
    model = getattr(args, 'model', None)
    if not model:
        raise ConfigError('bench adapt needs --model RUN_DIR (a nominal-trained arm6_reach '
                          'run, e.g. of `bin/unilab train`)')
    rounds = args.steps or DEFAULT_ROUNDS
    seed = args.seed or 7
    base = load_run_config(list(default_config_files()) + [pathlib.Path(model) / 'config.yaml'])
    cfg = base.model_copy(update={'adapt': base.adapt.model_copy(update={'min_episodes': 16})})

    def with_adapt(**kw):
        return cfg.model_copy(update={'adapt': cfg.adapt.model_copy(update=kw)})

    out: dict = {'variant': VARIANT, 'rounds': rounds, 'min_episodes': 16}
    with tempfile.TemporaryDirectory(prefix='unilab_bench_adapt_') as tmp:
        tmp = pathlib.Path(tmp)
        main = _run(cfg, model, rounds, tmp / 'adapt', seed)
        robot = main['robot']
        from unilab_adapt.fuse import Fuse
        fuse = Fuse(tmp / 'adapt' / 'adapt' / 'fuse.json')
        last = robot[-3:]
        eps = sum(h['episodes'] for h in last)
        out.update({
            'robot_success_before': round(robot[0]['robot_success'], 3),
            'robot_success_after': round(sum(h['robot_success'] * h['episodes'] for h in last)
                                         / max(eps, 1), 3),
            'versions_deployed': sum(r.kind == 'deployed' for r in main['results']),
            'candidates_rejected': sum(r.kind == 'rejected' for r in main['results']),
            'rollbacks': fuse.rollbacks, 'running_version': fuse.running,
            'adapt_wall_s': round(main['wall_s'], 1), 'eval_episodes': EVAL_EPISODES,
            'robot_success_per_round': [round(h['robot_success'], 3) for h in robot]})
        adapter_dir = tmp / 'adapt' / 'adapt' / 'versions'
        flat0 = np.load(adapter_dir / 'v0000.npy')
        flat_n = np.load(adapter_dir / f'v{fuse.running:04d}.npy')
        out['success_before'] = _eval(cfg, model, flat0, tmp)
        out['success_after'] = _eval(cfg, model, flat_n, tmp)
        hist_main = _history(tmp / 'adapt')

        sim_guard = _run(with_adapt(sabotage='huge_lr'), model, 3, tmp / 'guard', seed)
        out['sabotage_sim_rejections'] = sum(r.kind == 'rejected'
                                             for r in sim_guard['results'])
        sab = _run(with_adapt(sabotage='sign_flip', sim_tolerance=1.0, lr=3e-3,
                              layers='all'), model, max(6, rounds // 2), tmp / 'sabotage',
                   seed)
        srobot = sab['robot']
        sfuse = Fuse(tmp / 'sabotage' / 'adapt' / 'fuse.json')
        out.update({'sabotage_rollbacks': sfuse.rollbacks,
                    'sabotage_robot_start_success': round(srobot[0]['robot_success'], 3),
                    'sabotage_robot_final_success': round(srobot[-1]['robot_success'], 3),
                    'sabotage_robot_worst_success': round(min(h['robot_success']
                                                              for h in srobot), 3),
                    'sabotage_final_version': sfuse.running,
                    'sabotage_held': sfuse.held})
        sv = tmp / 'sabotage' / 'adapt' / 'versions'
        out['sabotage_start_success'] = _eval(cfg, model, np.load(sv / 'v0000.npy'), tmp)
        out['sabotage_final_success'] = _eval(
            cfg, model, np.load(sv / f'v{sfuse.running:04d}.npy'), tmp)
        if getattr(args, 'png', None):
            _plot(args.png, {f'adaptation on `{VARIANT}`': hist_main,
                             'sabotaged (sign flip, simulation test off)':
                             _history(tmp / 'sabotage')})
        cycles = getattr(args, 'latency_cycles', None)
        if cycles is None:
            from unilab_bench.adapt_latency import DEFAULT_CYCLES as cycles
        if cycles:
            from unilab_bench.adapt_latency import latency_during_adapt
            (tmp / 'latency').mkdir()
            png = getattr(args, 'png', None)
            out.update(latency_during_adapt(str(model), cycles, tmp / 'latency', png=(
                latency_png(png) if png else None)))
    out.update(targets(out))
    return out


def latency_png(png: str | pathlib.Path) -> pathlib.Path:
    """Return where ``--png FILE`` puts the latency histograms (``FILE_latency.png``)."""
    png = pathlib.Path(png)
    return png.with_name(f'{png.stem}_latency{png.suffix or ".png"}')


def targets(out: dict) -> dict:
    """Return the gain and the target verdicts of a result (see the module docstring)."""
    gain = round(100 * (out['success_after'] - out['success_before']), 1)
    adaptation = bool(
        gain >= GAIN_TARGET_POINTS and out['sabotage_rollbacks'] >= 1
        and abs(out['sabotage_final_success'] - out['sabotage_start_success']) <= 0.05)
    rise = out.get('deploy_p99_ms_adapt_increase')
    latency = None if rise is None else bool(rise <= LATENCY_TARGET_MS)
    return {'success_gain_points': gain, 'adaptation_target_met': adaptation,
            'latency_target_met': latency,
            'target_met': adaptation and latency is not False}
