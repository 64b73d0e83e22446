# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Behaviour cloning: regress the actor mean on the dataset actions (the CORL BC baseline).

The learner is the same ``PolicyBundle`` PPO trains (actor-critic plus a
frozen observation normaliser fitted on the dataset), so a BC policy is
evaluated, checkpointed and exported like an online one.
"""

from __future__ import annotations

import torch
from unilab_policy.models import PolicyBundle
from unilab_policy.offline.dataset import TransitionTensors


class BehaviourCloning:
    """MSE behaviour cloning of ``bundle``'s actor mean."""

    def __init__(self, bundle: PolicyBundle, lr: float = 3e-4):
        self.bundle = bundle
        self.opt = torch.optim.Adam(bundle.actor_critic.actor.parameters(), lr=lr)

    def update(self, data: TransitionTensors, batch_size: int,
               generator: torch.Generator | None = None) -> dict[str, float]:
        """Take one gradient step; return ``losses/bc``."""
        mb = data.sample(batch_size, generator)
        mean = self.bundle.actor_critic.actor(self.bundle.normalize(mb.obs))
        loss = (mean - mb.actions).square().sum(-1).mean()
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()
        return {'losses/bc': float(loss.detach())}
