# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Assemble K control steps of transitions into one rollout chunk (no ROS).

A transition is opened when the policy acts on ``obs_t`` (action, log-prob,
value, mean, std) and closed by the next observation's step outcome
(``reward_t``, ``terminated_t``, ``truncated_t``). Buffers are preallocated
``[K, N, ...]`` arrays, reused for every chunk.
"""

from __future__ import annotations

import numpy as np

CHUNK_FIELDS = ('obs', 'actions', 'log_prob', 'values', 'mu', 'sigma', 'rewards',
                'terminated', 'truncated', 'episode_return', 'episode_length')


class ChunkBuilder:
    """Preallocated K-step transition buffer."""

    def __init__(self, k: int, num_envs: int, obs_dim: int, act_dim: int):
        self.k = k
        f = np.float32
        self.buf = {
            'obs': np.zeros((k, num_envs, obs_dim), f),
            'actions': np.zeros((k, num_envs, act_dim), f),
            'mu': np.zeros((k, num_envs, act_dim), f),
            'sigma': np.zeros((k, num_envs, act_dim), f),
        }
        for name in ('log_prob', 'values', 'rewards', 'terminated', 'truncated',
                     'episode_return', 'episode_length'):
            self.buf[name] = np.zeros((k, num_envs), f)
        self.size = 0
        self.first_seq = -1
        self._open = False

    def has_open_step(self) -> bool:
        """Return True while a transition waits for its step outcome."""
        return self._open

    def open_step(self, obs, action, log_prob, value, mu, sigma, seq: int) -> None:
        """Record what the policy did at step ``seq``."""
        if self.size >= self.k:
            raise RuntimeError('chunk is full; send and clear it before opening a step')
        i = self.size
        b = self.buf
        b['obs'][i] = obs
        b['actions'][i] = action
        b['log_prob'][i] = log_prob
        b['values'][i] = value
        b['mu'][i] = mu
        b['sigma'][i] = sigma
        if i == 0:
            self.first_seq = seq
        self._open = True

    def drop_open_step(self) -> None:
        """Forget an opened step (its outcome will never come)."""
        self._open = False

    def close_step(self, reward, terminated, truncated, episode_return=None,
                   episode_length=None) -> bool:
        """Complete the open step with its outcome; return True when the chunk is full."""
        if not self._open:
            raise RuntimeError('no open step to close')
        i = self.size
        b = self.buf
        b['rewards'][i] = reward
        b['terminated'][i] = terminated
        b['truncated'][i] = truncated
        b['episode_return'][i] = np.nan if episode_return is None else episode_return
        b['episode_length'][i] = 0 if episode_length is None else episode_length
        self.size += 1
        self._open = False
        return self.size == self.k

    def tensors(self, next_obs: np.ndarray) -> dict[str, np.ndarray]:
        """Return the chunk's arrays plus ``next_obs`` (obs after the last step)."""
        out = {name: self.buf[name][:self.size] for name in CHUNK_FIELDS}
        out['next_obs'] = next_obs
        return out

    def clear(self) -> None:
        """Start a new chunk."""
        self.size = 0
        self.first_seq = -1
        self._open = False
