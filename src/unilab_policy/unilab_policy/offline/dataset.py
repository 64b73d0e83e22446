# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Transition tensors for offline training, preallocated on the target device.

Fields, all ``[M, ...]``: ``obs``, ``actions``, ``rewards``, ``next_obs``,
``terminated``, ``truncated``. ``terminated`` stops bootstrapping; for a
``truncated`` row the true next observation was never observed (the
simulator resets in the same step), so the builder stores ``next_obs = obs``
and the value target bootstraps from V(s_t) in place of V(s_{t+1}) - the
time-out approximation the PPO trainer uses too (rsl_rl; SB3 issue #633).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import torch

FIELDS = ('obs', 'actions', 'rewards', 'next_obs', 'terminated', 'truncated')


class Minibatch(NamedTuple):
    """One sampled minibatch."""

    obs: torch.Tensor         # [B, obs]
    actions: torch.Tensor     # [B, act]
    rewards: torch.Tensor     # [B]
    next_obs: torch.Tensor    # [B, obs]
    terminated: torch.Tensor  # [B] float 0/1


@dataclasses.dataclass
class TransitionTensors:
    """All transitions of a dataset as tensors on one device."""

    obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray],
                    device: torch.device | str = 'cpu') -> 'TransitionTensors':
        """Copy numpy arrays (``FIELDS``) to ``device``; check shapes agree."""
        missing = [f for f in FIELDS if f not in arrays]
        if missing:
            raise ValueError(f'dataset lacks fields {missing}')
        m = len(arrays['obs'])
        if m == 0:
            raise ValueError('dataset is empty (no transitions)')
        for f in FIELDS:
            if len(arrays[f]) != m:
                raise ValueError(f'dataset field `{f}` has {len(arrays[f])} rows, obs has {m}')
        if arrays['next_obs'].shape != arrays['obs'].shape:
            raise ValueError('next_obs and obs shapes differ')
        t = {f: torch.as_tensor(np.asarray(arrays[f], dtype=np.float32), device=device)
             for f in FIELDS}
        return cls(**t)

    def __len__(self) -> int:
        return self.obs.shape[0]

    @property
    def obs_dim(self) -> int:
        """Return the observation width."""
        return self.obs.shape[1]

    @property
    def act_dim(self) -> int:
        """Return the action width."""
        return self.actions.shape[1]

    def sample(self, batch_size: int, generator: torch.Generator | None = None) -> Minibatch:
        """Draw ``batch_size`` transitions uniformly with replacement."""
        idx = torch.randint(len(self), (batch_size,), device=self.obs.device,
                            generator=generator)
        return Minibatch(self.obs[idx], self.actions[idx], self.rewards[idx],
                         self.next_obs[idx], self.terminated[idx])
