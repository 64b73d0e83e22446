# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench bridge``: bridge cold start and batched physics throughput vs gymnasium.

Cold start runs in a fresh Python process: ``process_start_ms`` is from spawning the process
to the first observation published by a real BridgeNode (imports, rclpy/DDS start-up,
model load, reset, first publish); ``cold_start_ms`` is from "model path known" (the node is
constructed with the task name) to that first publish (the node's ``first_observation_at``);
``node_ready_ms`` is to the constructor's return (envs' MjData built, start-up logged).
One run with an empty compiled-model cache (``*_empty_cache``), then ``repeats`` cached
runs. Throughput: env-steps/s of MjBatch
stepping N copies of gymnasium's own Hopper-v5 model with random controls, against
``gymnasium.make('Hopper-v5')`` stepped with random actions in one plain loop, same frame
skip, same run. Our arm and quadruped tasks are reported too.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

_CHILD = r'''
import json, sys, time
import rclpy
from rclpy.parameter import Parameter
from unilab_bridge.bridge_node import BridgeNode
rclpy.init()
t_model = time.monotonic()
node = BridgeNode(parameter_overrides=[
    Parameter('task', value=sys.argv[1]), Parameter('num_envs', value=int(sys.argv[2]))])
t_ready = time.monotonic()  # constructor returned: envs ready to step, start-up logged
print(json.dumps({'t_model': t_model, 't_obs': node.first_observation_at, 't_ready': t_ready}))
node.close()
node.destroy_node()
rclpy.try_shutdown()
'''


def _spawn(task: str, num_envs: int, env: dict) -> tuple[float, float, float]:
    """Return (process start, model -> first observation, model -> node ready) in ms."""
    t_spawn = time.monotonic()  # CLOCK_MONOTONIC is system-wide on Linux
    out = subprocess.run([sys.executable, '-c', _CHILD, task, str(num_envs)], env=env,
                         capture_output=True, text=True, timeout=120, check=True)
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    return ((rec['t_obs'] - t_spawn) * 1e3, (rec['t_obs'] - rec['t_model']) * 1e3,
            (rec['t_ready'] - rec['t_model']) * 1e3)


def _cold_start(task: str, num_envs: int, repeats: int) -> dict:
    env = dict(os.environ)
    # A domain of its own so the child's publisher meets no running graph.
    env.setdefault('ROS_DOMAIN_ID', '97')
    env['PYTHONPATH'] = os.pathsep.join(sys.path)
    with tempfile.TemporaryDirectory() as cache:
        # An empty compiled-model cache first (a user's very first start), then cached.
        env['UNILAB_CACHE_DIR'] = cache
        first = _spawn(task, num_envs, env)
        runs = np.array([_spawn(task, num_envs, env) for _ in range(repeats)])
    return {'process_start_ms': float(np.median(runs[:, 0])),
            'cold_start_ms': float(np.median(runs[:, 1])),
            'cold_start_ms_all': [round(v, 1) for v in runs[:, 1]],
            'node_ready_ms': float(np.median(runs[:, 2])),
            'process_start_ms_empty_cache': first[0],
            'cold_start_ms_empty_cache': first[1]}


def _sim_ready_ms(task: str, num_envs: int) -> float:
    """Model path -> first observation array, in this (warm) process, no ROS."""
    from unilab_bridge.tasks import make_task, observation
    t0 = time.perf_counter()
    t = make_task(task, num_envs, seed=0)
    observation(t.reset(seed=0), t)
    ms = (time.perf_counter() - t0) * 1e3
    t.close()
    return ms


def _hopper_batched(num_envs: int, steps: int, num_threads=None) -> float:
    import gymnasium
    import mujoco
    from unilab_bridge.tasks.joint_limits import actuated_joints
    from unilab_bridge.tasks.mj_batch import MjBatch
    path = pathlib.Path(gymnasium.__file__).parent / 'envs' / 'mujoco' / 'assets' / 'hopper.xml'
    model = mujoco.MjModel.from_xml_path(str(path))
    _, jnt = actuated_joints(model)
    # Hopper-v5 steps the physics frame_skip = 4 times per action.
    batch = MjBatch(model, num_envs, 4, model.jnt_qposadr[jnt], model.jnt_dofadr[jnt],
                    num_threads=num_threads)
    rng = np.random.default_rng(0)
    lo, hi = model.actuator_ctrlrange[:, 0], model.actuator_ctrlrange[:, 1]
    ctrls = rng.uniform(lo, hi, (16, num_envs, model.nu))
    for i in range(num_envs):
        mujoco.mj_resetData(model, batch.data[i])
    for k in range(10):
        batch.step(ctrls[k % 16])
    t0 = time.perf_counter()
    for k in range(steps):
        batch.step(ctrls[k % 16])
        # Auto-reset like the gym loop does when a hopper falls (Hopper-v5: z < 0.7).
        z = np.array([d.qpos[1] for d in batch.data])
        for i in np.flatnonzero(batch.unstable | (z < 0.7)):
            mujoco.mj_resetData(model, batch.data[i])
            mujoco.mj_forward(model, batch.data[i])
    rate = steps * num_envs / (time.perf_counter() - t0)
    batch.close()
    return rate


def _gym_loop(steps: int) -> float:
    import gymnasium
    env = gymnasium.make('Hopper-v5')
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(50):
        env.step(env.action_space.sample())
    t0 = time.perf_counter()
    for _ in range(steps):
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        if term or trunc:
            env.reset()
    rate = steps / (time.perf_counter() - t0)
    env.close()
    return rate


def _task_rate(task: str, num_envs: int, steps: int) -> float:
    from unilab_bridge.tasks import make_task
    t = make_task(task, num_envs, seed=0)
    t.reset(seed=0)
    rng = np.random.default_rng(0)
    mid = (t.action_low + t.action_high) / 2
    cmd = mid + 0.1 * rng.standard_normal((16, num_envs, t.action_dim))
    for k in range(10):
        t.step(cmd[k % 16])
    t0 = time.perf_counter()
    for k in range(steps):
        t.step(cmd[k % 16])
    rate = steps * num_envs / (time.perf_counter() - t0)
    t.close()
    return rate


def bench_bridge(args) -> dict:
    """Cold start of the bridge node and physics throughput vs plain gymnasium."""
    task = args.task or 'arm6_reach'
    n = args.num_envs or 64
    steps = args.steps or 200
    cold = _cold_start(task, n, repeats=3)
    gym = _gym_loop(steps * 20)
    out = {
        'benchmark': 'bridge', 'task': task, 'num_envs': n, 'steps': steps,
        **{k: round(v, 1) if isinstance(v, float) else v for k, v in cold.items()},
        'sim_ready_ms_warm_process': round(_sim_ready_ms(task, n), 1),
        'bridge_steps_per_s': round(_hopper_batched(n, steps), 1),
        'bridge_steps_per_s_1_thread': round(_hopper_batched(n, steps, num_threads=1), 1),
        'gym_steps_per_s': round(gym, 1),
        'model': 'gymnasium Hopper-v5 hopper.xml, frame_skip 4, random controls',
        f'{task}_env_steps_per_s': round(_task_rate(task, n, steps), 1),
        'quad_walk_env_steps_per_s': round(_task_rate('quad_walk', n, steps), 1),
        'cpu_count': os.cpu_count(),
    }
    out['ratio_bridge_vs_gym'] = round(out['bridge_steps_per_s'] / gym, 2)
    out['target_cold_start_ms'] = 47.0
    return out
