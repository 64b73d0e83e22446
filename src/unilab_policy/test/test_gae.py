# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for GAE: hand-computed tiny case and parallel scan vs reference loop."""

import pytest
import torch

from unilab_policy.gae import compute_gae, compute_gae_reference

BOTH = [compute_gae, compute_gae_reference]


def _tiny(dtype=torch.float64):
    # T=3, N=2, gamma=0.5, lam=0.5 (gamma * lam = 0.25). Columns are envs.
    # env 0: no episode end.           r=[1,1,1], V=[1,2,4], V_3=8
    # env 1: t=0 terminated, t=1 truncated with V(s_final)=6.  r=[2,1,0], V=[1,2,2], V_3=4
    rewards = torch.tensor([[1.0, 2.0], [1.0, 1.0], [1.0, 0.0]], dtype=dtype)
    values = torch.tensor([[1.0, 1.0], [2.0, 2.0], [4.0, 2.0]], dtype=dtype)
    terminated = torch.tensor([[False, True], [False, False], [False, False]])
    truncated = torch.tensor([[False, False], [False, True], [False, False]])
    trunc_values = torch.tensor([[0.0, 0.0], [0.0, 6.0], [0.0, 0.0]], dtype=dtype)
    last = torch.tensor([8.0, 4.0], dtype=dtype)
    return rewards, values, terminated, truncated, last, trunc_values


@pytest.mark.parametrize('fn', BOTH)
def test_tiny_case_by_hand(fn):
    r, v, term, trunc, last, tv = _tiny()
    res = fn(r, v, term, trunc, last, 0.5, 0.5, truncation_values=tv)
    # env 0: delta = [1+0.5*2-1, 1+0.5*4-2, 1+0.5*8-4] = [1, 1, 1]
    #        A2 = 1, A1 = 1 + 0.25*1 = 1.25, A0 = 1 + 0.25*1.25 = 1.3125
    # env 1: t=2: delta = 0 + 0.5*4 - 2 = 0                       -> A2 = 0
    #        t=1: truncated, r' = 1 + 0.5*6 = 4, delta = 4 - 2 = 2 -> A1 = 2 (no carry)
    #        t=0: terminated, delta = 2 - 1 = 1                     -> A0 = 1
    expected_adv = torch.tensor([[1.3125, 1.0], [1.25, 2.0], [1.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(res.advantages, expected_adv)
    torch.testing.assert_close(res.returns, expected_adv + v)


@pytest.mark.parametrize('fn', BOTH)
def test_tiny_case_rsl_rl_approximation(fn):
    r, v, term, trunc, last, _ = _tiny()
    res = fn(r, v, term, trunc, last, 0.5, 0.5)  # V(s_final) ~ V(s_t) = 2 at (1, 1)
    # env 1, t=1: r' = 1 + 0.5*2 = 2, delta = 0 -> A1 = 0; t=0 unchanged (terminated).
    assert res.advantages[1, 1].item() == 0.0
    assert res.advantages[0, 1].item() == 1.0


@pytest.mark.parametrize('fn', BOTH)
def test_terminated_wins_over_truncated(fn):
    one = torch.ones(1, 1, dtype=torch.float64)
    flag = torch.ones(1, 1, dtype=torch.bool)
    res = fn(one, 0.5 * one, flag, flag, torch.full((1,), 100.0, dtype=torch.float64),
             0.9, 0.95, truncation_values=100.0 * one)
    assert res.advantages.item() == pytest.approx(0.5)  # r - V, no bootstrap at all


# Odd and non-power-of-two horizons exercise the unpaired-element path at several levels.
@pytest.mark.parametrize('horizon', [1, 2, 3, 5, 7, 64, 100, 1000, 2048])
@pytest.mark.parametrize('dtype,tol', [(torch.float64, 1e-10), (torch.float32, 1e-5)])
@pytest.mark.parametrize('with_tv', [True, False])
def test_scan_matches_reference(horizon, dtype, tol, with_tv, device):
    gen = torch.Generator().manual_seed(horizon)
    n = 9
    r = torch.randn(horizon, n, generator=gen, dtype=dtype)
    v = torch.randn(horizon, n, generator=gen, dtype=dtype)
    term = torch.rand(horizon, n, generator=gen) < 0.1
    trunc = torch.rand(horizon, n, generator=gen) < 0.1
    last = torch.randn(n, generator=gen, dtype=dtype)
    tv = torch.randn(horizon, n, generator=gen, dtype=dtype) if with_tv else None
    args = [x.to(device) for x in (r, v, term, trunc, last)]
    tv = tv.to(device) if tv is not None else None
    fast = compute_gae(*args, 0.99, 0.95, truncation_values=tv)
    ref = compute_gae_reference(*args, 0.99, 0.95, truncation_values=tv)
    assert fast.advantages.dtype == dtype
    torch.testing.assert_close(fast.advantages, ref.advantages, rtol=tol, atol=tol)
    torch.testing.assert_close(fast.returns, ref.returns, rtol=tol, atol=tol)


@pytest.mark.parametrize('horizon', [1, 3, 7, 1000, 2048])
@pytest.mark.parametrize('done_prob', [0.0, 1.0])
@pytest.mark.parametrize('dtype,tol', [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_scan_matches_reference_no_done_and_all_done(horizon, done_prob, dtype, tol, device):
    # done_prob = 1: every step ends an episode (half terminated, half truncated), so
    # A_t = delta_t; done_prob = 0: one long product of gamma * lam over the whole horizon.
    gen = torch.Generator().manual_seed(horizon)
    n = 5
    r, v, tv = (torch.randn(horizon, n, generator=gen, dtype=dtype).to(device) for _ in range(3))
    last = torch.randn(n, generator=gen, dtype=dtype).to(device)
    done = torch.full((horizon, n), done_prob > 0, device=device)
    term = done & (torch.rand(horizon, n, generator=gen) < 0.5).to(device)
    trunc = done & ~term
    fast = compute_gae(r, v, term, trunc, last, 0.99, 0.95, truncation_values=tv)
    ref = compute_gae_reference(r, v, term, trunc, last, 0.99, 0.95, truncation_values=tv)
    torch.testing.assert_close(fast.advantages, ref.advantages, rtol=tol, atol=tol)
    torch.testing.assert_close(fast.returns, ref.returns, rtol=tol, atol=tol)


@pytest.mark.parametrize('fn', BOTH)
@pytest.mark.parametrize('with_tv', [True, False])
def test_bool_and_float_flags_agree(fn, with_tv):
    gen = torch.Generator().manual_seed(7)
    horizon, n = 33, 4
    r, v, tv = (torch.randn(horizon, n, generator=gen, dtype=torch.float64) for _ in range(3))
    term = torch.rand(horizon, n, generator=gen) < 0.2
    trunc = torch.rand(horizon, n, generator=gen) < 0.2  # overlaps term: termination wins
    last = torch.randn(n, generator=gen, dtype=torch.float64)
    tv = tv if with_tv else None
    as_bool = fn(r, v, term, trunc, last, 0.99, 0.95, truncation_values=tv)
    as_float = fn(r, v, term.double(), trunc.double(), last, 0.99, 0.95, truncation_values=tv)
    torch.testing.assert_close(as_bool.advantages, as_float.advantages, rtol=0, atol=0)


def test_scan_leaves_inputs_untouched():
    # The scan works in place on its own delta / coefficient tensors, never on the inputs.
    gen = torch.Generator().manual_seed(5)
    horizon, n = 13, 3
    r, v, tv = (torch.randn(horizon, n, generator=gen) for _ in range(3))
    term = torch.rand(horizon, n, generator=gen) < 0.3
    trunc = torch.rand(horizon, n, generator=gen) < 0.3
    last = torch.randn(n, generator=gen)
    inputs = (r, v, term, trunc, last, tv)
    copies = [x.clone() for x in inputs]
    compute_gae(r, v, term, trunc, last, 0.99, 0.95, truncation_values=tv)
    for x, c in zip(inputs, copies):
        assert torch.equal(x, c)


def test_no_dones_equals_discounted_sum():
    # With lam = 1 and no episode ends, A_t + V_t = sum_k gamma^k r_{t+k} + gamma^(T-t) V_T.
    gen = torch.Generator().manual_seed(3)
    horizon, gamma = 6, 0.9
    r = torch.randn(horizon, 2, generator=gen, dtype=torch.float64)
    v = torch.randn(horizon, 2, generator=gen, dtype=torch.float64)
    last = torch.randn(2, generator=gen, dtype=torch.float64)
    zeros = torch.zeros(horizon, 2, dtype=torch.bool)
    res = compute_gae(r, v, zeros, zeros, last, gamma, 1.0)
    for t in range(horizon):
        ret = sum(gamma ** k * r[t + k] for k in range(horizon - t)) + gamma ** (
            horizon - t) * last
        torch.testing.assert_close(res.returns[t], ret)


def test_shape_errors():
    x = torch.zeros(3, 2)
    b = torch.zeros(3, 2, dtype=torch.bool)
    with pytest.raises(ValueError):
        compute_gae(x, torch.zeros(3, 3), b, b, torch.zeros(2), 0.9, 0.9)
    with pytest.raises(ValueError):
        compute_gae(x, x, b, b, torch.zeros(3), 0.9, 0.9)
    with pytest.raises(ValueError):
        compute_gae(x, x, torch.zeros(2, 2, dtype=torch.bool), b, torch.zeros(2), 0.9, 0.9)
    with pytest.raises(ValueError):
        compute_gae(torch.zeros(3), torch.zeros(3), b[:, 0], b[:, 0], torch.zeros(()), 0.9,
                    0.9)
