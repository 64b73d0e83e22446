# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Implicit Q-Learning (Kostrikov, Nair, Levine 2021, arXiv:2110.06169).

Three losses, one gradient step each per update (the paper's Algorithm 1):

* value, expectile regression on the target critic (eq. 5)::

    L_V = E[ L2_tau( min(Q1', Q2')(s, a) - V(s) ) ],  L2_tau(u) = |tau - 1(u < 0)| u^2

* critic, TD towards the value of the next state, never a max over actions (eq. 6)::

    L_Q = E[ (r + gamma (1 - terminated) V(s') - Q_i(s, a))^2 ],  i = 1, 2

* policy extraction by advantage-weighted regression (eq. 7)::

    L_pi = -E[ min(exp(beta (Q'(s, a) - V(s))), 100) log pi(a | s) ]

The weight clip of 100 and the hyper-parameters (tau 0.7, beta 3, Polyak
0.005, Adam 3e-4) are the D4RL locomotion settings of the paper and of CORL's
``iql.py``. The actor is the suite's ``ActorCritic`` (Gaussian, state-free
log-std), so the result is a ``PolicyBundle`` like PPO's.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from unilab_policy.models import make_mlp, PolicyBundle
from unilab_policy.offline.dataset import TransitionTensors

EXP_ADV_MAX = 100.0


def expectile_loss(diff: torch.Tensor, tau: float) -> torch.Tensor:
    """Return mean ``|tau - 1(diff < 0)| * diff^2`` (IQL eq. 5)."""
    weight = torch.where(diff < 0, 1.0 - tau, tau)
    return (weight * diff.square()).mean()


class TwinQ(nn.Module):
    """Two Q(s, a) MLPs (clipped double-Q, Fujimoto et al. 2018)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes, activation: str = 'relu'):
        super().__init__()
        self.q1 = make_mlp(obs_dim + act_dim, 1, hidden_sizes, activation, 1.0)
        self.q2 = make_mlp(obs_dim + act_dim, 1, hidden_sizes, activation, 1.0)

    def both(self, obs: torch.Tensor, act: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Return ``Q1, Q2``, each ``[B]``."""
        x = torch.cat([obs, act], -1)
        return self.q1(x).squeeze(-1), self.q2(x).squeeze(-1)

    def forward(self, obs: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
        """Return ``min(Q1, Q2)``, ``[B]``."""
        return torch.minimum(*self.both(obs, act))


class IQL:
    """IQL learner around a ``PolicyBundle`` (its actor is the extracted policy)."""

    def __init__(self, bundle: PolicyBundle, hidden_sizes=(256, 256), lr: float = 3e-4,
                 gamma: float = 0.99, expectile: float = 0.7, beta: float = 3.0,
                 target_tau: float = 0.005, activation: str = 'relu'):
        ac = bundle.actor_critic
        self.bundle = bundle
        self.q = TwinQ(ac.obs_dim, ac.act_dim, hidden_sizes, activation).to(ac.log_std.device)
        self.q_target = copy.deepcopy(self.q).requires_grad_(False)
        # The bundle's own critic head serves as V(s): it is what PPO calls the value.
        self.v = ac.critic
        self.gamma, self.expectile, self.beta, self.target_tau = gamma, expectile, beta, target_tau
        self.q_opt = torch.optim.Adam(self.q.parameters(), lr=lr)
        self.v_opt = torch.optim.Adam(self.v.parameters(), lr=lr)
        self.pi_opt = torch.optim.Adam(list(ac.actor.parameters()) + [ac.log_std], lr=lr)

    def update(self, data: TransitionTensors, batch_size: int,
               generator: torch.Generator | None = None) -> dict[str, float]:
        """Take one step on V, Q and pi from one minibatch; return the losses."""
        mb = data.sample(batch_size, generator)
        ac = self.bundle.actor_critic
        obs = self.bundle.normalize(mb.obs)
        next_obs = self.bundle.normalize(mb.next_obs)
        with torch.no_grad():
            q_t = self.q_target(obs, mb.actions)
            next_v = self.v(next_obs).squeeze(-1)
        # eq. 5: value towards an upper expectile of Q over the dataset's actions.
        v = self.v(obs).squeeze(-1)
        adv = q_t - v
        v_loss = expectile_loss(adv, self.expectile)
        self.v_opt.zero_grad(set_to_none=True)
        v_loss.backward()
        self.v_opt.step()
        # eq. 6: TD target uses V(s'), no bootstrap after a true termination.
        target = mb.rewards + self.gamma * (1.0 - mb.terminated) * next_v
        q1, q2 = self.q.both(obs, mb.actions)
        q_loss = (q1 - target).square().mean() + (q2 - target).square().mean()
        self.q_opt.zero_grad(set_to_none=True)
        q_loss.backward()
        self.q_opt.step()
        with torch.no_grad():  # Polyak averaging of the target critic
            for p, pt in zip(self.q.parameters(), self.q_target.parameters()):
                pt.lerp_(p, self.target_tau)
        # eq. 7: advantage-weighted log-likelihood (weights from the pre-update V).
        weights = torch.exp(self.beta * adv.detach()).clamp(max=EXP_ADV_MAX)
        log_prob = ac.distribution(obs).log_prob(mb.actions).sum(-1)
        pi_loss = -(weights * log_prob).mean()
        self.pi_opt.zero_grad(set_to_none=True)
        pi_loss.backward()
        self.pi_opt.step()
        return {'losses/iql_value': float(v_loss.detach()),
                'losses/iql_q': float(q_loss.detach()),
                'losses/iql_policy': float(pi_loss.detach()),
                'charts/iql_adv_mean': float(adv.detach().mean()),
                'charts/iql_q_mean': float(q1.detach().mean())}
