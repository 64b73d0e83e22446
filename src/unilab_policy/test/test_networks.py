# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The one construction path: network bundle, PPO parameters, a trained run rebuilt."""

import pytest
import torch
from unilab_core.config import (AdvantageSection, ConfigError, ModelSection,
                                NormalizationSection, PolicyUpdateSection, RolloutSection)
from unilab_policy.checkpoint import CheckpointError, save_checkpoint
from unilab_policy.networks import build_bundle, load_trained, ppo_params, run_policy_params
from unilab_policy.params import PolicyNodeParams
from unilab_policy.weights import flatten_state
import yaml


def test_one_seed_gives_one_network():
    model, norm = ModelSection(hidden_sizes=[16], action_history=2), NormalizationSection()
    a = build_bundle(5, 3, model, norm, seed=4)
    b = build_bundle(5, 3, model, norm, seed=4)
    assert torch.equal(flatten_state(a)[0], flatten_state(b)[0])
    # The input is the observation plus the action history.
    assert a.actor_critic.obs_dim == 5 + 2 * 3 and a.obs_normalizer.mean.shape == (11,)
    assert not torch.equal(flatten_state(build_bundle(5, 3, model, norm, seed=5))[0],
                           flatten_state(a)[0])


def test_ppo_params_keep_the_configs_names():
    up = PolicyUpdateSection(batch_size=100, epochs=3, lr=2e-4)
    adv = AdvantageSection(gamma=0.9, gae_lambda=0.8)
    p = ppo_params(up, adv, RolloutSection(num_envs=10, rollout_length=30))
    assert p.update.epochs == 3 and p.update.lr == 2e-4
    assert p.advantage.gae_lambda == 0.8 and p.advantage.gamma == 0.9
    assert p.num_mini_batches == 3  # 300 transitions // 100 per minibatch


def _run(tmp_path, params: dict):
    (tmp_path / 'graph_params.yaml').write_text(yaml.safe_dump(
        {'policy': {'ros__parameters': params}}))
    return tmp_path


def test_a_run_is_rebuilt_with_its_weights(tmp_path):
    p = PolicyNodeParams(obs_dim=4, act_dim=2, model=ModelSection(hidden_sizes=[8]))
    run = _run(tmp_path, p.model_dump())
    trained = build_bundle(4, 2, p.model, p.normalization, seed=9)
    save_checkpoint(run / 'checkpoints' / 'latest.pt', {'bundle': trained.state_dict()})
    got = load_trained(run)
    assert torch.equal(flatten_state(got.bundle)[0], flatten_state(trained)[0])
    assert got.params == p and got.input_dim == 4 and not got.bundle.training
    # A checkpoint path inside the run works too.
    assert load_trained(run / 'checkpoints' / 'latest.pt').checkpoint.name == 'latest.pt'


def test_runs_written_before_typed_parameters_still_load(tmp_path):
    run = _run(tmp_path, {'obs_dim': 4, 'act_dim': 2, 'device': 'cpu', 'seed': 3,
                          'torch_threads': 1, 'num_envs': 8, 'chunk_length': 8,
                          'rollout_length': 32, 'model': {'hidden_sizes': [8]},
                          'normalization': {'observations': True, 'clip': 5.0}})
    p = run_policy_params(run)
    assert p.run.seed == 3 and p.rollout.num_envs == 8 and p.model.hidden_sizes == [8]


def test_what_is_not_a_run_is_refused_with_the_reason(tmp_path):
    with pytest.raises(ConfigError, match='not a run directory'):
        load_trained(tmp_path)
    run = _run(tmp_path, PolicyNodeParams(obs_dim=4, act_dim=2).model_dump())
    with pytest.raises(ConfigError, match='no checkpoint'):
        load_trained(run)
    other = build_bundle(5, 2, ModelSection(), NormalizationSection())
    save_checkpoint(run / 'checkpoints' / 'latest.pt', {'bundle': other.state_dict()})
    with pytest.raises(CheckpointError, match='does not fit'):
        load_trained(run)
    (run / 'graph_params.yaml').write_text('policy: {ros__parameters: {obs_dim: -1}}')
    with pytest.raises(ConfigError, match='no valid policy parameters'):
        load_trained(run)
