# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for ONNX / TorchScript export of the deployable policy."""

import os
from typing import get_args
import warnings

import pytest
import torch
from unilab_core.config import ModelSection

from unilab_policy.export import export_onnx, export_torchscript, verify_onnx
from unilab_policy.models import ActorCritic, PolicyBundle

OBS = 7


@pytest.fixture
def bundle(device):
    torch.manual_seed(0)
    b = PolicyBundle(ActorCritic(OBS, 3, hidden_sizes=(32, 16))).to(device)
    b.obs_normalizer.update(torch.randn(200, OBS, device=device) * 4 + 1)
    return b


def test_onnx_matches_torch(tmp_path, bundle):
    path = tmp_path / 'policy.onnx'
    module = export_onnx(bundle.actor_critic, bundle.obs_normalizer, path, OBS)
    assert os.listdir(tmp_path) == ['policy.onnx']
    assert verify_onnx(path, module, OBS, n=64) <= 1e-5
    # The exported module is the bundle's deterministic policy (incl. clipping).
    obs = torch.randn(16, OBS) * 50
    with torch.no_grad():
        torch.testing.assert_close(module(obs), bundle(obs.to(bundle.obs_normalizer.mean.device))
                                   .cpu(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('activation', get_args(
    ModelSection.model_fields['activation'].annotation))
def test_every_configurable_activation_exports_to_the_same_commands(tmp_path, activation):
    torch.manual_seed(0)
    b = PolicyBundle(ActorCritic(OBS, 3, hidden_sizes=(16,), activation=activation))
    path = tmp_path / f'{activation}.onnx'
    module = export_onnx(b.actor_critic, b.obs_normalizer, path, OBS)
    assert verify_onnx(path, module, OBS, n=64) <= 1e-5


def test_onnx_with_a_grid_encoder_matches_torch(tmp_path, device):
    from unilab_policy.models import make_actor_critic
    torch.manual_seed(0)
    width = 5 + 2 * 8 * 6
    ac = make_actor_critic(width, 3, ModelSection(hidden_sizes=[16], grid_input=[5, 2, 8, 6]))
    b = PolicyBundle(ac).to(device)
    b.obs_normalizer.update(torch.randn(200, width, device=device) * 2)
    module = export_onnx(b.actor_critic, b.obs_normalizer, tmp_path / 'grid.onnx', width)
    assert verify_onnx(tmp_path / 'grid.onnx', module, width, n=32) <= 1e-5
    obs = torch.randn(4, width)
    with torch.no_grad():
        torch.testing.assert_close(module(obs), b(obs.to(device)).cpu(), rtol=1e-5, atol=1e-5)


def test_export_is_detached_from_training(tmp_path, bundle):
    module = export_onnx(bundle.actor_critic, None, tmp_path / 'p.onnx', OBS)
    obs = torch.randn(4, OBS)
    before = module(obs)
    with torch.no_grad():
        for p in bundle.parameters():
            p.add_(1.0)
    torch.testing.assert_close(module(obs), before)
    assert verify_onnx(tmp_path / 'p.onnx', module, OBS) <= 1e-5


def test_torchscript_matches(tmp_path, bundle):
    path = tmp_path / 'policy.pt'
    module = export_torchscript(bundle.actor_critic, bundle.obs_normalizer, path, OBS)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        loaded = torch.jit.load(str(path))
    obs = torch.randn(9, OBS)
    torch.testing.assert_close(loaded(obs), module(obs))
    assert os.listdir(tmp_path) == ['policy.pt']
