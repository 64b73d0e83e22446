# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The adapter's data and fine-tuning: robot rewards, episodes, the window, PPO on a copy."""

import numpy as np
import pytest
import torch
from unilab_adapt.adapter import _only_version
from unilab_adapt.finetune import (AdaptDataError, chunk_steps, concat_steps, finetune,
                                   score_versions, Window)
from unilab_adapt.params import AdaptSection
from unilab_adapt.robot_reward import reach_columns
from unilab_core.config import AdvantageSection, PolicyUpdateSection
from unilab_policy.networks import build_bundle
from unilab_policy.weights import flatten_state, unflatten_into

N_JOINTS = 6
OBS_DIM = 2 * N_JOINTS + 9


def robot_chunk(dists, goal_changes=(), k=None):
    """Return a one-robot rollout chunk whose tool is ``dists[t]`` m from the goal after t."""
    dists = np.asarray(dists, np.float32)
    k = k or len(dists) - 1
    c = reach_columns(N_JOINTS)
    obs = np.zeros((k + 1, OBS_DIM), np.float32)
    obs[:, c['goal']] = [0.5, 0.0, 0.5]
    obs[:, c['tool']] = obs[:, c['goal']] - np.stack([dists, 0 * dists, 0 * dists], 1)
    trunc = np.zeros(k, np.float32)
    trunc[list(goal_changes)] = 1.0
    a = np.zeros((k, 1, N_JOINTS), np.float32)
    return {'obs': obs[:k, None], 'next_obs': obs[k:k + 1], 'actions': a, 'mu': a,
            'sigma': a + 0.1, 'log_prob': np.zeros((k, 1), np.float32),
            'values': np.zeros((k, 1), np.float32), 'rewards': np.zeros((k, 1), np.float32),
            'terminated': np.zeros((k, 1), np.float32), 'truncated': trunc[:, None]}


def test_rewards_are_recomputed_from_the_next_observation_against_the_steps_goal():
    steps = chunk_steps(robot_chunk([0.3, 0.2, 0.1, 0.0]), version=4)
    np.testing.assert_allclose(steps.distance, [0.2, 0.1, 0.0], atol=1e-6)
    # closer is better, and at the goal the reward is the near-target bonus
    assert steps.reward[0] < steps.reward[1] < steps.reward[2]
    assert steps.reward[2] == pytest.approx(1.0, abs=1e-5)
    assert set(steps.version) == {4}


def test_bad_chunks_are_refused_by_name():
    bad = robot_chunk([0.1, 0.1, 0.1])
    bad['obs'] = np.repeat(bad['obs'], 2, axis=1)
    with pytest.raises(AdaptDataError, match='one robot'):
        chunk_steps(bad, 0)
    nan = robot_chunk([0.1, 0.1, 0.1])
    nan['log_prob'][0] = np.nan
    with pytest.raises(AdaptDataError, match='NaN'):
        chunk_steps(nan, 0)
    missing = robot_chunk([0.1, 0.1])
    del missing['mu']
    with pytest.raises(AdaptDataError, match='mu'):
        chunk_steps(missing, 0)


def test_success_counts_complete_episodes_of_one_version_by_their_final_distance():
    # episodes end at steps 1, 4, 7: [2..4] ends at 0.01 (success), [5..7] at 0.3 (failure)
    d = [0.4, 0.3, 0.2, 0.1, 0.01, 0.01, 0.02, 0.3, 0.2]
    steps = chunk_steps(robot_chunk(d, goal_changes=(1, 4, 7)), version=1)
    score = score_versions(steps)[1]
    assert (score.episodes, score.successes) == (2, 1)
    # an episode acted by two versions belongs to neither
    other = chunk_steps(robot_chunk(d, goal_changes=(1, 4, 7)), version=2)
    mixed = concat_steps([steps, other])
    mixed.version[6] = 2
    scores = score_versions(mixed)
    assert scores[1].episodes == 1 and scores[2].episodes == 3


def test_window_keeps_the_newest_steps_and_counts_what_it_drops():
    w = Window(max_steps=10)
    for v in range(5):
        w.add(chunk_steps(robot_chunk([0.1] * 5), version=v))
    assert w.size <= 10 + 4 and w.dropped_steps == 20 - w.size and w.total_steps == 20
    assert list(np.unique(w.steps().version)) == [2, 3, 4]


def test_a_versions_steps_are_cut_where_other_versions_acted():
    steps = chunk_steps(robot_chunk([0.1] * 7), version=0)
    steps.version[:] = [0, 0, 1, 1, 0, 0]
    mine = _only_version(steps, 0)
    assert len(mine) == 4
    assert list(mine.ends) == [False, True, False, True]


def _bundle():
    from unilab_core.config import ModelSection, NormalizationSection
    return build_bundle(OBS_DIM, N_JOINTS, ModelSection(hidden_sizes=[16, 16]),
                        NormalizationSection())


def _steps():
    rng = np.random.default_rng(0)
    chunk = robot_chunk(rng.uniform(0.0, 0.3, 65), goal_changes=(20, 40))
    chunk['actions'] = rng.normal(0, 0.1, chunk['actions'].shape).astype(np.float32)
    return chunk_steps(chunk, 0)


@pytest.mark.parametrize('method', ['ppo', 'iql'])
@pytest.mark.parametrize('layers', ['last', 'all'])
def test_finetune_changes_only_the_chosen_layers_of_a_copy(layers, method):
    torch.manual_seed(0)
    bundle = _bundle()
    flat0, _ = flatten_state(bundle)
    flat0 = flat0.numpy().copy()
    cfg = AdaptSection(layers=layers, last_layers=1, lr=1e-2, batch_size=16, method=method)
    new, metrics = finetune(bundle, flat0, _steps(), cfg, AdvantageSection(),
                            PolicyUpdateSection())
    assert np.all(np.isfinite(new)) and metrics['steps'] == 64
    # IQL (the offline learner) reports its own losses: value, twin Q, policy.
    assert ('losses/iql_policy' in metrics) == (method == 'iql')
    np.testing.assert_array_equal(flatten_state(bundle)[0].numpy(), flat0)  # template kept
    tuned = _bundle()
    unflatten_into(tuned, torch.from_numpy(new), flatten_state(tuned)[1])
    before, after = bundle.actor_critic, tuned.actor_critic
    assert not torch.equal(before.actor[-1].weight, after.actor[-1].weight)
    changed_first = not torch.equal(before.actor[0].weight, after.actor[0].weight)
    assert changed_first == (layers == 'all')


def test_sabotage_moves_the_weights_much_further():
    torch.manual_seed(0)
    bundle = _bundle()
    flat0 = flatten_state(bundle)[0].numpy().copy()
    honest, _ = finetune(bundle, flat0, _steps(), AdaptSection(batch_size=16),
                         AdvantageSection(), PolicyUpdateSection())
    huge, _ = finetune(bundle, flat0, _steps(), AdaptSection(batch_size=16, sabotage='huge_lr'),
                       AdvantageSection(), PolicyUpdateSection())
    assert np.abs(huge - flat0).sum() > 10 * np.abs(honest - flat0).sum()


def test_too_little_data_is_refused():
    bundle = _bundle()
    one = chunk_steps(robot_chunk([0.1, 0.1]), 0)
    with pytest.raises(AdaptDataError, match='nothing to fine-tune'):
        finetune(bundle, flatten_state(bundle)[0].numpy(), one, AdaptSection(),
                 AdvantageSection(), PolicyUpdateSection())


def test_critic_is_fitted_to_the_robots_returns_before_the_policy_update(monkeypatch):
    from unilab_adapt import finetune as ft
    seen = []
    update = ft.PPO.update

    def spy(self, storage):
        # What the policy update is given: the stored values, the critic's own values of
        # the same observations at that moment, and the advantages.
        with torch.no_grad():
            critic = self.actor_critic.value(storage.obs[:, 0])
        seen.append((storage.values[:, 0].clone(), critic, storage.advantages.clone()))
        return update(self, storage)
    monkeypatch.setattr(ft.PPO, 'update', spy)
    torch.manual_seed(0)
    bundle = _bundle()
    flat0 = flatten_state(bundle)[0].numpy().copy()
    steps = _steps()
    plain = AdaptSection(batch_size=16, lr=1e-2, layers='all', critic_epochs=0)
    _, off = finetune(bundle, flat0, steps, plain, AdvantageSection(), PolicyUpdateSection())
    assert not any(k.startswith('critic_fit/') for k in off)
    fit = plain.model_copy(update={'critic_epochs': 8})
    new, on = finetune(bundle, flat0, steps, fit, AdvantageSection(), PolicyUpdateSection())
    assert np.all(np.isfinite(new))
    # Random rewards: V cannot fit them all, but it fits them better than the recorded values.
    assert on['critic_fit/value_mse_after'] < 0.8 * on['critic_fit/value_mse_before']
    (v_off, c_off, a_off), (v_on, c_on, a_on) = seen
    # Without the fit the update sees the recorded values; with it, the fitted critic's, and
    # advantages recomputed from them.
    np.testing.assert_allclose(v_off.numpy(), steps.values, rtol=1e-6)
    assert not torch.allclose(v_off, c_off)
    torch.testing.assert_close(v_on, c_on)
    assert not torch.allclose(a_on, a_off)


@pytest.mark.parametrize('method', ['ppo', 'iql'])
def test_pause_runs_before_every_update_step_and_changes_nothing(method):
    # The adapter's pacer yields to the control loop there: between minibatches only.
    bundle = _bundle()
    flat0 = flatten_state(bundle)[0].numpy().copy()
    cfg = AdaptSection(batch_size=16, epochs=2, critic_epochs=3, method=method)
    calls = []
    plain, _ = finetune(bundle, flat0, _steps(), cfg, AdvantageSection(), PolicyUpdateSection())
    paced, _ = finetune(bundle, flat0, _steps(), cfg, AdvantageSection(), PolicyUpdateSection(),
                        pause=lambda: calls.append(1))
    np.testing.assert_array_equal(plain, paced)
    # 64 steps in minibatches of 16: 4 a pass; PPO: 3 critic passes + 2 epochs; IQL: 2 x 4.
    assert len(calls) == (4 * (3 + 2) if method == 'ppo' else 2 * 4)
