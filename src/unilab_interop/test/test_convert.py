# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Weights and settings between rsl_rl and UniLab, with hand-computed values."""

import pytest
import torch
from unilab_core.config import ModelSection, NormalizationSection, RunConfig
from unilab_interop.convert import (bundle_state_from_rsl, ConvertError, mlp_shape, rsl_cfg_like,
                                    rsl_states_from_bundle)
from unilab_policy.networks import build_bundle


def _bundle():
    return build_bundle(3, 2, ModelSection(hidden_sizes=[4]), NormalizationSection(clip=1e6))


def test_rsl_normaliser_becomes_ours_exactly():
    b = _bundle()
    actor, critic = rsl_states_from_bundle(b)
    actor['obs_normalizer._mean'] = torch.tensor([[1.0, -2.0, 0.5]])
    actor['obs_normalizer._std'] = torch.tensor([[0.99, 1.99, 0.09]])
    b.load_state_dict(bundle_state_from_rsl(actor, critic, b))
    # rsl_rl: (x - mean) / (std + 0.01) -> (2 - 1) / 1, (0 + 2) / 2, (0.5 - 0.5) / 0.1
    x = torch.tensor([[2.0, 0.0, 0.5]])
    assert torch.allclose(b.normalize(x), torch.tensor([[1.0, 1.0, 0.0]]), atol=1e-6)


def test_scalar_std_becomes_our_log_std():
    b = _bundle()
    actor, critic = rsl_states_from_bundle(b)
    del actor['distribution.log_std_param']
    actor['distribution.std_param'] = torch.tensor([0.5, 2.0])
    state = bundle_state_from_rsl(actor, critic, b)
    assert torch.allclose(state['actor_critic.log_std'], torch.log(torch.tensor([0.5, 2.0])))


def test_a_network_of_other_widths_is_refused_naming_the_layer():
    b = _bundle()
    actor, critic = rsl_states_from_bundle(b)
    actor['mlp.0.weight'] = torch.zeros(5, 3)
    with pytest.raises(ConvertError, match=r'actor layer 0 weight: rsl_rl has \(5, 3\)'):
        bundle_state_from_rsl(actor, critic, b)


def test_mlp_shape_reads_widths():
    actor, _ = rsl_states_from_bundle(
        build_bundle(7, 3, ModelSection(hidden_sizes=[16, 8]), NormalizationSection()))
    assert mlp_shape(actor, 'mlp.') == (7, [16, 8], 3)


def test_rsl_rl_with_our_settings():
    cfg = RunConfig()
    out = rsl_cfg_like(cfg)
    alg = out['algorithm']
    # 32 steps x 64 envs = 2048 transitions in minibatches of 512: 4 minibatches.
    assert out['num_steps_per_env'] == 32 and alg['num_mini_batches'] == 4
    assert alg['entropy_coef'] == 0.0 and alg['lam'] == 0.95 and alg['learning_rate'] == 1e-3
    assert out['actor']['hidden_dims'] == [128, 128]
    assert out['actor']['distribution_cfg'] == {'class_name': 'GaussianDistribution',
                                                'init_std': 0.5, 'std_type': 'log'}
    assert out['actor']['obs_normalization'] and out['critic']['obs_normalization']


def test_a_policy_with_critic_only_columns_is_refused_for_rsl_rl_export():
    # Its actor reads fewer columns than its normaliser covers: refused, not written wrong.
    from unilab_interop.convert import rsl_cfg_for_bundle
    bundle = build_bundle(20, 4, ModelSection(critic_only=[16, 4]), NormalizationSection())
    with pytest.raises(ConvertError, match=r'critic alone reads columns \[16, 4\]'):
        rsl_cfg_for_bundle(bundle, 'elu')
