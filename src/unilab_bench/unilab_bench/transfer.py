# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench transfer``: sim2real success measured through the deploy path, not in-process.

Two arm6_reach policies of the same seed, one trained with the ``config/sim2real.yaml``
preset's disturbance injection (``injection``) and one without (``nominal``) (as
``bench sim2real`` trains them; ``--injection RUN_DIR`` / ``--nominal RUN_DIR`` use
existing runs instead), are each deployed with ``unilab deploy --armed`` (its own
process) on the robot double's held-out ``real`` variant (``unilab robot-sim
--variant real``, another process), whose scenario node publishes ``--goals`` goals
(100) on ``/goal_pose`` one after another and scores a goal a success when the tool
comes within 5 cm before the goal's time-out. Beside each, the in-process evaluation
of the same checkpoint on the same variant (``unilab_bringup.evaluation.evaluate_policy``:
success = final tool distance below 5 cm at the end of an episode). Reports
``success_injection``, ``success_nominal`` (fractions) and ``*_inproc``; target:
``success_injection`` >= 0.89 and >= 2x ``success_nominal``.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
import tempfile
import time

from unilab_bench.procs import start, stop
from unilab_bench.sim2real import _config, DEFAULT_STEPS, EVAL_SEED, TASK
from unilab_bridge.variants import REAL_VARIANT
from unilab_core.config import load_run_config

ROBOT = 'arm6'
DEFAULT_GOALS = 100
#: The double's seed: start pose, goals and the real variant's draws (no training uses it).
DOUBLE_SEED = 10_007


def _deployed_success(model: str, goals: int, tmp: pathlib.Path, name: str) -> dict:
    """Deploy ``model`` on the real-variant double until its scenario has scored every goal."""
    results = tmp / f'{name}_results.json'
    cli = [sys.executable, '-m', 'unilab.cli']
    with open(tmp / f'{name}_double.log', 'w') as dlog, \
            open(tmp / f'{name}_deploy.log', 'w') as plog:
        double = start(cli + ['robot-sim', '--robot', ROBOT, '--variant', 'real', '--seed',
                              str(DOUBLE_SEED), '--goals', str(goals), '--results',
                              str(results)], dlog)
        deploy = start(cli + ['deploy', model, '--robot', ROBOT, '--armed', '--run-dir',
                              str(tmp / f'{name}_deploy')], plog)
        try:
            t0 = time.monotonic()
            # The scenario ends the double when every goal is scored (at most its time-out
            # each, plus start-up).
            double.wait(timeout=120 + goals * 10)
            wall = time.monotonic() - t0
            if deploy.poll() is not None:
                raise RuntimeError(f'bench transfer: deploy of {name} exited '
                                   f'({deploy.returncode}) before its scenario ended; see '
                                   f'{tmp / (name + "_deploy.log")}')
        finally:
            stop(deploy)
            stop(double)
    if not results.is_file():
        raise RuntimeError(f'bench transfer: the scenario wrote no results for {name}')
    summary = json.loads(results.read_text())['summary']
    return {**summary, 'wall_s': round(wall, 1)}


def bench_transfer(args) -> dict:
    """Deploy the injection- and nominal-trained policies on the real double; score both."""
    from unilab_bringup.direct import train_direct
    from unilab_bringup.evaluation import evaluate_policy
    from unilab_policy.networks import load_trained
    goals = getattr(args, 'goals', None) or DEFAULT_GOALS
    steps = args.steps or DEFAULT_STEPS
    out = {'benchmark': 'transfer', 'robot': ROBOT, 'variant': 'real', 'goals': goals,
           'seed': args.seed, 'double_seed': DOUBLE_SEED, 'eval_seed': EVAL_SEED}
    # Kept when anything fails: the logs and the policies trained (minutes of training).
    tmp = pathlib.Path(tempfile.mkdtemp(prefix='unilab-bench-transfer-'))
    try:
        for label, injection in (('injection', True), ('nominal', False)):
            run = getattr(args, label, None)
            cfg = _config(steps, args.seed, args.num_envs, injection)
            if run:
                out[f'model_{label}'] = str(pathlib.Path(run).resolve())
            else:
                run = str(tmp / label)
                train_direct(cfg, run)
                out[f'model_{label}'] = f'trained here: config/sim2real.yaml, disturbances ' \
                    f'{"on" if injection else "off"}, {steps} steps, seed {args.seed}'
            deployed = _deployed_success(run, goals, tmp, label)
            out[f'deployed_{label}'] = deployed
            out[f'success_{label}'] = deployed['success_fraction']
            trained = load_trained(run)
            cfg = load_run_config([pathlib.Path(run) / 'config.yaml']).model_copy(
                update={'model': trained.params.model})  # the run's network and action map
            inproc = evaluate_policy(cfg, trained.bundle, TASK, str(tmp / f'{label}_eval'),
                                     REAL_VARIANT, cfg.rollout.num_envs, EVAL_SEED)
            out[f'inproc_{label}'] = inproc
            out[f'success_{label}_inproc'] = inproc['success']
    except BaseException:
        print(f'bench transfer: failed; logs and runs kept in {tmp}', file=sys.stderr)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    a, b = out['success_injection'], out['success_nominal']
    out['target'] = 'success_injection >= 0.89 and >= 2x success_nominal'
    out['target_met'] = bool(a is not None and b is not None and a >= 0.89 and a >= 2 * b)
    return out
