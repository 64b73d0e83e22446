# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for ``ActorCritic`` and ``PolicyBundle``."""

import math

import pytest
import torch
from unilab_core.config import ModelSection

from unilab_policy.models import ActorCritic, make_actor_critic, PolicyBundle


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


def _grid_obs(n, offset, grid, rest):
    c, h, w = grid
    return torch.randn(n, offset + c * h * w + rest)


def test_grid_encoder_reads_its_columns_and_keeps_the_others(device):
    torch.manual_seed(0)
    ac = make_actor_critic(3 + 2 * 5 * 6 + 4, 2, ModelSection(
        hidden_sizes=[16], grid_input=[3, 2, 5, 6], grid_features=7)).to(device)
    enc = ac.actor[0]
    x = _grid_obs(4, 3, (2, 5, 6), 4).to(device)
    out = enc(x)
    # Columns before and after the grid pass through in order, then the grid features.
    assert out.shape == (4, 3 + 4 + 7)
    torch.testing.assert_close(out[:, :3], x[:, :3])
    torch.testing.assert_close(out[:, 3:7], x[:, -4:])
    # The features come from the grid's columns, laid out [C, H, W].
    grid = x[:, 3:63].reshape(4, 2, 5, 6)
    torch.testing.assert_close(out[:, 7:], enc.linear(enc.conv(grid)))
    changed = x.clone()
    changed[:, 3 + 1 * 30 + 2 * 6 + 4] += 5.0  # channel 1, row 2, column 4
    assert not torch.allclose(enc(changed)[:, 7:], out[:, 7:])
    torch.testing.assert_close(enc(changed)[:, :7], out[:, :7])


def test_grid_encoder_is_trained_with_the_policy():
    torch.manual_seed(0)
    ac = make_actor_critic(2 + 2 * 4 * 4, 2, ModelSection(hidden_sizes=[16],
                                                          grid_input=[2, 2, 4, 4]))
    obs = torch.randn(8, 34)
    out = ac.act(obs)
    ev = ac.evaluate(obs, out.action)
    (-ev.log_prob.mean() + ev.value.pow(2).mean()).backward()
    for head in (ac.actor, ac.critic):
        assert head[0].conv[0].weight.grad.abs().sum() > 0
        assert head[0].linear[0].weight.grad.abs().sum() > 0
    # Actor and critic have their own grid encoders.
    assert ac.actor[0].conv[0].weight.data_ptr() != ac.critic[0].conv[0].weight.data_ptr()


@pytest.mark.parametrize('grid_input, width, match', [
    ([0, 2, 4], 40, 'offset, channels, height, width'),
    ([0, 0, 4, 4], 40, 'offset, channels, height, width'),
    ([10, 2, 4, 4], 40, 'needs columns up to 42'),
])
def test_grid_input_that_does_not_fit_names_the_key(grid_input, width, match):
    with pytest.raises(ValueError, match=match) as err:
        ActorCritic(width, 2, grid_input=grid_input)
    assert 'model.grid_input' in str(err.value)


def test_model_section_rejects_a_bad_grid_input():
    with pytest.raises(ValueError, match='model.grid_input'):
        ModelSection(grid_input=[1, 2, 3])
    assert ModelSection().grid_input == []
    assert isinstance(make_actor_critic(5, 2, ModelSection()).actor[0], torch.nn.Linear)
