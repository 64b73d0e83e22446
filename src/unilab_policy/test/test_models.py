# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for ``ActorCritic`` and ``PolicyBundle``."""

import math

import pytest
import torch

from unilab_policy.models import ActorCritic, PolicyBundle


def test_shapes_and_consistency(device):
    torch.manual_seed(0)
    ac = ActorCritic(6, 3, hidden_sizes=(16, 16), init_noise_std=0.5).to(device)
    obs = torch.randn(10, 6, device=device)
    out = ac.act(obs)
    assert out.action.shape == (10, 3)
    assert out.log_prob.shape == (10,)
    assert out.value.shape == (10,)
    assert out.mean.shape == out.std.shape == (10, 3)
    torch.testing.assert_close(out.std, torch.full((10, 3), 0.5, device=device))
    ev = ac.evaluate(obs, out.action)
    torch.testing.assert_close(ev.log_prob, out.log_prob)
    torch.testing.assert_close(ev.value, out.value)
    torch.testing.assert_close(ac.act_inference(obs), out.mean)
    # Entropy of a diagonal Gaussian: sum_i 0.5 * log(2 pi e sigma_i^2).
    expected_h = 3 * 0.5 * math.log(2 * math.pi * math.e * 0.25)
    torch.testing.assert_close(ev.entropy, torch.full((10,), expected_h, device=device))


def test_log_prob_matches_closed_form():
    ac = ActorCritic(2, 2, hidden_sizes=(8,), init_noise_std=2.0)
    obs = torch.zeros(1, 2)
    mean = ac.act_inference(obs)
    ev = ac.evaluate(obs, mean + 2.0)  # one std away in each dim
    expected = 2 * (-0.5 - math.log(2.0) - 0.5 * math.log(2 * math.pi))
    assert ev.log_prob.item() == pytest.approx(expected, abs=1e-5)


def test_bad_args():
    with pytest.raises(ValueError):
        ActorCritic(2, 2, activation='nope')
    with pytest.raises(ValueError):
        ActorCritic(2, 2, init_noise_std=0.0)


def test_bundle_state_includes_normalizer():
    bundle = PolicyBundle(ActorCritic(4, 2, hidden_sizes=(8,)))
    keys = set(bundle.state_dict())
    assert {'obs_normalizer.mean', 'obs_normalizer.var', 'obs_normalizer.count'} <= keys
    assert 'actor_critic.log_std' in keys
    bundle.obs_normalizer.update(torch.randn(50, 4) * 3 + 2)
    obs = torch.randn(5, 4)
    expected = bundle.actor_critic.act_inference(bundle.obs_normalizer(obs))
    torch.testing.assert_close(bundle(obs), expected)
