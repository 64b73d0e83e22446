# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for ``RolloutStorage``."""

import pytest
import torch

from unilab_policy.gae import compute_gae_reference
from unilab_policy.storage import RolloutStorage, Transition

OBS, ACT = 3, 2


def _transition(n, step, k=None, device='cpu', with_tv=True):
    lead = (n,) if k is None else (k, n)
    gen = torch.Generator().manual_seed(step)
    obs = torch.randn(*lead, OBS, generator=gen)
    # obs[..., 0] = unique id t * n + env, to check minibatch coverage.
    steps = torch.arange(step, step + (1 if k is None else k)).view(-1, 1)
    ids = (steps * n + torch.arange(n)).reshape(lead).float()
    obs[..., 0] = ids
    return Transition(
        obs=obs.to(device), actions=torch.randn(*lead, ACT, generator=gen).to(device),
        rewards=torch.randn(*lead, generator=gen).to(device),
        terminated=(torch.rand(*lead, generator=gen) < 0.2).to(device),
        truncated=(torch.rand(*lead, generator=gen) < 0.2).to(device),
        values=torch.randn(*lead, generator=gen).to(device),
        log_prob=torch.randn(*lead, generator=gen).to(device),
        mu=torch.randn(*lead, ACT, generator=gen).to(device),
        sigma=torch.rand(*lead, ACT, generator=gen).to(device) + 0.1,
        truncation_values=torch.randn(*lead, generator=gen).to(device) if with_tv else None)


def test_add_overflow_raises(device):
    st = RolloutStorage(2, 4, OBS, ACT, device)
    st.add(_transition(4, 0, device=device))
    assert not st.is_full
    st.add(_transition(4, 1, device=device))
    assert st.is_full
    with pytest.raises(RuntimeError, match='overflow'):
        st.add(_transition(4, 2, device=device))
    st.clear()
    assert st.step == 0 and not st.is_full
    st.add(_transition(4, 0, device=device))


def test_buffers_are_preallocated_and_reused():
    st = RolloutStorage(2, 3, OBS, ACT, 'cpu')
    ptr = st.obs.data_ptr()
    for _ in range(3):
        st.clear()
        st.add(_transition(3, 0))
        st.add(_transition(3, 1))
    assert st.obs.data_ptr() == ptr


def test_add_rejects_bad_shape_without_partial_write():
    st = RolloutStorage(2, 3, OBS, ACT, 'cpu')
    tr = _transition(3, 0)
    tr.mu = torch.zeros(3, ACT + 1)
    with pytest.raises(ValueError, match='mu'):
        st.add(tr)
    assert st.step == 0 and st.obs.abs().sum() == 0


def test_add_chunk_equals_per_step_add_and_checks_gaps(device):
    n, horizon = 4, 6
    a = RolloutStorage(horizon, n, OBS, ACT, device)
    b = RolloutStorage(horizon, n, OBS, ACT, device)
    for t in range(horizon):
        a.add(_transition(n, t, device=device))
    with pytest.raises(RuntimeError, match='gap'):
        b.add_chunk(_transition(n, 2, k=2, device=device), start_step=2)
    for start in (0, 2, 4):
        # The same K=2 block that `a` received step by step.
        chunk = Transition(**{name: getattr(a, name)[start:start + 2].clone()
                              for name in Transition.__dataclass_fields__})
        b.add_chunk(chunk, start_step=start)
    with pytest.raises(RuntimeError, match='overlap'):
        b.add_chunk(chunk, start_step=4)
    assert b.is_full
    for name in Transition.__dataclass_fields__:
        torch.testing.assert_close(getattr(a, name), getattr(b, name))


def test_add_chunk_overflow_and_mapping():
    st = RolloutStorage(3, 2, OBS, ACT, 'cpu')
    chunk = _transition(2, 0, k=2)
    st.add_chunk(vars(chunk), start_step=0)  # a plain dict is accepted too
    with pytest.raises(RuntimeError, match='overflow'):
        st.add_chunk(chunk, start_step=2)
    assert st.step == 2


def test_missing_truncation_values_uses_values():
    st = RolloutStorage(1, 3, OBS, ACT, 'cpu')
    tr = _transition(3, 0, with_tv=False)
    st.add(tr)
    torch.testing.assert_close(st.truncation_values[0], tr.values)


def test_compute_returns_matches_reference(device):
    n, horizon = 5, 7
    st = RolloutStorage(horizon, n, OBS, ACT, device)
    with pytest.raises(RuntimeError):
        st.compute_returns(torch.zeros(n, device=device), 0.99, 0.95)
    for t in range(horizon):
        st.add(_transition(n, t, device=device))
    last = torch.randn(n, device=device)
    st.compute_returns(last, 0.99, 0.95)
    ref = compute_gae_reference(st.rewards, st.values, st.terminated, st.truncated, last, 0.99,
                                0.95, st.truncation_values)
    torch.testing.assert_close(st.advantages, ref.advantages)
    torch.testing.assert_close(st.returns, ref.returns)


@pytest.mark.parametrize('num_mb', [1, 4, 7])
def test_minibatches_visit_every_transition_once_per_epoch(num_mb, device):
    n, horizon, epochs = 5, 3, 3  # 15 transitions: 4 and 7 do not divide it
    st = RolloutStorage(horizon, n, OBS, ACT, device)
    for t in range(horizon):
        st.add(_transition(n, t, device=device))
    with pytest.raises(RuntimeError):
        next(st.mini_batch_generator(num_mb, epochs))
    st.compute_returns(torch.zeros(n, device=device), 0.99, 0.95)
    batches = list(st.mini_batch_generator(num_mb, epochs))
    assert len(batches) == num_mb * epochs
    for e in range(epochs):
        ids = torch.cat([b.obs[:, 0] for b in batches[e * num_mb:(e + 1) * num_mb]])
        assert sorted(ids.long().tolist()) == list(range(horizon * n))
    b = batches[0]
    # Fields of one minibatch stay aligned with each other.
    flat_ids = b.obs[:, 0].long()
    torch.testing.assert_close(b.returns, st.returns.flatten()[flat_ids])
    torch.testing.assert_close(b.old_mu, st.mu.flatten(0, 1)[flat_ids])
    torch.testing.assert_close(b.advantages, st.advantages.flatten()[flat_ids])
