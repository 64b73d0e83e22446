# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Preallocated on-policy rollout buffer (rsl_rl ``RolloutStorage`` layout, ``[T, N, ...]``).

``obs`` is whatever the policy was fed, i.e. *normalised* observations when a
``PolicyBundle`` normaliser is in use (as in rsl_rl), so the PPO update re-evaluates exactly
the inputs that produced ``log_prob``. Advantages are stored raw; PPO normalises them (with
whole-batch statistics) during the update.
"""

from dataclasses import dataclass, fields
from typing import Iterator, Mapping, NamedTuple, Optional, Union

import torch

from .gae import compute_gae


@dataclass
class Transition:
    """
    One environment step for all N envs (leading dim N), or a chunk of K steps (K, N).

    ``terminated`` / ``truncated`` are bool (or 0/1) flags of the transition that *ends*
    at this step. ``truncation_values`` is V(s_final) for truncated envs (``None`` -> use
    ``values``, rsl_rl's approximation; see ``gae.py``).
    """

    obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    values: torch.Tensor
    log_prob: torch.Tensor
    mu: torch.Tensor
    sigma: torch.Tensor
    truncation_values: Optional[torch.Tensor] = None


_FIELDS = tuple(f.name for f in fields(Transition))


class Batch(NamedTuple):
    """One PPO minibatch, flattened over (T, N)."""

    obs: torch.Tensor
    actions: torch.Tensor
    old_log_prob: torch.Tensor
    old_mu: torch.Tensor
    old_sigma: torch.Tensor
    values: torch.Tensor
    advantages: torch.Tensor
    returns: torch.Tensor


class RolloutStorage:
    """Fixed-size ``[T, N, ...]`` buffers, allocated once on ``device`` and reused."""

    def __init__(self, num_steps: int, num_envs: int, obs_dim: int, act_dim: int,
                 device: Union[str, torch.device], dtype: torch.dtype = torch.float32):
        """Allocate every buffer; nothing is allocated again until the object dies."""
        if num_steps < 1 or num_envs < 1:
            raise ValueError(f'num_steps and num_envs must be >= 1, got {num_steps}, {num_envs}')
        self.num_steps = int(num_steps)
        self.num_envs = int(num_envs)
        self.obs_dim = int(obs_dim)
        self.act_dim = int(act_dim)
        self.device = torch.device(device)
        shape = (self.num_steps, self.num_envs)

        def alloc(*extra, dt=dtype):
            return torch.zeros(*shape, *extra, dtype=dt, device=self.device)

        self.obs = alloc(self.obs_dim)
        self.actions = alloc(self.act_dim)
        self.rewards = alloc()
        self.terminated = alloc(dt=torch.bool)
        self.truncated = alloc(dt=torch.bool)
        self.values = alloc()
        self.log_prob = alloc()
        self.mu = alloc(self.act_dim)
        self.sigma = alloc(self.act_dim)
        self.truncation_values = alloc()
        self.advantages = alloc()
        self.returns = alloc()
        self.step = 0
        self.returns_ready = False

    @property
    def batch_size(self) -> int:
        """Return the number of transitions in a full buffer (T * N)."""
        return self.num_steps * self.num_envs

    @property
    def is_full(self) -> bool:
        """Whether all T steps have been written."""
        return self.step >= self.num_steps

    def clear(self) -> None:
        """Start a new rollout (buffers are kept and overwritten)."""
        self.step = 0
        self.returns_ready = False

    def add(self, transition: Transition) -> None:
        """Copy one ``[N, ...]`` transition into slot ``step``; ``RuntimeError`` when full."""
        if self.is_full:
            raise RuntimeError(f'RolloutStorage overflow: all {self.num_steps} steps are filled; '
                               'call compute_returns/update and clear() first')
        self._write(transition, self.step, 1, chunk=False)
        self.step += 1

    def add_chunk(self, chunk: Union[Transition, Mapping[str, torch.Tensor]],
                  start_step: int) -> None:
        """
        Copy a ``[K, N, ...]`` block into steps ``[start_step, start_step + K)``.

        ``chunk`` is a ``Transition`` (or a mapping with its field names) of K-step tensors.
        ``start_step`` must equal the current fill level: a larger value (missing steps) or a
        smaller one (overwrite) raises ``RuntimeError``, as does running past T.
        """
        if isinstance(chunk, Mapping):
            unknown = set(chunk) - set(_FIELDS)
            if unknown:
                raise ValueError(f'unknown transition fields: {sorted(unknown)}')
            chunk = Transition(**chunk)
        k = int(chunk.rewards.shape[0])
        if start_step != self.step:
            kind = 'gap' if start_step > self.step else 'overlap'
            raise RuntimeError(f'RolloutStorage chunk {kind}: chunk starts at step {start_step} '
                               f'but storage is filled up to step {self.step}')
        if start_step + k > self.num_steps:
            raise RuntimeError(f'RolloutStorage overflow: chunk of {k} steps at {start_step} '
                               f'exceeds num_steps={self.num_steps}')
        self._write(chunk, start_step, k, chunk=True)
        self.step += k

    def _write(self, tr: Transition, start: int, k: int, chunk: bool) -> None:
        # Validate every field before writing any, so a bad transition leaves no partial step.
        pairs = []
        for name in _FIELDS:
            src = getattr(tr, name)
            if src is None:
                if name != 'truncation_values':
                    raise ValueError(f'transition field {name} is None')
                src = tr.values  # rsl_rl approximation, see gae.py
            dst = getattr(self, name)[start:start + k]
            if not chunk:
                dst = dst[0]
            if src.dim() == dst.dim() + 1 and src.shape[-1] == 1:
                src = src.squeeze(-1)  # accept [N, 1] values / rewards
            if src.shape != dst.shape:
                raise ValueError(f'transition field {name}: shape {tuple(src.shape)} '
                                 f'!= expected {tuple(dst.shape)}')
            pairs.append((dst, src))
        for dst, src in pairs:
            dst.copy_(src)
        self.returns_ready = False

    @torch.no_grad()
    def compute_returns(self, last_values: torch.Tensor, gamma: float, lam: float) -> None:
        """
        Fill ``advantages`` / ``returns`` with GAE (``gae.compute_gae``); needs a full buffer.

        ``last_values`` is V(s_T) for the observation after the last stored step, ``[N]``.
        """
        if not self.is_full:
            raise RuntimeError(f'compute_returns on a partial rollout ({self.step}/'
                               f'{self.num_steps} steps)')
        last_values = last_values.reshape(self.num_envs).to(self.device, self.values.dtype)
        result = compute_gae(self.rewards, self.values, self.terminated, self.truncated,
                             last_values, gamma, lam, self.truncation_values)
        self.advantages.copy_(result.advantages)
        self.returns.copy_(result.returns)
        self.returns_ready = True

    def mini_batch_generator(self, num_mini_batches: int, num_epochs: int = 1,
                             generator: Optional[torch.Generator] = None) -> Iterator[Batch]:
        """
        Yield ``num_epochs * num_mini_batches`` minibatches over the flattened T*N batch.

        One ``torch.randperm`` per epoch, split with ``tensor_split``, so every transition is
        visited exactly once per epoch (sizes differ by at most one when T*N is not divisible).
        """
        if not self.returns_ready:
            raise RuntimeError('call compute_returns() before mini_batch_generator()')
        if not 1 <= num_mini_batches <= self.batch_size:
            raise ValueError(f'num_mini_batches must be in [1, {self.batch_size}], '
                             f'got {num_mini_batches}')
        flat = {
            'obs': self.obs.flatten(0, 1),
            'actions': self.actions.flatten(0, 1),
            'old_log_prob': self.log_prob.flatten(0, 1),
            'old_mu': self.mu.flatten(0, 1),
            'old_sigma': self.sigma.flatten(0, 1),
            'values': self.values.flatten(0, 1),
            'advantages': self.advantages.flatten(0, 1),
            'returns': self.returns.flatten(0, 1),
        }
        for _ in range(num_epochs):
            perm = torch.randperm(self.batch_size, device=self.device, generator=generator)
            for idx in perm.tensor_split(num_mini_batches):
                yield Batch(**{k: v[idx] for k, v in flat.items()})
