# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""IQL / BC on tiny hand-made datasets: losses by hand, and IQL beats BC where it must."""

import numpy as np
import pytest
import torch
from unilab_policy.models import ActorCritic, PolicyBundle
from unilab_policy.offline.bc import BehaviourCloning
from unilab_policy.offline.dataset import TransitionTensors
from unilab_policy.offline.iql import expectile_loss, IQL


def test_expectile_loss_by_hand():
    diff = torch.tensor([2.0, -1.0])
    # tau 0.7: 0.7 * 4 and 0.3 * 1, mean = (2.8 + 0.3) / 2
    assert expectile_loss(diff, 0.7).item() == pytest.approx(1.55)
    # tau 0.5 is half the mean squared error
    assert expectile_loss(diff, 0.5).item() == pytest.approx(0.5 * 2.5)


def _bandit(n=512, seed=0):
    """One-step episodes: action +1 earns 1, action -1 earns 0, equally often in the data."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(n, 3)).astype(np.float32)
    good = rng.random(n) < 0.5
    act = np.where(good, 1.0, -1.0)[:, None].astype(np.float32)
    return {'obs': obs, 'actions': act, 'rewards': good.astype(np.float32),
            'next_obs': obs, 'terminated': np.ones(n, np.float32),
            'truncated': np.zeros(n, np.float32)}


def _bundle():
    torch.manual_seed(0)
    return PolicyBundle(ActorCritic(3, 1, (32, 32), 'elu', 1.0))


def test_dataset_checks_fields_and_rows():
    data = _bandit(8)
    t = TransitionTensors.from_arrays(data)
    assert len(t) == 8 and t.obs_dim == 3 and t.act_dim == 1
    with pytest.raises(ValueError, match='lacks'):
        TransitionTensors.from_arrays({k: v for k, v in data.items() if k != 'rewards'})
    bad = dict(data, rewards=data['rewards'][:3])
    with pytest.raises(ValueError, match='`rewards` has 3 rows'):
        TransitionTensors.from_arrays(bad)
    with pytest.raises(ValueError, match='empty'):
        TransitionTensors.from_arrays({k: v[:0] for k, v in data.items()})


def test_iql_prefers_the_rewarded_action_and_bc_averages():
    data = TransitionTensors.from_arrays(_bandit())
    gen = torch.Generator().manual_seed(0)
    iql_bundle, bc_bundle = _bundle(), _bundle()
    iql = IQL(iql_bundle, (32, 32), lr=1e-3, gamma=0.99, expectile=0.7, beta=3.0)
    bc = BehaviourCloning(bc_bundle, lr=1e-3)
    for _ in range(300):
        m = iql.update(data, 128, gen)
        bc.update(data, 128, gen)
    assert all(np.isfinite(v) for v in m.values())
    with torch.no_grad():
        iql_a = iql_bundle(data.obs).mean().item()
        bc_a = bc_bundle(data.obs).mean().item()
        q_good = iql.q(iql_bundle.normalize(data.obs), torch.ones(len(data), 1)).mean().item()
        q_bad = iql.q(iql_bundle.normalize(data.obs), -torch.ones(len(data), 1)).mean().item()
    # terminated rows do not bootstrap: Q(s, +1) -> 1, Q(s, -1) -> 0
    assert q_good == pytest.approx(1.0, abs=0.15) and q_bad == pytest.approx(0.0, abs=0.15)
    assert abs(bc_a) < 0.3          # BC copies the 50/50 mix: mean action near 0
    assert iql_a > 0.5              # IQL weights the rewarded action up


def test_truncated_rows_bootstrap_from_next_obs_value():
    # A time-out row stores next_obs = obs; its target is r + gamma V(s), not r.
    data = _bandit(256)
    data['terminated'][:] = 0.0
    data['truncated'][:] = 1.0
    data['rewards'][:] = 0.0
    t = TransitionTensors.from_arrays(data)
    mb = t.sample(16, torch.Generator().manual_seed(0))
    assert torch.equal(mb.terminated, torch.zeros(16))
    assert torch.equal(mb.next_obs, mb.obs)
