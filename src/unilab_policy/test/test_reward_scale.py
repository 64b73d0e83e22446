# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``normalization.rewards``: rewards scaled by the running std of the discounted return."""

import numpy as np
import torch
from unilab_core.config import AdvantageSection, PolicyUpdateSection
from unilab_policy.models import ActorCritic, PolicyBundle
from unilab_policy.ppo import PPOParams
from unilab_policy.reward_scale import RewardScaler
from unilab_policy.trainer import Trainer

from test_trainer import _chunk, ACT, K, N, OBS, T  # noqa: I100 - the test directory


def _reference(rollouts, gamma, clip):
    """SB3 VecNormalize's reward path in plain numpy, rollout after rollout."""
    ret = np.zeros(rollouts[0][0].shape[1])
    seen = []
    out = []
    for rewards, dones in rollouts:
        rows = []
        for t in range(len(rewards)):
            ret = ret * gamma + rewards[t]
            seen.extend(ret.tolist())
            rows.append(ret.copy())
            ret[dones[t]] = 0.0
        std = np.sqrt(np.var(seen) + 1e-8)
        out.append(np.clip(rewards / std, -clip, clip))
    return out


def test_scaled_rewards_match_the_reference_across_rollouts_and_episode_ends():
    rng = np.random.default_rng(0)
    rollouts = [(rng.normal(5.0, 20.0, (8, 3)), rng.random((8, 3)) < 0.2) for _ in range(4)]
    scaler = RewardScaler(3, gamma=0.9, clip=0.5)
    got = [scaler(torch.tensor(r, dtype=torch.float32), torch.tensor(d)).numpy()
           for r, d in rollouts]
    for g, want in zip(got, _reference(rollouts, 0.9, 0.5)):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)
    assert any(np.abs(g).max() == 0.5 for g in got)  # the clip is reached and kept
    scaler2 = RewardScaler(3, gamma=0.9, clip=0.5)
    scaler2.load_state_dict(scaler.state_dict())  # resumable: statistics and returns
    r, d = rollouts[0]
    np.testing.assert_array_equal(scaler2(torch.tensor(r, dtype=torch.float32),
                                          torch.tensor(d)).numpy(),
                                  scaler(torch.tensor(r, dtype=torch.float32),
                                         torch.tensor(d)).numpy())


def _value_loss_of_one_update(tmp_path, reward_factor, scaled):
    """Return the first update's value loss on one rollout with rewards x ``reward_factor``."""
    import csv
    torch.manual_seed(0)
    bundle = PolicyBundle(ActorCritic(OBS, ACT, hidden_sizes=(8,), init_noise_std=0.5))
    params = PPOParams(PolicyUpdateSection(epochs=2, lr=1e-3, schedule='fixed',
                                           clipped_value_loss=False),
                       AdvantageSection(), num_mini_batches=1)
    run = tmp_path / f'{reward_factor}_{scaled}'
    tr = Trainer(bundle, params, T, N, torch.device('cpu'), run, 1000, tensorboard=False,
                 reward_scaler=RewardScaler(N, params.advantage.gamma) if scaled else None)
    rng = np.random.default_rng(1)
    torch.manual_seed(1)
    for _ in range(T // K):
        c = _chunk(tr, rng)
        c['rewards'] = c['rewards'] * reward_factor
        tr.add_chunk(c, tr.version)
    assert tr.updates == 1
    tr.close()
    with open(run / 'metrics.csv') as f:
        return float(next(csv.DictReader(f))['losses/value'])


def test_with_scaling_the_critic_sees_the_same_targets_whatever_the_reward_unit(tmp_path):
    one, thousand = (_value_loss_of_one_update(tmp_path, f, True) for f in (1.0, 1000.0))
    assert thousand == np.float32(one) or abs(thousand - one) <= 1e-4 * abs(one)
    one, thousand = (_value_loss_of_one_update(tmp_path, f, False) for f in (1.0, 1000.0))
    assert thousand > 1e4 * one  # unscaled, the value loss grows with the reward unit
