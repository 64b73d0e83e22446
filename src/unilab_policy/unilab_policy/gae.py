# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Generalised Advantage Estimation with correct time-out bootstrapping.

Equations (Schulman et al., GAE, arXiv:1506.02438, eq. 16), with done_t = term_t or trunc_t:

    r'_t  = r_t + gamma * V(s_final_t) * [trunc_t and not term_t]          (time-out bootstrap)
    delta_t = r'_t + gamma * (1 - done_t) * V_{t+1} - V_t,   V_T = last_values
    A_t   = delta_t + gamma * lam * (1 - done_t) * A_{t+1},   A_T = 0
    R_t   = A_t + V_t                                                       (value targets)

Time-outs: a truncated episode did not reach a terminal state, so its tail value must be
bootstrapped from the *final* observation of that episode, not from V_{t+1} (which belongs to
the first state of the next episode after the auto-reset). See the SB3 discussion
(github.com/DLR-RM/stable-baselines3/issues/633). ``truncation_values`` carries V(s_final_t);
when it is ``None`` we use ``values[t]`` = V(s_t) instead, which is rsl_rl's approximation
(``rewards += gamma * values * time_outs`` in rsl_rl ``PPO.process_env_step``):
exact only when the value barely changes over the last step. If both flags are set,
termination wins (no bootstrap).

Two implementations of the same maths: ``compute_gae_reference`` (reverse loop over t, the
rsl_rl ``RolloutStorage.compute_returns`` form) and ``compute_gae`` (log-depth parallel scan).
"""

from typing import NamedTuple, Optional

import torch


class GAEResult(NamedTuple):
    """Advantages and returns (value targets), both ``[T, N]``."""

    advantages: torch.Tensor
    returns: torch.Tensor


def _deltas_and_discounts(rewards, values, terminated, truncated, last_values, gamma, lam,
                          truncation_values):
    """Return (delta_t, c_t = gamma * lam * (1 - done_t)), both ``[T, N]``."""
    if rewards.ndim != 2:
        raise ValueError(f'rewards must be [T, N], got {tuple(rewards.shape)}')
    for name, t in (('values', values), ('terminated', terminated), ('truncated', truncated)):
        if t.shape != rewards.shape:
            raise ValueError(f'{name} shape {tuple(t.shape)} != rewards {tuple(rewards.shape)}')
    if last_values.shape != rewards.shape[1:]:
        raise ValueError(f'last_values must be [N], got {tuple(last_values.shape)}')
    dtype = rewards.dtype
    term = terminated.to(dtype)
    trunc = truncated.to(dtype) * (1.0 - term)
    not_done = (1.0 - term) * (1.0 - trunc)
    tail = values if truncation_values is None else truncation_values.to(dtype)
    # Time-out bootstrap: r'_t = r_t + gamma * V(s_final_t) on truncated, non-terminal steps.
    rewards = rewards + gamma * tail * trunc
    # V_{t+1} for t < T-1 is values[t+1]; V_T = last_values.
    next_values = torch.cat([values[1:], last_values.unsqueeze(0).to(dtype)], dim=0)
    # GAE eq. (16) TD residual: delta_t = r'_t + gamma (1 - done_t) V_{t+1} - V_t.
    deltas = rewards + gamma * not_done * next_values - values
    return deltas, gamma * lam * not_done


def compute_gae_reference(rewards: torch.Tensor, values: torch.Tensor,
                          terminated: torch.Tensor, truncated: torch.Tensor,
                          last_values: torch.Tensor, gamma: float, lam: float,
                          truncation_values: Optional[torch.Tensor] = None) -> GAEResult:
    """GAE by the plain reverse recursion A_t = delta_t + c_t A_{t+1} (O(T) sequential steps)."""
    deltas, coeffs = _deltas_and_discounts(rewards, values, terminated, truncated, last_values,
                                           gamma, lam, truncation_values)
    advantages = torch.empty_like(deltas)
    running = torch.zeros_like(last_values, dtype=deltas.dtype)
    for t in range(deltas.shape[0] - 1, -1, -1):
        running = deltas[t] + coeffs[t] * running
        advantages[t] = running
    return GAEResult(advantages, advantages + values)


def compute_gae(rewards: torch.Tensor, values: torch.Tensor, terminated: torch.Tensor,
                truncated: torch.Tensor, last_values: torch.Tensor, gamma: float, lam: float,
                truncation_values: Optional[torch.Tensor] = None) -> GAEResult:
    """
    GAE via a Hillis-Steele inclusive scan over time (ceil(log2 T) vectorised steps).

    The first-order linear recurrence A_t = b_t + a_t A_{t+1} (b = delta, a = c, A_T = 0) is
    the composition of affine maps f_t(x) = a_t x + b_t: A_t = f_t(f_{t+1}(...f_{T-1}(0))).
    Composition is associative:
        (a_1, b_1) o (a_2, b_2) = (a_1 a_2, b_1 + a_1 b_2)       [f_1(f_2(x))]
    Hillis-Steele (1986) suffix scan: for d = 1, 2, 4, ... < T, every t < T - d replaces
    (a_t, b_t) by (a_t, b_t) o (a_{t+d}, b_{t+d}); afterwards b_t = A_t. Works for any T
    (indices past the end are simply left as they are) and is vectorised over all envs.
    Matches ``compute_gae_reference`` to float rounding.
    """
    b, a = _deltas_and_discounts(rewards, values, terminated, truncated, last_values,
                                 gamma, lam, truncation_values)
    horizon = b.shape[0]
    d = 1
    while d < horizon:
        head = horizon - d
        # Read the old suffix (b[d:], a[d:]) before writing: one fresh tensor per level.
        b_next = b.clone()
        b_next[:head].addcmul_(a[:head], b[d:])
        b = b_next
        if 2 * d < horizon:  # the last level never reads `a` again
            a_next = a.clone()
            a_next[:head].mul_(a[d:])
            a = a_next
        d *= 2
    return GAEResult(b, b + values)
