# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench adapt --robot go2 --variant slippery --model RUN``: adaptation of a walking policy.

A go2_walk policy walks on the Go2 double (``unilab_adapt.legged_robot.LeggedRobot``: the
double's own 1 kHz simulation on the variant's floor, behind the legged supervisor, walk
segments of ``WALK_COMMANDS`` with a shove in each) and adapts for ``--steps`` rounds
(default ``DEFAULT_ROUNDS``, ``MIN_EPISODES`` segments each) through the adapter, its fuse
and its simulation test, in one process (``unilab_adapt.sim_robot``, as the arm's bench).

Reported: ``success_before`` / ``success_after``, walking success (a segment finished
without a fall or a fall stop) of the starting version and of the version running at the
end, each deterministic (as ``unilab deploy`` acts) over ``EVAL_SEGMENTS`` segments from
``EVAL_SEED``, with their tracking errors on the double's ground truth and falls, in all
and per command (``per_command_*``); the same on the ``real`` variant's ordinary floor
(``*_on_real``);
``*_before_on_ice``: the starting version on a floor of ``ICE_FRICTION`` (below anything
it trained on), ``ICE_SEGMENTS`` segments;
``robot_success_per_round``: what the adapter saw of the sampling policy each round;
``falls_after_update``: falls in the first segment after each deployed version (an update
that tips the robot over shows there); versions deployed, rejected, rolled back.
``success_gain_points`` against ``GAIN_TARGET_POINTS``. Last, over DDS, the legged
control loop without and with the adapter beside it (``unilab_bench.adapt_legged_latency``,
``--latency-cycles`` control cycles per side, 0 skips it): the supervisor's motor-loop
period error p99 may rise by ``LATENCY_TARGET_MS`` at most.
"""

from __future__ import annotations

import json
import pathlib
import tempfile
import time

import numpy as np
from unilab_adapt.fuse import Fuse
from unilab_adapt.legged_robot import LeggedRobot
from unilab_adapt.sim_robot import adapt_in_simulation
from unilab_bench.adapt_legged_latency import DEFAULT_CYCLES, latency_legged
from unilab_bridge.variants import LEGGED_VARIANTS
from unilab_bringup.deploy import describe_model
from unilab_bringup.direct import make_gate
from unilab_bringup.graphs import policy_params
from unilab_bringup.paths import default_config_files, profile_path
from unilab_bringup.sim_loop import SimLoop
from unilab_core.config import ConfigError, load_run_config
from unilab_core.robot_profile import load_profile
from unilab_policy.networks import load_trained, make_actor
from unilab_policy.weights import flatten_state, unflatten_into

DEFAULT_ROUNDS = 20
MIN_EPISODES = 16
EVAL_SEED, ADAPT_SEED = 10_007, 7
EVAL_SEGMENTS = 48
#: Seconds per walk segment; simulated envs of the adapter's simulation test (one episode each).
SEGMENT_S = 5.0
SIM_ENVS = 8
GAIN_TARGET_POINTS = 20.0
#: Before adapting, also on ice: floor friction (go2_walk trains on 0.2-1.25), segments.
ICE_FRICTION, ICE_SEGMENTS = 0.1, 16
#: The control loop's p99 may rise by this much (ms) while the adapter works beside it.
LATENCY_TARGET_MS = 0.5


def _walk(cfg, desc, bundle, profile, variant: str, segments: int, seed: int,
          friction: float | None = None) -> dict:
    """Return walking success and tracking of ``bundle`` acting deterministically."""
    with tempfile.TemporaryDirectory(prefix='unilab_bench_walk_') as tmp:
        gate = make_gate(cfg, tmp)
    actor = make_actor(policy_params(cfg, desc.task, mode='deploy', num_envs=1), 'cpu',
                       bundle, log=lambda *_: None)
    actor.set_version(0)
    robot = LeggedRobot(profile, desc.task, variant, seed=seed, segment_s=SEGMENT_S,
                        friction=friction)
    loop = SimLoop(robot, actor, gate)
    loop.reset(seed=seed)
    while len(robot.tally.segments) < segments:
        loop.step()
    return {**robot.tally.summary(), 'per_command': robot.tally.per_command()}


def _with_weights(bundle, flat):
    import copy

    import torch
    work = copy.deepcopy(bundle)
    unflatten_into(work, torch.from_numpy(np.asarray(flat, np.float32)), flatten_state(work)[1])
    return work


def bench_adapt_legged(args, robot_name: str) -> dict:
    """Run the benchmark (see the module docstring)."""
    model = getattr(args, 'model', None)
    if not model:
        raise ConfigError(f'bench adapt --robot {robot_name} needs --model RUN_DIR (a trained '
                          f'{load_profile(profile_path(robot_name)).task} run)')
    variant = getattr(args, 'variant', None) or 'slippery'
    if variant not in LEGGED_VARIANTS:
        raise ConfigError(f'--variant {variant}: expected one of {", ".join(LEGGED_VARIANTS)}')
    profile = load_profile(profile_path(robot_name))
    desc = describe_model(model)
    if desc.task.name != profile.task:
        raise ConfigError(f'model {model}: trained on `{desc.task.name}`, robot {robot_name} '
                          f'runs `{profile.task}`')
    rounds = args.steps or DEFAULT_ROUNDS
    base = load_run_config(list(default_config_files()) + [pathlib.Path(model) / 'config.yaml'])
    cfg = base.model_copy(update={
        'model': desc.params.model,
        'adapt': base.adapt.model_copy(update={
            'min_episodes': MIN_EPISODES, 'sim_envs': SIM_ENVS, 'sim_episodes_per_env': 1})})
    bundle = load_trained(model).bundle
    out: dict = {'benchmark': 'adapt', 'robot': robot_name, 'variant': variant, 'rounds': rounds,
                 'min_episodes': MIN_EPISODES, 'eval_segments': EVAL_SEGMENTS,
                 'segment_s': SEGMENT_S, 'sim_envs': SIM_ENVS,
                 'model': str(pathlib.Path(model).resolve())}
    # Scored on the variant, and on the ordinary floor (`real`): what adapting to a
    # slippery floor did to walking elsewhere.
    floors = {'': variant, **({'_on_real': 'real'} if variant != 'real' else {})}
    t0 = time.monotonic()
    for suffix, floor in floors.items():
        before = _walk(cfg, desc, bundle, profile, floor, EVAL_SEGMENTS, EVAL_SEED)
        out.update({f'{k}_before{suffix}': v for k, v in before.items()})
    # Before adapting only: the starting policy on a floor far below its training's
    # friction (ICE_FRICTION): whether a slipperier floor than the variant's makes it fall.
    ice = _walk(cfg, desc, bundle, profile, variant, ICE_SEGMENTS, EVAL_SEED, ICE_FRICTION)
    out.update({'ice_friction': ICE_FRICTION,
                **{f'{k}_before_on_ice': v for k, v in ice.items()}})
    out['eval_wall_s'] = round(time.monotonic() - t0, 1)
    robot = LeggedRobot(profile, desc.task, variant, seed=ADAPT_SEED, segment_s=SEGMENT_S)
    deployed_at: list[int] = []

    def on_round(adapter, result):
        if result.kind in ('deployed', 'rollback'):
            deployed_at.append(len(robot.tally.segments))

    with tempfile.TemporaryDirectory(prefix='unilab_bench_adapt_legged_') as tmp:
        tmp = pathlib.Path(tmp)
        t0 = time.monotonic()
        results = adapt_in_simulation(cfg, model, None, rounds, tmp, seed=ADAPT_SEED,
                                      on_round=on_round, robot=robot)
        out['adapt_wall_s'] = round(time.monotonic() - t0, 1)
        fuse = Fuse(tmp / 'adapt' / 'fuse.json')
        history = [json.loads(line) for line in open(tmp / 'adapt' / 'history.jsonl')]
        running = np.load(tmp / 'adapt' / 'versions' / f'v{fuse.running:04d}.npy')
    seg = robot.tally.segments
    out.update({
        'versions_deployed': sum(r.kind == 'deployed' for r in results),
        'candidates_rejected': sum(r.kind == 'rejected' for r in results),
        'rollbacks': fuse.rollbacks, 'running_version': fuse.running,
        'robot_segments': len(seg), 'robot_falls': sum(s.fell for s in seg),
        'robot_success_per_round': [round(h['robot_success'], 3) for h in history
                                    if h['kind'] == 'robot'],
        'falls_after_update': sum(seg[i].fell for i in deployed_at if i < len(seg)),
        'updates_followed': sum(i < len(seg) for i in deployed_at)})
    adapted = _with_weights(bundle, running)
    for suffix, floor in floors.items():
        after = _walk(cfg, desc, adapted, profile, floor, EVAL_SEGMENTS, EVAL_SEED)
        out.update({f'{k}_after{suffix}': v for k, v in after.items()})
    cycles = getattr(args, 'latency_cycles', None)
    if cycles is None:
        cycles = DEFAULT_CYCLES
    if cycles:
        with tempfile.TemporaryDirectory(prefix='unilab_bench_adapt_latency_') as tmp:
            out.update(latency_legged(str(model), profile_path(robot_name).resolve(), variant,
                                      cycles, pathlib.Path(tmp)))
    out.update(targets(out))
    return out


def targets(out: dict) -> dict:
    """Return the gain and the verdicts: +20 points, no fall after an update, latency."""
    gain = round(100 * (out['success_after'] - out['success_before']), 1)
    rise = out.get('control_p99_ms_adapt_increase')
    latency = None if rise is None else bool(rise <= LATENCY_TARGET_MS)
    walking = bool(gain >= GAIN_TARGET_POINTS and out['falls_after_update'] == 0)
    return {'success_gain_points': gain, 'adaptation_target_met': walking,
            'latency_target_met': latency, 'target_met': walking and latency is not False}
