# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench graph``: control steps per second of the ROS 2 graph against the loop without ROS.

The real graph (bridge -> perception -> policy -> safety -> bridge, composed on
one EventsExecutor) against the same task, actor and safety gate stepped by
``unilab_bringup.sim_loop.SimLoop`` (the floor the graph's messaging overhead is
measured from). Both are built from the same configuration and graph
description; no PPO update runs while either is timed. Besides the rates, each path's
control step (one state out to the next, p50 / p99 over every round); for
``--task Humanoid-v5`` the seed's humanoid figure stands beside them.

``--view``: what a live view costs training (docs/view.md). The graph alone, with the
view (``unilab view --training``'s node and a viser client drawing its page) reading the
bridge's screen-rate ``/unilab/sim/view/joint_states`` (``view``), and with the same view
reading the per-step ``/unilab/sim/joint_states`` (``view_per_step``, what the view read
before: the bridge then builds the batch's JointState every step), in alternated rounds;
every case waits ``VIEW_SETTLE_S`` between building its graph and stepping it; each
round's rate and the median of the rounds' ratios to the graph alone.
"""

from __future__ import annotations

import json
import pathlib
import platform
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
from unilab_bench.deploy import free_port
from unilab_core import topics
from unilab_core.config import load_run_config
from unilab_safety.build import build_gate


WARMUP = 20


#: --view: rounds of (alone, view, view_per_step), alternated
VIEW_ROUNDS = 3
#: rounds of (direct loop, graph), alternated
GRAPH_ROUNDS = 5
#: --view: seconds every case waits, its graph built (and its view subscribed), before its
#: first step: a view loads the robot and its client connects; the graph's start-up ends
VIEW_SETTLE_S = 8.0


#: steps the graph may run past the timed ones before the PPO update (one executor call can
#: run several control steps back to back when the nodes hand over inline)
MARGIN = 64


def _overrides(task_name: str, num_envs: int, steps: int) -> dict:
    """Return the config both paths run: one rollout longer than the timed steps."""
    horizon = steps + WARMUP + MARGIN
    return {'run.task': task_name, 'rollout.num_envs': num_envs,
            'rollout.rollout_length': horizon - horizon % 8 + 8,
            'rollout.chunk_length': 8, 'logging.tensorboard': False,
            'run.total_steps': 10 ** 9}


def _direct_loop(task_name: str, num_envs: int, steps: int) -> dict:
    """Return control steps/s and step periods (s) of task + actor + gate without ROS."""
    from unilab_bringup.prepare import describe_training
    from unilab_bringup.sim_loop import SimLoop
    from unilab_bridge.tasks import make_task
    from unilab_policy.device import setup_device
    from unilab_policy.networks import make_actor

    cfg = load_run_config([], _overrides(task_name, num_envs, steps))
    with tempfile.TemporaryDirectory() as tmp:
        _, _, graph = describe_training(cfg, tmp)
        p = graph.parameters
        gate = build_gate(p['safety'])
    pp, bp = p['policy'], p['bridge']
    actor = make_actor(pp, setup_device(pp.run.device, pp.run.torch_threads))
    actor.set_version(0)
    with make_task(bp.run.task, bp.num_envs, seed=bp.run.seed,
                   disturbances=bp.disturbances) as task:
        stepped: list[float] = []   # the time each step's state is out, as in the graph
        # chunks are made, no trainer takes them
        loop = SimLoop(task, actor, gate, on_step=lambda _: stepped.append(time.perf_counter()))
        loop.reset(seed=bp.run.seed)
        loop.run(until=lambda: loop.seq >= WARMUP)
        t0 = time.perf_counter()
        loop.run(until=lambda: loop.seq >= WARMUP + steps)
        elapsed = time.perf_counter() - t0
        return {'rate': steps / elapsed, 'periods': np.diff(stepped[WARMUP - 1:]).tolist()}


def _graph_loop(task_name: str, num_envs: int, steps: int, beside=None,
                settle_s: float = 0.0) -> dict:
    """
    Return control steps/s of the composed ROS 2 graph (no PPO update during timing).

    ``beside``: ``(commands, topic)``: processes started once the graph exists (a view and
    its client), timing only once a node ``unilab_view`` subscribed ``topic``; stopped
    after timing. ``settle_s``: seconds the graph then waits before its first step (with
    or without a view, so every case starts as settled).
    """
    import rclpy
    from unilab_bringup.prepare import prepare_run
    from unilab_core.ros.runtime import create_composed, detach_and_shutdown, make_executor

    with tempfile.TemporaryDirectory() as tmp:
        run = prepare_run([], _overrides(task_name, num_envs, steps), run_dir=tmp)
        rclpy.init(args=['--ros-args', '--params-file', str(run.params_file)])
        nodes = create_composed(run.graph.nodes, run.graph.ros_args)
        bridge = next(n for n in nodes if n.get_name() == 'bridge')
        # The time each step's state goes out, read where it happens: with inline hand-offs
        # one spin_once can run several steps, so the loop below cannot stop on the dot.
        published: dict[int, float] = {}
        publish = bridge._publish

        def timed_publish():
            published.setdefault(bridge.seq, time.perf_counter())
            publish()
        bridge._publish = timed_publish
        executor = make_executor(run.cfg.run.executor)
        for n in nodes:
            executor.add_node(n)
        procs = []
        try:
            if beside is not None:
                procs = _start_beside(bridge, *beside)
            time.sleep(settle_s)
            deadline = time.monotonic() + 60.0
            while bridge.seq < WARMUP and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            while bridge.seq < WARMUP + steps and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            # The window is fixed (steps WARMUP .. WARMUP + steps): the PPO update comes
            # MARGIN steps after it, however far one spin_once ran past either end.
            done = min(bridge.seq, WARMUP + steps) - WARMUP
            elapsed = published[WARMUP + done] - published[WARMUP]
        finally:
            for proc in procs:
                proc.send_signal(signal.SIGINT)
            for proc in procs:
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
            for n in nodes:
                getattr(n, 'close', lambda: None)()
            detach_and_shutdown(executor, nodes)
            for n in nodes:
                n.destroy_node()
            rclpy.try_shutdown()
    times = [published[s] for s in range(WARMUP, WARMUP + done + 1)]
    return {'steps': done, 'rate': done / elapsed, 'periods': np.diff(times).tolist()}


def _start_beside(bridge, commands, topic):
    """Start ``commands``; return them once ``unilab_view`` reads ``topic``."""
    procs = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for c in commands]
    deadline = time.monotonic() + 60.0
    while not any(i.node_name == 'unilab_view'
                  for i in bridge.get_subscriptions_info_by_topic(topic)):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            for p in procs:
                p.kill()
            raise RuntimeError(f'bench graph --view: no view subscribed {topic} in 60 s')
        time.sleep(0.2)
    return procs


def _view(topic: str, stats: pathlib.Path):
    """Return ``(commands, topic)``: ``unilab view --training``'s node on ``topic``, a client."""
    port = free_port()
    view = [sys.executable, '-m', 'unilab_view.view_node', '--port', str(port),
            '--joint-states', topic, '--description', topics.SIM_ROBOT_DESCRIPTION,
            '--goal', topics.SIM_GOAL_POSE, '--command', topics.SIM_COMMAND]
    client = [sys.executable, '-m', 'unilab_bench.view_client', '--viser-port', str(port),
              '--stats', str(stats)]
    return [view, client], topic


def _view_rounds(task: str, num_envs: int, steps: int, rounds: int) -> dict:
    """Return each case's rate per round and the median of its ratios to the graph alone."""
    cases = {'alone': None, 'view': topics.SIM_VIEW_JOINT_STATES,
             'view_per_step': topics.SIM_JOINT_STATES}
    rates = {name: [] for name in cases}
    clients = {name: [] for name in cases if cases[name]}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for name, topic in cases.items():
                stats = pathlib.Path(tmp) / f'{name}_{r}.json'
                beside = _view(topic, stats) if topic else None
                rates[name].append(
                    _graph_loop(task, num_envs, steps, beside, VIEW_SETTLE_S)['rate'])
                if topic and stats.is_file():
                    clients[name].append(json.loads(stats.read_text())['viser']['messages'])
    out = {f'{name}_steps_per_s': [round(v, 1) for v in vals] for name, vals in rates.items()}
    for name in ('view', 'view_per_step'):
        ratios = [v / a for v, a in zip(rates[name], rates['alone'])]
        out[f'{name}_vs_alone_round_median'] = round(float(np.median(ratios)), 3)
        out[f'{name}_client_messages'] = clients[name]
    return out


#: the seed's figure for a task, reported beside ours: a humanoid walking policy's training
#: step, p50 / p99, and the stack it replaced (its number of envs is not stated)
SEED_FIGURES = {'Humanoid-v5': {'seed_step_ms_p50': 3.2, 'seed_step_ms_p99': 4.1,
                                'seed_replaced_stack_step_ms': 8.7}}


def _step_latency(name: str, rounds: list[dict]) -> dict:
    """Return p50 / p99 (ms) of one control step, state out to next state out, all rounds."""
    periods = np.concatenate([r['periods'] for r in rounds]) * 1e3
    return {f'{name}_step_ms_p50': round(float(np.percentile(periods, 50)), 3),
            f'{name}_step_ms_p99': round(float(np.percentile(periods, 99)), 3)}


def bench_graph(args) -> dict:
    """Graph control rate vs direct loop, same config / task / actor / gate / envs."""
    task = args.task or 'arm6_reach'
    args.num_envs = args.num_envs or 64
    args.steps = args.steps or 300
    if getattr(args, 'view', False):
        return {'benchmark': 'graph_view', 'task': task, 'num_envs': args.num_envs,
                'control_steps': args.steps, 'rounds': args.rounds or VIEW_ROUNDS,
                **_view_rounds(task, args.num_envs, args.steps, args.rounds or VIEW_ROUNDS),
                'machine': f'{platform.machine()} {platform.python_version()}',
                'numpy': np.__version__}
    # Alternated rounds (direct, graph, direct, ...): a machine whose load changes meets
    # both alike; the medians and the median of the rounds' ratios are reported.
    rounds = args.rounds or GRAPH_ROUNDS
    directs, graphs = [], []
    for _ in range(rounds):
        directs.append(_direct_loop(task, args.num_envs, args.steps))
        graphs.append(_graph_loop(task, args.num_envs, args.steps))
    direct = float(np.median([d['rate'] for d in directs]))
    graph = {'steps': min(g['steps'] for g in graphs),
             'rate': float(np.median([g['rate'] for g in graphs]))}
    ratios = [g['rate'] / d['rate'] for g, d in zip(graphs, directs)]
    return {
        'benchmark': 'graph',
        'task': task,
        'num_envs': args.num_envs,
        'rounds': rounds,
        'round_ratios': [round(r, 3) for r in ratios],
        'round_ratio_median': round(float(np.median(ratios)), 3),
        'graph_steps_per_s': round(graph['rate'], 1),
        'direct_steps_per_s': round(direct, 1),
        'graph_env_steps_per_s': round(graph['rate'] * args.num_envs, 1),
        'direct_env_steps_per_s': round(direct * args.num_envs, 1),
        'ratio_graph_vs_direct': round(graph['rate'] / direct, 3),
        'graph_overhead_ms_per_step': round(1e3 / graph['rate'] - 1e3 / direct, 3),
        **_step_latency('graph', graphs), **_step_latency('direct', directs),
        **SEED_FIGURES.get(task, {}),
        'machine': f'{platform.machine()} {platform.python_version()}',
        'numpy': np.__version__,
    }
