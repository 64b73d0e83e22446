# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Reward scaling by the running std of the discounted return (``normalization.rewards``).

What SB3's ``VecNormalize(norm_reward=True)``, gymnasium's ``NormalizeReward`` and
CleanRL's PPO do: each env keeps a discounted return ``R = gamma R + r`` (reset when its
episode ends); rewards are divided by the running std of those returns (not centred,
so the sign of a reward is kept) and clipped to ``[-clip, clip]``. The critic then
learns returns of order one whatever the task's reward scale. Applied once per rollout,
before GAE; the statistics merge every rank's returns, so ranks scale alike.
"""

from __future__ import annotations

import torch
from torch import nn

from unilab_policy import distributed
from unilab_policy.normalizer import EmpiricalNormalization


class RewardScaler(nn.Module):
    """Divide a rollout's rewards by the running std of the per-env discounted return."""

    def __init__(self, num_envs: int, gamma: float, clip: float = 10.0, eps: float = 1e-8):
        """Start with no statistics (the first rollout is scaled by its own returns)."""
        super().__init__()
        self.gamma, self.clip = float(gamma), float(clip)
        self.stats = EmpiricalNormalization((), eps=eps, clip=float('inf'))
        self.register_buffer('ret', torch.zeros(num_envs, dtype=torch.float64))

    @torch.no_grad()
    def forward(self, rewards: torch.Tensor, dones: torch.Tensor) -> torch.Tensor:
        """Return ``rewards`` [T, N] scaled; ``dones`` [T, N] ends an env's return."""
        ret = self.ret
        returns = torch.empty_like(rewards, dtype=torch.float64)
        for t in range(rewards.shape[0]):
            ret = ret * self.gamma + rewards[t].to(torch.float64)
            returns[t] = ret
            ret = torch.where(dones[t], torch.zeros_like(ret), ret)
        self.ret.copy_(ret)
        self.stats.update(distributed.gather_rows(returns.reshape(-1, 1)).reshape(-1))
        scaled = rewards.to(torch.float64) / self.stats.std.to(torch.float64)
        return scaled.clamp(-self.clip, self.clip).to(rewards.dtype)
