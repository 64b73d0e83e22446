# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for the PPO update on toy problems."""

import math

import pytest
import torch

from unilab_core.config import AdvantageSection, PolicyUpdateSection
from unilab_policy.models import ActorCritic
from unilab_policy.ppo import (adapt_learning_rate, gaussian_kl, num_mini_batches_for, PPO,
                               PPOParams)
from unilab_policy.storage import RolloutStorage, Transition

T, N, OBS, ACT = 4, 64, 2, 2
TARGET = (0.6, -0.4)


def _collect(ppo, storage, reward_fn, device):
    """One rollout of 1-step episodes (every step terminates) from a fixed observation."""
    storage.clear()
    obs = torch.ones(N, OBS, device=device)
    with torch.no_grad():
        for _ in range(T):
            out = ppo.actor_critic.act(obs)
            storage.add(Transition(obs, out.action, reward_fn(out.action),
                                   torch.ones(N, dtype=torch.bool, device=device),
                                   torch.zeros(N, dtype=torch.bool, device=device),
                                   out.value, out.log_prob, out.mean, out.std))
        storage.compute_returns(ppo.actor_critic.value(obs), ppo.params.advantage.gamma,
                                ppo.params.advantage.gae_lambda)


def _setup(device, **kw):
    torch.manual_seed(0)
    ac = ActorCritic(OBS, ACT, hidden_sizes=(32, 32), init_noise_std=0.5)
    update = {'epochs': 4, 'lr': 3e-3, 'schedule': 'fixed', **kw}
    params = PPOParams(PolicyUpdateSection(**update), AdvantageSection(), num_mini_batches=4)
    return PPO(ac, params, device), RolloutStorage(T, N, OBS, ACT, device)


def test_bandit_mean_moves_to_target(device):
    ppo, storage = _setup(device)
    target = torch.tensor(TARGET, device=device)
    obs = torch.ones(1, OBS, device=device)

    def reward(a):
        return -(a - target).square().sum(-1)

    def dist():
        return (ppo.actor_critic.act_inference(obs)[0] - target).norm().item()

    start = dist()
    for _ in range(25):
        _collect(ppo, storage, reward, device)
        metrics = ppo.update(storage)
    assert dist() < 0.3 * start
    expected = {'losses/surrogate', 'losses/value', 'losses/entropy', 'losses/approx_kl',
                'charts/learning_rate', 'charts/clip_fraction', 'charts/action_std'}
    assert expected <= set(metrics)
    assert all(isinstance(v, float) for v in metrics.values())


def _constant_return(ppo, storage, ret, metric, device, updates=15):
    """Run ``updates`` PPO updates on a constant reward ``ret``; return ``metric`` per update."""
    def reward(a):
        return torch.full(a.shape[:1], ret, device=a.device)

    values = []
    for _ in range(updates):
        _collect(ppo, storage, reward, device)
        values.append(ppo.update(storage)[metric])
    return values


def test_value_loss_decreases(device):
    ppo, storage = _setup(device, entropy_coef=0.01)
    losses = _constant_return(ppo, storage, 2.0, 'losses/value', device)
    assert losses[-1] < 0.1 * losses[0]


@pytest.mark.parametrize('clipped', [True, False])
def test_value_clip_is_in_reward_units(clipped, device):
    # Returns of 100 (a gymnasium-like scale): a sample whose value moved clip_param past
    # its rollout value gives no gradient, so the critic lags far behind (only the
    # optimiser's momentum carries it on); the fraction of clipped samples says so.
    # Without the clip the same 15 updates reach the return.
    ppo, storage = _setup(device, clipped_value_loss=clipped)
    fractions = _constant_return(ppo, storage, 100.0, 'charts/value_clip_fraction', device)
    value = ppo.actor_critic.value(torch.ones(1, OBS, device=device)).item()
    if clipped:
        assert value < 50.0 and min(fractions) > 0.5
    else:
        assert value > 90.0 and max(fractions) == 0.0


def test_update_requires_returns(device):
    ppo, storage = _setup(device)
    with pytest.raises(RuntimeError, match='compute_returns'):
        ppo.update(storage)


def test_gaussian_kl_closed_form():
    zero, one = torch.zeros(1, 3), torch.ones(1, 3)
    assert gaussian_kl(zero, one, zero, one).item() == 0.0
    # KL(N(0,1) || N(1,1)) = 1/2 per dim.
    assert gaussian_kl(zero, one, one, one).item() == pytest.approx(1.5)
    # KL(N(0,1) || N(0,2)) = log 2 + 1/8 - 1/2 per dim.
    assert gaussian_kl(zero, one, zero, 2 * one).item() == pytest.approx(
        3 * (math.log(2) + 0.125 - 0.5))


def test_adapt_learning_rate_rule():
    assert adapt_learning_rate(1e-3, 0.05, 0.01) == pytest.approx(1e-3 / 1.5)
    assert adapt_learning_rate(1e-3, 0.001, 0.01) == pytest.approx(1.5e-3)
    assert adapt_learning_rate(1e-3, 0.01, 0.01) == 1e-3
    assert adapt_learning_rate(1e-2, 0.0, 0.01) == 1e-2      # clamp high
    assert adapt_learning_rate(1e-5, 1.0, 0.01) == 1e-5      # clamp low


@pytest.mark.parametrize('shift,direction', [(0.0, 1), (3.0, -1)])
def test_adaptive_lr_moves_in_right_direction(shift, direction, device):
    ppo, storage = _setup(device, schedule='adaptive', lr=1e-4)

    def reward(a):
        return -a.square().sum(-1)

    _collect(ppo, storage, reward, device)
    storage.mu += shift  # pretend the rollout policy was far away -> large KL
    lr0 = ppo.learning_rate
    metrics = ppo.update(storage)
    assert (metrics['charts/learning_rate'] - lr0) * direction > 0
    for group in ppo.optimizer.param_groups:
        assert group['lr'] == ppo.learning_rate


def test_state_dict_round_trip(device):
    ppo, storage = _setup(device, schedule='adaptive')
    _collect(ppo, storage, lambda a: -a.square().sum(-1), device)
    ppo.update(storage)
    other, _ = _setup(device, schedule='adaptive')
    other.load_state_dict(ppo.state_dict())
    assert other.learning_rate == ppo.learning_rate
    assert other.num_updates == 1
    assert other.optimizer.param_groups[0]['lr'] == ppo.learning_rate
    s1 = ppo.optimizer.state_dict()['state']
    s2 = other.optimizer.state_dict()['state']
    for k in s1:
        torch.testing.assert_close(s1[k]['exp_avg'], s2[k]['exp_avg'])


def test_num_mini_batches_for():
    assert num_mini_batches_for(256, 24, 64) == 6
    assert num_mini_batches_for(1000, 24, 64) == 1
    with pytest.warns(UserWarning, match='one minibatch'):
        assert num_mini_batches_for(10_000, 24, 64) == 1
    with pytest.raises(ValueError):
        num_mini_batches_for(0, 24, 64)


def test_params_validation():
    with pytest.raises(ValueError):
        PolicyUpdateSection(schedule='cosine')
    with pytest.raises(ValueError):
        PPOParams(PolicyUpdateSection(), AdvantageSection(), num_mini_batches=0)
