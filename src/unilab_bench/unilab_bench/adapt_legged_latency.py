# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``bench adapt --robot go2``'s latency part: the legged control loop without and with the adapter.

Over DDS, in separate processes as on a robot: the legged double (``unilab robot-sim``, the
variant's floor, standing start) and either ``unilab deploy RUN --armed`` (the network in
torch, ``run.deploy_runtime: torch``, as the adapting policy runs it) or ``unilab adapt RUN
--armed`` (the same control process plus the recorder and the adapter, rounds due every
``PERIOD_S`` after ``MIN_EPISODES`` walk segments, a simulation test of 2 episodes); this
process is the operator, changing
the ``/cmd_vel`` command every ``SEGMENT_S`` (a new command is a new episode). The robot's
profile is the shipped one with the double's ``/odom`` as its state estimate
(``task_inputs.estimate_topic``), which the walking reward needs.

A legged robot's control loop is the supervisor's motor-rate loop (targets to the driver
at ``legged.motor_rate_hz``): measured is its period error (``legged_period_error_*``:
how late each tick came) and the gate's action latency (a policy action received -> its
command published), each from the control process's own ``summary.json``, per run. The
two sides alternate in ``ROUNDS`` rounds (the machine's drift hits both alike); reported
are each side's per-round p99s and their means, and the mean increase.
"""

from __future__ import annotations

import json
import pathlib
import sys
import time

from unilab_bench.procs import start, stop
from unilab_bench.robot_legged import _Operator
from unilab_core.robot_profile import load_profile
import yaml

#: Control cycles (at the profile's rate) per side, all rounds together: 120 s at 50 Hz.
DEFAULT_CYCLES = 6000
ROUNDS = 3
SEGMENT_S = 1.5
PERIOD_S = 2.0
MIN_EPISODES = 4
START_S = 120.0
COMMANDS = ((0.5, 0.0, 0.0), (0.0, 0.0, 0.8), (-0.5, 0.0, 0.0), (0.0, 0.3, 0.0))
#: What each run reports, from its control process's summary.json (``safety``).
KEYS = ('legged_period_error_p50_us', 'legged_period_error_p99_us',
        'legged_period_error_max_us', 'legged_deadline_misses', 'legged_loop_cycles',
        'action_latency_p50_us', 'action_latency_p99_us', 'legged_mode', 'legged_fault',
        'legged_faults')
#: What each run reports of the double (its ``--stats`` file).
DOUBLE_KEYS = ('joint_state_gap_max_ms', 'joint_state_gaps_past_timeout')


def profile_with_estimate(source: pathlib.Path, out_dir: pathlib.Path) -> pathlib.Path:
    """Write ``source``'s profile with ``estimate_topic`` its odometry topic; return it."""
    data = yaml.safe_load(source.read_text())
    inputs = data['robot'].setdefault('task_inputs', {})
    inputs['estimate_topic'] = inputs.get('odom_topic', '/odom')
    robot = data['robot']
    for key in ('joint_limits_file', 'urdf_file', 'model_file'):
        value = robot.get(key)
        if value and '://' not in value and not pathlib.Path(value).is_absolute():
            robot[key] = str((source.parent / value).resolve())
    path = out_dir / f'{source.stem}_estimate.yaml'
    path.write_text(yaml.safe_dump(data))
    return path


def _run(name: str, command: list[str], profile_file: pathlib.Path, variant: str,
         seconds: float, run_dir: pathlib.Path, tmp: pathlib.Path, seed: int) -> dict:
    profile = load_profile(profile_file)
    cli = [sys.executable, '-m', 'unilab.cli']
    with open(tmp / f'{name}.log', 'w') as log, open(tmp / f'{name}_double.log', 'w') as dlog:
        double = start(cli + ['robot-sim', '--robot', str(profile_file), '--variant', variant,
                              '--start', 'stand', '--seed', str(seed),
                              '--stats', str(tmp / f'{name}_double.json')], dlog)
        ctrl = start(command + ['--run-dir', str(run_dir)], log)
        op = _Operator(profile, profile.legged.damping_kd)
        try:
            t0 = time.monotonic()
            while not op.commands:
                for who, p in (('double', double), (name, ctrl)):
                    if p.poll() is not None:
                        raise RuntimeError(f'bench adapt: the {who} exited ({p.returncode}); '
                                           f'see {tmp}/{name}*.log')
                if time.monotonic() - t0 > START_S:
                    raise RuntimeError(f'bench adapt: {name}: no command in {START_S:g} s')
                time.sleep(0.2)
            t0 = time.monotonic()
            while time.monotonic() - t0 < seconds:
                seg = int((time.monotonic() - t0) / SEGMENT_S) % len(COMMANDS)
                op.command(*COMMANDS[seg])
                time.sleep(0.1)
        finally:
            op.close()
            stop(ctrl)
            stop(double)
    summary = run_dir / 'summary.json'
    safety = json.loads(summary.read_text()).get('safety', {}) if summary.is_file() else {}
    # The double's own silences: a stale-input fault with none of them was the controller's.
    dstats = tmp / f'{name}_double.json'
    double_stats = json.loads(dstats.read_text()) if dstats.is_file() else {}
    return {**{k: safety.get(k) for k in KEYS},
            **{f'double_{k}': double_stats.get(k) for k in DOUBLE_KEYS}}


def _candidates(run_dir: pathlib.Path) -> int:
    history = run_dir / 'adapt' / 'history.jsonl'
    if not history.is_file():
        return 0
    return sum(json.loads(line)['kind'] == 'candidate' for line in open(history))


def latency_legged(model: str, source: pathlib.Path, variant: str, cycles: int,
                   tmp: pathlib.Path, rounds: int = ROUNDS) -> dict:
    """Time the legged control loop without and with the adapter (see the module doc)."""
    profile_file = profile_with_estimate(source, tmp)
    rate = load_profile(profile_file).control_rate_hz
    fast = tmp / 'adapt_rounds.yaml'
    # Rounds as often as the work allows, the simulation test short (2 episodes), so that
    # several run inside each measured window.
    fast.write_text(yaml.safe_dump({'adapt': {'period_s': PERIOD_S, 'min_episodes': MIN_EPISODES,
                                              'sim_envs': 2, 'sim_episodes_per_env': 1}}))
    same_runtime = tmp / 'deploy_torch.yaml'
    same_runtime.write_text(yaml.safe_dump({'run': {'deploy_runtime': 'torch'}}))
    cli = [sys.executable, '-m', 'unilab.cli']
    robot = ['--robot', str(profile_file), '--armed']
    runs = {'deploy': cli + ['deploy', model, *robot, '--config', str(same_runtime)],
            'during_adapt': cli + ['adapt', model, *robot, '--config', str(fast)]}
    seconds = cycles / rate / rounds
    per: dict = {name: [] for name in runs}
    candidates = 0
    for i in range(rounds):
        for name, command in runs.items():
            run_dir = tmp / f'{name}_{i}'
            per[name].append(_run(f'{name}_{i}', command, profile_file, variant, seconds,
                                  run_dir, tmp, seed=i))
            candidates += _candidates(run_dir) if name == 'during_adapt' else 0
    out: dict = {'latency_cycles': cycles, 'latency_rounds': rounds,
                 'adapt_rounds_during_latency': candidates}
    for name, rows in per.items():
        suffix = '' if name == 'deploy' else '_during_adapt'
        out[f'latency_runs{suffix}'] = rows
        for key in ('legged_period_error_p99_us', 'action_latency_p99_us'):
            vals = [r[key] for r in rows if r[key] is not None]
            out[f'{key}_mean{suffix}'] = round(sum(vals) / len(vals), 1) if vals else None
    a, b = (out['legged_period_error_p99_us_mean'],
            out['legged_period_error_p99_us_mean_during_adapt'])
    out['control_p99_ms_adapt_increase'] = (None if a is None or b is None
                                            else round((b - a) / 1000, 3))
    return out
