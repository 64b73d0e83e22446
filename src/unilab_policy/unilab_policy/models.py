# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Gaussian MLP actor-critic (rsl_rl ``ActorCritic`` layout) and the published policy bundle."""

import math
from typing import Any, NamedTuple, Optional, Sequence

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


class GridEncoder(nn.Module):
    """
    A BEV grid inside the observation -> ``[B, out_dim]`` features, trained with the policy.

    Two strided 3x3 convolutions and a linear layer over the flattened result
    (no adaptive pooling, so the ONNX export has fixed shapes). The grid is
    read from columns ``offset : offset + C * H * W`` of the (normalised)
    network input, laid out ``[C, H, W]`` as the perception node writes it.
    """

    def __init__(self, grid_input: Sequence[int], out_dim: int, activation: str):
        super().__init__()
        offset, c, h, w = (int(v) for v in grid_input)
        self.offset, self.shape = offset, (c, h, w)
        self.width = c * h * w
        act = _ACTIVATIONS[activation]
        self.conv = nn.Sequential(nn.Conv2d(c, 16, 3, stride=2, padding=1), act(),
                                  nn.Conv2d(16, 16, 3, stride=2, padding=1), act(), nn.Flatten())
        h2, w2 = (h + 1) // 2, (w + 1) // 2
        self.linear = nn.Sequential(
            _init(nn.Linear(16 * ((h2 + 1) // 2) * ((w2 + 1) // 2), out_dim), math.sqrt(2.0)),
            act())
        self.out_dim = int(out_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return ``[B, rest + out_dim]``: the columns outside the grid, then grid features."""
        a, b = self.offset, self.offset + self.width
        grid = x[:, a:b].reshape(x.shape[0], *self.shape)
        return torch.cat([x[:, :a], x[:, b:], self.linear(self.conv(grid))], dim=1)


class ColumnsMLP(nn.Sequential):
    """
    An MLP that reads only some columns of its input: the actor under ``critic_only``.

    The kept column indices are a non-persistent buffer, so the layers' state-dict keys
    are a plain MLP's (``0.weight``, ...) and checkpoints, exports and rsl_rl conversions
    see the same layers; the input is sliced in ``forward`` (``index_select``, exportable).
    """

    def __init__(self, keep: torch.Tensor, mlp: nn.Sequential):
        """Wrap ``mlp`` (its first layer as wide as ``keep``) behind the column selection."""
        super().__init__(*mlp)
        self.register_buffer('keep', keep, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Run the MLP on the kept columns of ``x``."""
        return super().forward(x.index_select(-1, self.keep))


def _grid_net(grid_input, grid_features, activation, mlp: nn.Sequential) -> nn.Module:
    if not grid_input:
        return mlp
    return nn.Sequential(GridEncoder(grid_input, grid_features, activation), mlp)


class ActorCritic(nn.Module):
    """
    Separate actor / critic MLPs with a state-independent learnable log-std.

    The actor outputs the mean of a diagonal Gaussian, ``std = exp(log_std)`` is one
    parameter vector shared by all states (rsl_rl ``noise_std_type='log'``). The value head
    returns ``[B]`` (not ``[B, 1]``) so it matches the ``[T, N]`` storage layout directly.
    Observations are expected already normalised (see ``PolicyBundle``).

    ``grid_input = [offset, C, H, W]`` marks a BEV grid inside the observation
    (the perception node's ``bev.output: height_map``): actor and critic then
    each put a :class:`GridEncoder` in front of their MLP, so the grid's
    features are learned with the policy.

    ``critic_only = [offset, size]`` marks columns only the critic reads (privileged
    simulator state, e.g. the trunk's true velocity): the actor's MLP reads the others
    (:class:`ColumnsMLP`), so what deploys never depends on them.
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden_sizes: Sequence[int] = (256, 256),
                 activation: str = 'elu', init_noise_std: float = 1.0,
                 grid_input: Sequence[int] = (), grid_features: int = 32,
                 critic_only: Sequence[int] = ()):
        """Create the networks; the actor output layer uses gain 0.01 (CleanRL)."""
        super().__init__()
        if init_noise_std <= 0.0:
            raise ValueError(f'init_noise_std must be > 0, got {init_noise_std}')
        self.obs_dim = int(obs_dim)
        self.act_dim = int(act_dim)
        self.grid_input = tuple(int(v) for v in grid_input)
        mlp_in = self.obs_dim
        if self.grid_input:
            check_grid_input(self.grid_input, self.obs_dim)
            _, c, h, w = self.grid_input
            mlp_in = self.obs_dim - c * h * w + int(grid_features)
        self.critic_only = tuple(int(v) for v in critic_only)
        if self.critic_only:
            offset, size = self.critic_only
            if self.grid_input or offset + size > self.obs_dim or size < 1 or offset < 0:
                raise ValueError(f'model.critic_only {list(self.critic_only)} must be '
                                 f'[offset, size] inside the {self.obs_dim}-wide input '
                                 'and cannot go with a grid input')
            keep = torch.tensor([c for c in range(self.obs_dim)
                                 if not offset <= c < offset + size], dtype=torch.long)
            self.actor = ColumnsMLP(keep, make_mlp(len(keep), self.act_dim, hidden_sizes,
                                                   activation, 0.01))
        else:
            self.actor = _grid_net(self.grid_input, grid_features, activation,
                                   make_mlp(mlp_in, self.act_dim, hidden_sizes, activation,
                                            0.01))
        self.critic = _grid_net(self.grid_input, grid_features, activation,
                                make_mlp(mlp_in, 1, hidden_sizes, activation, 1.0))
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


def check_grid_input(grid_input: Sequence[int], width: int) -> None:
    """Raise ValueError naming ``model.grid_input`` when it does not fit a ``width`` input."""
    if len(grid_input) != 4 or min(grid_input[1:]) < 1 or grid_input[0] < 0:
        raise ValueError(f'model.grid_input must be [offset, channels, height, width] with '
                         f'offset >= 0 and sizes >= 1, got {list(grid_input)}')
    offset, c, h, w = grid_input
    if offset + c * h * w > width:
        raise ValueError(f'model.grid_input {list(grid_input)} needs columns up to '
                         f'{offset + c * h * w}, the network input has {width}')


def make_actor_critic(width: int, act_dim: int, model: Any) -> ActorCritic:
    """
    Build the actor-critic a ``model:`` section describes (a ModelSection or its dict).

    ``width`` is the network's input (observation plus action history).
    """
    m = model if isinstance(model, dict) else model.model_dump()
    return ActorCritic(width, act_dim, hidden_sizes=tuple(m['hidden_sizes']),
                       activation=m['activation'], init_noise_std=m['init_noise_std'],
                       grid_input=tuple(m.get('grid_input') or ()),
                       grid_features=int(m.get('grid_features', 32)),
                       critic_only=tuple(m.get('critic_only') or ()))


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
