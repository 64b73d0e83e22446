# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab bench gae``: GAE on [2048 x 64], log-depth scan vs reverse loop vs SB3."""

from __future__ import annotations

import numpy as np
from unilab_bench.timing import median_ms


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
