# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Gaussian MLP actor-critic (rsl_rl ``ActorCritic`` layout) and the published policy bundle."""

import math
from typing import NamedTuple, Optional, Sequence

import torch
from torch import nn
from torch.distributions import Normal

from .normalizer import EmpiricalNormalization

_ACTIVATIONS = {
    'elu': nn.ELU,
    'relu': nn.ReLU,
    'selu': nn.SELU,
    'tanh': nn.Tanh,
    'gelu': nn.GELU,
    'silu': nn.SiLU,
    'leaky_relu': nn.LeakyReLU,
}


class ActOutput(NamedTuple):
    """Sampled action with everything the rollout storage needs (batch-first)."""

    action: torch.Tensor    # [N, act_dim]
    log_prob: torch.Tensor  # [N]
    value: torch.Tensor     # [N]
    mean: torch.Tensor      # [N, act_dim]
    std: torch.Tensor       # [N, act_dim]


class EvalOutput(NamedTuple):
    """Log-probability, entropy and value of given actions under the current policy."""

    log_prob: torch.Tensor  # [B]
    entropy: torch.Tensor   # [B]
    value: torch.Tensor     # [B]
    mean: torch.Tensor      # [B, act_dim]
    std: torch.Tensor       # [B, act_dim]


def make_mlp(in_dim: int, out_dim: int, hidden_sizes: Sequence[int], activation: str,
             out_gain: float) -> nn.Sequential:
    """Build an MLP with orthogonal init (CleanRL ``layer_init``: gain sqrt(2), zero bias)."""
    if activation not in _ACTIVATIONS:
        raise ValueError(f"unknown activation '{activation}', expected one of "
                         f'{sorted(_ACTIVATIONS)}')
    layers = []
    last = in_dim
    for size in hidden_sizes:
        layers += [_init(nn.Linear(last, int(size)), math.sqrt(2.0)), _ACTIVATIONS[activation]()]
        last = int(size)
    layers.append(_init(nn.Linear(last, out_dim), out_gain))
    return nn.Sequential(*layers)


def _init(layer: nn.Linear, gain: float) -> nn.Linear:
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


class ActorCritic(nn.Module):
    """
    Separate actor / critic MLPs with a state-independent learnable log-std.

    The actor outputs the mean of a diagonal Gaussian, ``std = exp(log_std)`` is one
    parameter vector shared by all states (rsl_rl ``noise_std_type='log'``). The value head
    returns ``[B]`` (not ``[B, 1]``) so it matches the ``[T, N]`` storage layout directly.
    Observations are expected already normalised (see ``PolicyBundle``).
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int] = (256, 256),
                 activation: str = 'elu', init_noise_std: float = 1.0):
        """Create the networks; the actor output layer uses gain 0.01 (CleanRL)."""
        super().__init__()
        if init_noise_std <= 0.0:
            raise ValueError(f'init_noise_std must be > 0, got {init_noise_std}')
        self.obs_dim = int(obs_dim)
        self.act_dim = int(act_dim)
        self.actor = make_mlp(self.obs_dim, self.act_dim, hidden_sizes, activation, 0.01)
        self.critic = make_mlp(self.obs_dim, 1, hidden_sizes, activation, 1.0)
        self.log_std = nn.Parameter(torch.full((self.act_dim,), math.log(init_noise_std)))

    @property
    def action_std(self) -> torch.Tensor:
        """Return the current exploration std, shape ``[act_dim]``."""
        return self.log_std.exp()

    def distribution(self, obs: torch.Tensor) -> Normal:
        """Return the diagonal Gaussian policy at ``obs``."""
        mean = self.actor(obs)
        std = self.log_std.exp().expand_as(mean)
        return Normal(mean, std, validate_args=False)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        """Return the critic estimate, shape ``[B]``."""
        return self.critic(obs).squeeze(-1)

    def act(self, obs: torch.Tensor) -> ActOutput:
        """Sample actions for a rollout step."""
        dist = self.distribution(obs)
        action = dist.sample()
        return ActOutput(action, dist.log_prob(action).sum(-1), self.value(obs),
                         dist.mean, dist.stddev)

    def act_inference(self, obs: torch.Tensor) -> torch.Tensor:
        """Return the deterministic (mean) action."""
        return self.actor(obs)

    def evaluate(self, obs: torch.Tensor, actions: torch.Tensor) -> EvalOutput:
        """Score stored ``actions`` under the current parameters (PPO update)."""
        dist = self.distribution(obs)
        return EvalOutput(dist.log_prob(actions).sum(-1), dist.entropy().sum(-1),
                          self.value(obs), dist.mean, dist.stddev)


class PolicyBundle(nn.Module):
    """
    Actor-critic plus observation normaliser: the unit that is trained, saved and published.

    ``state_dict()`` therefore carries both network weights and normaliser statistics, which
    is what ``weights.flatten_state`` and the checkpoint use.
    """

    def __init__(self, actor_critic: ActorCritic,
                 obs_normalizer: Optional[EmpiricalNormalization] = None):
        """Wrap an actor-critic; a normaliser is created (obs_dim wide) when not given."""
        super().__init__()
        self.actor_critic = actor_critic
        if obs_normalizer is None:
            obs_normalizer = EmpiricalNormalization(actor_critic.obs_dim)
        self.obs_normalizer = obs_normalizer

    def normalize(self, raw_obs: torch.Tensor) -> torch.Tensor:
        """Normalise raw observations with the current statistics (no update)."""
        return self.obs_normalizer(raw_obs)

    def forward(self, raw_obs: torch.Tensor) -> torch.Tensor:
        """Return the deterministic action for raw observations."""
        return self.actor_critic.act_inference(self.obs_normalizer(raw_obs))
