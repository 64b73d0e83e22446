# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench NAME``: benchmarks that report named figures as JSON.

Every benchmark runs its baseline in the same process, right before or after
the measured path, and reports the ratio; nothing here is a pass/fail test.

``graph``: control steps per second of the real ROS 2 graph (bridge ->
perception -> policy -> safety -> bridge, composed on one EventsExecutor)
against the same task, policy and safety gate called in a plain Python loop
(the floor the graph's messaging overhead is measured from).
"""

from __future__ import annotations

import platform
import tempfile
import time

import numpy as np


def _direct_loop(task_name: str, num_envs: int, steps: int, seed: int = 0) -> float:
    """Return control steps/s of task + policy + gate without ROS."""
    import torch
    from unilab.prepare import task_info
    from unilab_bridge.tasks import make_task, observation
    from unilab_policy.models import ActorCritic, PolicyBundle
    from unilab_safety.gate import SafetyGate
    from unilab_safety.limits import load_joint_limits

    info, limits = task_info(task_name)
    clean = {j: {k: v for k, v in lim.items() if v == v} for j, lim in limits.items()}
    gate = SafetyGate(load_joint_limits({'joint_limits': clean}, list(info.joint_names)),
                      info.command_interface, info.control_dt)
    torch.manual_seed(seed)
    bundle = PolicyBundle(ActorCritic(info.obs_dim, info.action_dim, (128, 128))).eval()
    task = make_task(task_name, num_envs, seed=seed)
    state = task.reset(seed=seed)
    obs_t = torch.zeros(num_envs, info.obs_dim)
    t0 = 0.0
    warmup = 20
    for i in range(steps + warmup):
        if i == warmup:
            t0 = time.perf_counter()
        obs_t.copy_(torch.from_numpy(observation(state, task)))
        with torch.inference_mode():
            out = bundle.actor_critic.act(bundle.normalize(obs_t))
        cmd = gate.filter(out.action.numpy()).command
        state = task.step(cmd)
    rate = steps / (time.perf_counter() - t0)
    task.close()
    return rate


def _graph_loop(task_name: str, num_envs: int, steps: int) -> dict:
    """Return control steps/s of the composed ROS 2 graph (no PPO update during timing)."""
    import rclpy
    from unilab.prepare import prepare_run
    from unilab_core.ros.runtime import create_composed, make_executor

    warmup = 20
    horizon = steps + warmup + 8
    with tempfile.TemporaryDirectory() as tmp:
        overrides = {'run.task': task_name, 'rollout.num_envs': num_envs,
                     'rollout.rollout_length': horizon - horizon % 8 + 8,
                     'rollout.chunk_length': 8, 'logging.tensorboard': False,
                     'run.total_steps': 10 ** 9}
        run = prepare_run([], overrides, run_dir=tmp)
        rclpy.init(args=['--ros-args', '--params-file', str(run.params_file)])
        nodes = create_composed(run.graph.nodes, [])
        bridge = next(n for n in nodes if n.get_name() == 'bridge')
        executor = make_executor(run.cfg.run.executor)
        for n in nodes:
            executor.add_node(n)
        try:
            deadline = time.monotonic() + 60.0
            while bridge.seq < warmup and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            start_seq, t0 = bridge.seq, time.perf_counter()
            while bridge.seq < start_seq + steps and time.monotonic() < deadline:
                executor.spin_once(timeout_sec=0.05)
            elapsed = time.perf_counter() - t0
            done = bridge.seq - start_seq
        finally:
            executor.shutdown(timeout_sec=1.0)
            for n in nodes:
                n.destroy_node()
            rclpy.try_shutdown()
    return {'steps': done, 'rate': done / elapsed}


def bench_graph(args) -> dict:
    """Graph control rate vs direct loop, same task / policy / gate / envs."""
    task = getattr(args, 'task', None) or 'arm6_reach'
    direct = _direct_loop(task, args.num_envs, args.steps)
    graph = _graph_loop(task, args.num_envs, args.steps)
    return {
        'benchmark': 'graph',
        'task': task,
        'num_envs': args.num_envs,
        'control_steps': graph['steps'],
        'graph_steps_per_s': round(graph['rate'], 1),
        'direct_steps_per_s': round(direct, 1),
        'graph_env_steps_per_s': round(graph['rate'] * args.num_envs, 1),
        'direct_env_steps_per_s': round(direct * args.num_envs, 1),
        'ratio_graph_vs_direct': round(graph['rate'] / direct, 3),
        'graph_overhead_ms_per_step': round(1e3 / graph['rate'] - 1e3 / direct, 3),
        'machine': f'{platform.machine()} {platform.python_version()}',
        'numpy': np.__version__,
    }


BENCHMARKS = {'graph': bench_graph}


def run_benchmark(name: str, args) -> dict:
    """Run one benchmark by name; unknown names list the available ones."""
    from unilab_core.config import ConfigError
    if name not in BENCHMARKS:
        raise ConfigError(f'unknown benchmark `{name}`; available: {", ".join(BENCHMARKS)}')
    return BENCHMARKS[name](args)
