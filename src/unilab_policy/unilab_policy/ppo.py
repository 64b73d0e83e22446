# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Proximal Policy Optimisation update (Schulman et al., arXiv:1707.06347), rsl_rl flavour."""

from dataclasses import dataclass
import math
from typing import Dict, Union
import warnings

import torch
from torch import nn

from unilab_core.config import AdvantageSection, PolicyUpdateSection

from . import distributed
from .models import ActorCritic
from .storage import RolloutStorage

LR_MIN = 1e-5
LR_MAX = 1e-2


@dataclass(frozen=True)
class PPOParams:
    """
    PPO hyper-parameters: the config's ``policy_update`` and ``advantage`` sections as they are.

    Built by ``unilab_policy.networks.ppo_params`` (the one place that derives
    ``num_mini_batches`` from ``policy_update.batch_size`` and the rollout size);
    the sections are validated pydantic models, so the values are in range.
    Advantages are always normalised per rollout (rsl_rl's default).
    """

    update: PolicyUpdateSection
    advantage: AdvantageSection
    num_mini_batches: int

    def __post_init__(self):
        """Reject a minibatch count the update cannot use."""
        if self.num_mini_batches < 1:
            raise ValueError(f'num_mini_batches must be >= 1, got {self.num_mini_batches}')


def num_mini_batches_for(batch_size: int, num_steps: int, num_envs: int) -> int:
    """
    Map a configured minibatch *size* to a minibatch *count* for a T x N rollout.

    Returns ``max(1, (T*N) // batch_size)``: minibatches are at least ``batch_size`` large
    (``tensor_split`` spreads the remainder). ``batch_size > T*N`` is clamped to one
    minibatch with a ``UserWarning``; ``batch_size < 1`` raises ``ValueError``.
    """
    total = int(num_steps) * int(num_envs)
    if batch_size < 1 or total < 1:
        raise ValueError(f'batch_size, num_steps, num_envs must be >= 1, got '
                         f'{batch_size}, {num_steps}, {num_envs}')
    if batch_size > total:
        warnings.warn(f'minibatch size {batch_size} > rollout size {total} '
                      f'({num_steps} steps x {num_envs} envs); using one minibatch',
                      stacklevel=2)
        return 1
    return max(1, total // batch_size)


def gaussian_kl(old_mu: torch.Tensor, old_sigma: torch.Tensor, mu: torch.Tensor,
                sigma: torch.Tensor) -> torch.Tensor:
    """
    KL(old || new) of diagonal Gaussians, summed over the action dim (rsl_rl ``PPO.update``).

    KL = sum_i log(s_i / s0_i) + (s0_i^2 + (m0_i - m_i)^2) / (2 s_i^2) - 1/2
    """
    kl = (torch.log(sigma / old_sigma)
          + (old_sigma.square() + (old_mu - mu).square()) / (2.0 * sigma.square()) - 0.5)
    return kl.sum(-1)


def adapt_learning_rate(lr: float, kl: float, desired_kl: float) -> float:
    """
    Return rsl_rl's adaptive step: kl > 2 d -> lr / 1.5; kl < d / 2 -> lr * 1.5; clamped.

    The result is clamped to ``[LR_MIN, LR_MAX]`` = [1e-5, 1e-2].
    """
    if kl > 2.0 * desired_kl:
        lr = lr / 1.5
    elif 0.0 <= kl < 0.5 * desired_kl:
        lr = lr * 1.5
    return min(max(lr, LR_MIN), LR_MAX)


class PPO:
    """Clipped-surrogate PPO with clipped value loss, entropy bonus and KL-adaptive Adam LR."""

    #: The names of the metrics ``update`` returns, in order.
    METRICS = ('losses/surrogate', 'losses/value', 'losses/entropy', 'losses/approx_kl',
               'losses/total', 'losses/grad_norm', 'charts/clip_fraction',
               'charts/learning_rate', 'charts/action_std', 'charts/explained_variance',
               'charts/value_clip_fraction')

    def __init__(self, actor_critic: ActorCritic, params: PPOParams,
                 device: Union[str, torch.device]):
        """Move ``actor_critic`` to ``device`` and build an Adam optimiser over it."""
        self.device = torch.device(device)
        self.params = params
        self.actor_critic = actor_critic.to(self.device)
        self.learning_rate = float(params.update.lr)
        self.optimizer = torch.optim.Adam(self.actor_critic.parameters(), lr=self.learning_rate)
        self.num_updates = 0

    def _set_lr(self, lr: float) -> None:
        self.learning_rate = float(lr)
        for group in self.optimizer.param_groups:
            group['lr'] = self.learning_rate

    def update(self, storage: RolloutStorage) -> Dict[str, float]:
        """
        Run the PPO epochs over a full rollout; returns flat, logger-ready metrics.

        The caller must run ``storage.compute_returns(last_values, gamma, gae_lambda)`` first
        (``RuntimeError`` otherwise); it does not ``clear()`` the storage.
        Advantages are normalised with mean/std over the *whole* T*N batch (rsl_rl default),
        applied per minibatch; storage keeps the raw values.
        """
        if not storage.returns_ready:
            raise RuntimeError('storage.compute_returns(last_values, gamma, gae_lambda) must run '
                               'before PPO.update')
        p = self.params.update
        ac = self.actor_critic
        adv_mean = storage.advantages.mean()
        adv_std = (storage.advantages.std() if storage.batch_size > 1
                   else torch.ones((), device=storage.advantages.device))
        totals = torch.zeros(7, device=self.device)
        count = 0
        grad_norm_sum = 0.0
        ac.train()
        for batch in storage.mini_batch_generator(self.params.num_mini_batches, p.epochs):
            advantages = (batch.advantages - adv_mean) / (adv_std + 1e-8)
            out = ac.evaluate(batch.obs, batch.actions)

            with torch.no_grad():
                kl_mean = gaussian_kl(batch.old_mu, batch.old_sigma, out.mean, out.std).mean()
            if p.schedule == 'adaptive':
                # rsl_rl adjusts the LR before every minibatch step from the current KL,
                # averaged over the ranks so that every rank takes the same step.
                kl_step = distributed.mean_over_ranks(kl_mean)
                self._set_lr(adapt_learning_rate(self.learning_rate, kl_step.item(),
                                                 p.desired_kl))

            # PPO eq. (7): L^CLIP = E[min(r A, clip(r, 1-eps, 1+eps) A)], r = pi / pi_old.
            ratio = torch.exp(out.log_prob - batch.old_log_prob)
            surr = -advantages * ratio
            surr_clipped = -advantages * ratio.clamp(1.0 - p.clip_param, 1.0 + p.clip_param)
            surrogate_loss = torch.max(surr, surr_clipped).mean()

            # Value loss, optionally clipped around the rollout values (rsl_rl / PPO2). The
            # clip is in reward units: a sample whose value moved more than clip_param
            # towards its return gives no gradient (counted: charts/value_clip_fraction).
            unclipped = (out.value - batch.returns).square()
            if p.clipped_value_loss:
                v_clipped = batch.values + (out.value - batch.values).clamp(-p.clip_param,
                                                                            p.clip_param)
                clipped = (v_clipped - batch.returns).square()
                value_loss = torch.max(unclipped, clipped).mean()
                value_clipped = (clipped > unclipped).float().mean().detach()
            else:
                value_loss = unclipped.mean()
                value_clipped = torch.zeros((), device=self.device)

            entropy = out.entropy.mean()
            # PPO eq. (9): L = -L^CLIP + c1 L^VF - c2 S.
            loss = surrogate_loss + p.value_loss_coef * value_loss - p.entropy_coef * entropy

            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            distributed.all_reduce_gradients(ac.parameters())  # no-op with one rank
            grad_norm = nn.utils.clip_grad_norm_(ac.parameters(), p.max_grad_norm)
            self.optimizer.step()

            with torch.no_grad():
                clip_frac = ((ratio - 1.0).abs() > p.clip_param).float().mean()
                totals += torch.stack([surrogate_loss.detach(), value_loss.detach(),
                                       entropy.detach(), kl_mean, clip_frac, loss.detach(),
                                       value_clipped])
            grad_norm_sum += float(grad_norm)
            count += 1

        self.num_updates += 1
        means = (totals / max(count, 1)).tolist()
        with torch.no_grad():
            var_ret = storage.returns.var()
            explained = 1.0 - (storage.returns - storage.values).var() / var_ret
        return {
            'losses/surrogate': means[0],
            'losses/value': means[1],
            'losses/entropy': means[2],
            'losses/approx_kl': means[3],
            'losses/total': means[5],
            'losses/grad_norm': grad_norm_sum / max(count, 1),
            'charts/clip_fraction': means[4],
            'charts/learning_rate': self.learning_rate,
            'charts/action_std': float(ac.action_std.detach().mean()),
            'charts/explained_variance': float(explained) if math.isfinite(float(var_ret))
            and float(var_ret) > 0 else float('nan'),
            'charts/value_clip_fraction': means[6],
        }

    def state_dict(self) -> dict:
        """Optimiser state, current learning rate and update counter (not the model)."""
        return {'optimizer': self.optimizer.state_dict(),
                'learning_rate': self.learning_rate,
                'num_updates': self.num_updates}

    def load_state_dict(self, state: dict) -> None:
        """Restore what ``state_dict`` produced (the model is restored separately)."""
        self.optimizer.load_state_dict(state['optimizer'])
        self._set_lr(state['learning_rate'])
        self.num_updates = int(state.get('num_updates', 0))
