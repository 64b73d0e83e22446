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
from unilab.bench_bridge import bench_bridge
from unilab.bench_perception import bench_perception
from unilab.bench_safety import bench_safety
from unilab.bench_sim2real import bench_sim2real
from unilab.bench_transport import bench_transport
from unilab.timing import median_ms


def _direct_loop(task_name: str, num_envs: int, steps: int, seed: int = 0) -> float:
    """Return control steps/s of task + policy + gate without ROS."""
    import torch
    from unilab.direct import make_gate
    from unilab.prepare import task_info
    from unilab_bridge.tasks import make_task, observation
    from unilab_core.config import load_run_config
    from unilab_policy.models import ActorCritic, PolicyBundle

    info, _ = task_info(task_name)
    with tempfile.TemporaryDirectory() as tmp:
        gate = make_gate(load_run_config([], {'run.task': task_name}), tmp)
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
    task = args.task or 'arm6_reach'
    args.num_envs = args.num_envs or 64
    args.steps = args.steps or 300
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


def bench_gae(args) -> dict:
    """GAE on [2048 x 64]: log-depth scan vs reverse loop vs SB3's RolloutBuffer."""
    import torch
    from unilab_policy.gae import compute_gae, compute_gae_reference
    torch.set_num_threads(1)
    t_len, n, gamma, lam = 2048, 64, 0.99, 0.95
    gen = torch.Generator().manual_seed(0)
    rewards = torch.randn(t_len, n, generator=gen)
    values = torch.randn(t_len, n, generator=gen)
    terminated = torch.rand(t_len, n, generator=gen) < 0.01
    truncated = (torch.rand(t_len, n, generator=gen) < 0.005) & ~terminated
    last = torch.randn(n, generator=gen)
    repeats = max(3, args.repeats)
    scan = compute_gae(rewards, values, terminated, truncated, last, gamma, lam)
    loop = compute_gae_reference(rewards, values, terminated, truncated, last, gamma, lam)
    out = {
        'benchmark': 'gae', 'shape': [t_len, n], 'repeats': repeats,
        'scan_ms': round(median_ms(lambda: compute_gae(
            rewards, values, terminated, truncated, last, gamma, lam), repeats), 3),
        'loop_ms': round(median_ms(lambda: compute_gae_reference(
            rewards, values, terminated, truncated, last, gamma, lam), repeats), 3),
        'max_abs_diff': float((scan.advantages - loop.advantages).abs().max()),
    }
    try:
        from gymnasium import spaces
        from stable_baselines3.common.buffers import RolloutBuffer
    except ImportError:
        out['sb3_ms'] = None
        out['sb3_note'] = 'stable-baselines3 not installed (pip install -r requirements-bench.txt)'
        return out
    buf = RolloutBuffer(t_len, spaces.Box(-1, 1, (1,)), spaces.Box(-1, 1, (1,)),
                        device='cpu', gae_lambda=lam, gamma=gamma, n_envs=n)
    done = (terminated | truncated).numpy()
    # SB3 folds a time-out into the reward (r + gamma * V) during collection; the
    # same rsl_rl approximation (V(s_T) ~ V(s_{T-1})) is used by compute_gae here.
    buf.rewards[:] = (rewards + gamma * values * truncated).numpy()
    buf.values[:] = values.numpy()
    buf.episode_starts[0] = 0.0
    buf.episode_starts[1:] = done[:-1]
    buf.full = True

    def sb3():
        buf.compute_returns_and_advantage(last_values=last.clone(), dones=done[-1])

    out['sb3_ms'] = round(median_ms(sb3, repeats), 3)
    sb3()
    out['max_abs_diff_sb3'] = float(np.abs(buf.advantages - scan.advantages.numpy()).max())
    out['speedup_vs_sb3'] = round(out['sb3_ms'] / out['scan_ms'], 1)
    out['speedup_vs_loop'] = round(out['loop_ms'] / out['scan_ms'], 1)
    return out


#: rl-baselines3-zoo's tuned PPO hyper-parameters for Hopper (hyperparams/ppo.yml),
#: used with VecNormalize (obs and reward) as the zoo does.
ZOO_HOPPER = dict(n_steps=512, batch_size=32, gamma=0.999, learning_rate=9.80828e-05,
                  ent_coef=0.00229519, clip_range=0.2, n_epochs=5, gae_lambda=0.99,
                  max_grad_norm=0.7, vf_coef=0.835671)


def _sb3_hopper(task: str, steps: int, seed: int, monitor_file: str | None = None) -> dict:
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
    import torch
    env = VecNormalize(DummyVecEnv([lambda: Monitor(gym.make(task), monitor_file)]), gamma=0.999)
    model = PPO('MlpPolicy', env, seed=seed, device='cpu', verbose=0, **ZOO_HOPPER,
                policy_kwargs=dict(log_std_init=-2, ortho_init=False,
                                   activation_fn=torch.nn.ReLU,
                                   net_arch=dict(pi=[256, 256], vf=[256, 256])))
    t0 = time.perf_counter()
    model.learn(total_timesteps=steps)
    wall = time.perf_counter() - t0
    episodes = [e['r'] for e in model.ep_info_buffer]
    return {'fps': steps / wall, 'return': float(np.mean(episodes)) if episodes else None,
            'wall_s': wall}


def bench_train(args) -> dict:
    """Compare the ROS graph, the direct loop and SB3 (zoo settings) on one task and budget."""
    from unilab.direct import train_direct
    from unilab.prepare import prepare_run
    from unilab.runner import run_composed
    task = args.task or 'Hopper-v5'
    args.steps = args.steps or 50_000
    overrides = {'run.task': task, 'run.total_steps': args.steps, 'run.seed': args.seed,
                 'logging.tensorboard': False}
    if args.num_envs:
        overrides['rollout.num_envs'] = args.num_envs
    out = {'benchmark': 'train', 'task': task, 'steps': args.steps, 'seed': args.seed}
    with tempfile.TemporaryDirectory() as tmp:
        run = prepare_run([], overrides, run_dir=f'{tmp}/graph')
        graph = run_composed(run, progress=False)
        direct = train_direct(run.cfg, f'{tmp}/direct')
    out.update({
        'num_envs': run.cfg.rollout.num_envs,
        'unilab_graph_fps': graph['fps'], 'unilab_graph_return': graph['return_last'],
        'unilab_direct_fps': direct['fps'], 'unilab_direct_return': direct['return_last'],
        'graph_overhead_vs_direct': round(1.0 - graph['fps'] / direct['fps'], 3),
    })
    if args.no_sb3:
        return out
    try:
        sb3 = _sb3_hopper(task, args.steps, args.seed)
    except ImportError:
        out['sb3_note'] = 'stable-baselines3 not installed (pip install -r requirements-bench.txt)'
        return out
    out.update({'sb3_fps': round(sb3['fps'], 1), 'sb3_return': sb3['return'],
                'graph_fps_vs_sb3': round(graph['fps'] / sb3['fps'], 2)})
    return out


BENCHMARKS = {'graph': bench_graph, 'gae': bench_gae, 'train': bench_train,
              'bridge': bench_bridge, 'safety': bench_safety,
              'perception': bench_perception, 'transport': bench_transport,
              'sim2real': bench_sim2real}


def run_benchmark(name: str, args) -> dict:
    """Run one benchmark by name; unknown names list the available ones."""
    from unilab_core.config import ConfigError
    if name not in BENCHMARKS:
        raise ConfigError(f'unknown benchmark `{name}`; available: {", ".join(BENCHMARKS)}')
    return BENCHMARKS[name](args)
