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
    """
    Return (delta_t, c_t = gamma * lam * (1 - done_t)), both ``[T, N]``, in two allocations.

    Fused with in-place ops: each fresh [T, N] temporary costs page faults once the
    allocator hands freed memory back to the OS, which made a plain version ~10x slower
    than the scan itself. Both results are fresh, so the caller may overwrite them.
    Termination wins over truncation on a step that has both (no bootstrap).
    """
    if rewards.ndim != 2:
        raise ValueError(f'rewards must be [T, N], got {tuple(rewards.shape)}')
    for name, t in (('values', values), ('terminated', terminated), ('truncated', truncated)):
        if t.shape != rewards.shape:
            raise ValueError(f'{name} shape {tuple(t.shape)} != rewards {tuple(rewards.shape)}')
    if last_values.shape != rewards.shape[1:]:
        raise ValueError(f'last_values must be [N], got {tuple(last_values.shape)}')
    dtype = rewards.dtype
    term, trunc = terminated.bool(), truncated.bool()
    not_done = (term | trunc).logical_not_().to(dtype)         # 1 - done_t
    tail = values if truncation_values is None else truncation_values.to(dtype)
    # Time-out bootstrap: r'_t = r_t + gamma * V(s_final_t) on truncated, non-terminal steps.
    deltas = torch.where(trunc & term.logical_not(), tail, 0.0).mul_(gamma).add_(rewards)
    # delta_t = r'_t + gamma (1 - done_t) V_{t+1} - V_t, with V_T = last_values.
    deltas[:-1].addcmul_(not_done[:-1], values[1:], value=gamma)
    deltas[-1:].addcmul_(not_done[-1:], last_values.unsqueeze(0).to(dtype), value=gamma)
    deltas.sub_(values)
    return deltas, not_done.mul_(gamma * lam)


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
    GAE via a work-efficient (Blelloch) suffix scan over time, vectorised over envs.

    The first-order linear recurrence A_t = b_t + a_t A_{t+1} (b = delta, a = c, A_T = 0) is
    the composition of affine maps f_t(x) = a_t x + b_t: A_t = f_t(f_{t+1}(...f_{T-1}(0))).
    Composition is associative:
        (a_1, b_1) o (a_2, b_2) = (a_1 a_2, b_1 + a_1 b_2)       [f_1(f_2(x))]
    so A_t is the b-part of the suffix product e_t o e_{t+1} o ... o e_{T-1}, computed by the
    pairwise (up-sweep / down-sweep) recursion of Blelloch (1990), "Prefix sums and their
    applications" (which treats first-order linear recurrences as scans):

    up-sweep    combine neighbours (l, r) = (2i + o, 2i + 1 + o) into one element
                    P_i = e_l o e_r = (a_l a_r, b_l + a_l b_r)
                and recurse on the T // 2 pairs (o = T mod 2: an odd T leaves e_0 unpaired).
    down-sweep  with the pairs' suffix values Q_i = A_l known,
                    A_r = b_r + a_r Q_{i+1}   (Q_{T // 2} = A_T = 0, so A_{T-1} = b_{T-1})
                    A_0 = b_0 + a_0 A_1       (the unpaired element, odd T only).

    O(T) work and 2 floor(log2 T) vectorised steps, done in place on strided views of the
    (fresh) delta / coefficient tensors: no per-level allocation and no padding. Only the
    b-part is carried down, as A_t never needs the suffix products of a.
    Matches ``compute_gae_reference`` to float rounding (the summation order differs).
    """
    b, a = _deltas_and_discounts(rewards, values, terminated, truncated, last_values,
                                 gamma, lam, truncation_values)
    advantages = b  # overwritten in place with A_t
    # Up-sweep: level k holds the 2^k-fold compositions, as strided views into a and b.
    levels = []
    while b.shape[0] > 1:
        odd = b.shape[0] % 2
        a_l, b_l = a[odd::2], b[odd::2]          # left (earlier) element of each pair
        a_r, b_r = a[odd + 1::2], b[odd + 1::2]  # right element; kept for the down-sweep
        b_l.addcmul_(a_l, b_r)                   # b_P = b_l + a_l b_r  (reads the old a_l)
        if b_l.shape[0] > 1:                     # the top level never reads a_P
            a_l.mul_(a_r)                        # a_P = a_l a_r
        levels.append((a, b, odd))
        a, b = a_l, b_l
    # A single element is its own suffix: A = b. Down-sweep: the left slots now hold Q_i = A_l.
    for a, b, odd in reversed(levels):
        b[odd + 1:-1:2].addcmul_(a[odd + 1:-1:2], b[odd + 2::2])  # A_r = b_r + a_r Q_{i+1}
        if odd:
            b[0].addcmul_(a[0], b[1])                             # A_0 = b_0 + a_0 A_1
    return GAEResult(advantages, advantages + values)
