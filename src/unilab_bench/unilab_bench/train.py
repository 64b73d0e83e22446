# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab bench train``: the ROS graph, the direct loop and SB3 (rl-zoo settings) on one task."""

from __future__ import annotations

import tempfile
import time

import numpy as np


#: rl-baselines3-zoo's tuned PPO hyper-parameters (hyperparams/ppo.yml, the ``-v4`` entries),
#: used with VecNormalize (observations and rewards, its gamma the algorithm's) as the zoo
#: does. A task without an entry gets the zoo's MuJoCo defaults: SB3's own PPO defaults
#: with ``normalize: true`` (the zoo's Ant-v4 entry).
ZOO_PPO = {
    'Hopper-v5': dict(n_steps=512, batch_size=32, gamma=0.999, learning_rate=9.80828e-05,
                      ent_coef=0.00229519, clip_range=0.2, n_epochs=5, gae_lambda=0.99,
                      max_grad_norm=0.7, vf_coef=0.835671),
    'Walker2d-v5': dict(n_steps=512, batch_size=32, gamma=0.99, learning_rate=5.05041e-05,
                        ent_coef=0.000585045, clip_range=0.1, n_epochs=20, gae_lambda=0.95,
                        max_grad_norm=1.0, vf_coef=0.871923),
    'HalfCheetah-v5': dict(n_steps=512, batch_size=64, gamma=0.98, learning_rate=2.0633e-05,
                           ent_coef=0.000401762, clip_range=0.1, n_epochs=20, gae_lambda=0.92,
                           max_grad_norm=0.8, vf_coef=0.58096),
}
#: The zoo's ``policy_kwargs`` per task (activation and layer sizes by name).
ZOO_POLICY = {
    'Hopper-v5': dict(log_std_init=-2, ortho_init=False, activation='relu', net=[256, 256]),
    'Walker2d-v5': dict(log_std_init=-2, ortho_init=False, activation='gelu', net=[256]),
    'HalfCheetah-v5': dict(log_std_init=-2, ortho_init=False, activation='relu',
                           net=[256, 256]),
}


def sb3_zoo_settings(task: str) -> tuple:
    """Return ``(ppo_kwargs, policy_kwargs)`` of rl-zoo for ``task`` (its defaults if none)."""
    from torch import nn
    params = dict(ZOO_PPO.get(task, {}))
    policy = ZOO_POLICY.get(task)
    if policy is None:
        return params, {}
    activation = {'relu': nn.ReLU, 'gelu': nn.GELU}[policy['activation']]
    return params, dict(log_std_init=policy['log_std_init'], ortho_init=policy['ortho_init'],
                        activation_fn=activation,
                        net_arch=dict(pi=list(policy['net']), vf=list(policy['net'])))


def sb3_zoo(task: str, steps: int, seed: int, monitor_file: str | None = None,
            eval_episodes: int = 0, eval_seed: int = 0) -> dict:
    """
    Train SB3 PPO with rl-zoo's settings for ``task``; return fps, training return, wall time.

    ``eval_episodes`` > 0 also scores the trained policy as rl-zoo's benchmark does:
    deterministic actions (the mean), the training run's observation normalisation frozen,
    raw episode returns, on fresh envs seeded from ``eval_seed``
    (``eval_return`` / ``eval_return_std``).
    """
    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
    params, policy_kwargs = sb3_zoo_settings(task)
    gamma = params.get('gamma', 0.99)
    env = VecNormalize(DummyVecEnv([lambda: Monitor(gym.make(task), monitor_file)]), gamma=gamma)
    model = PPO('MlpPolicy', env, seed=seed, device='cpu', verbose=0, **params,
                policy_kwargs=policy_kwargs or None)
    t0 = time.perf_counter()
    model.learn(total_timesteps=steps)
    wall = time.perf_counter() - t0
    episodes = [e['r'] for e in model.ep_info_buffer]
    out = {'fps': steps / wall, 'return': float(np.mean(episodes)) if episodes else None,
           'wall_s': wall}
    if eval_episodes > 0:
        test = VecNormalize(DummyVecEnv([lambda: Monitor(gym.make(task))]), gamma=gamma,
                            training=False, norm_reward=False)
        test.obs_rms = env.obs_rms
        test.seed(eval_seed)
        mean, std = evaluate_policy(model, test, n_eval_episodes=eval_episodes,
                                    deterministic=True)
        out.update({'eval_return': float(mean), 'eval_return_std': float(std)})
    return out


def bench_train(args) -> dict:
    """Compare the ROS graph, the direct loop and SB3 (zoo settings) on one task and budget."""
    from unilab_bringup.direct import train_direct
    from unilab_bringup.prepare import prepare_run
    from unilab_bringup.runner import run_composed
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
        sb3 = sb3_zoo(task, args.steps, args.seed)
    except ImportError:
        out['sb3_note'] = 'stable-baselines3 not installed (pip install -r requirements-bench.txt)'
        return out
    out.update({'sb3_fps': round(sb3['fps'], 1), 'sb3_return': sb3['return'],
                'graph_fps_vs_sb3': round(graph['fps'] / sb3['fps'], 2)})
    return out
