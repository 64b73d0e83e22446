# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for flat weight (de)serialisation."""

import pytest
import torch

from unilab_policy.models import ActorCritic, PolicyBundle
from unilab_policy.weights import flatten_state, spec_numel, unflatten_into


def _bundle(seed):
    torch.manual_seed(seed)
    bundle = PolicyBundle(ActorCritic(5, 2, hidden_sizes=(16, 8)))
    bundle.obs_normalizer.update(torch.randn(37, 5) * 2 + seed)
    return bundle


def test_round_trip_in_place(device):
    src = _bundle(1)
    dst = _bundle(2).to(device)
    flat, spec = flatten_state(src)
    assert flat.dtype == torch.float32 and flat.dim() == 1 and flat.device.type == 'cpu'
    assert flat.numel() == spec_numel(spec)
    assert [name for name, _ in spec] == list(src.state_dict())
    ptrs = {k: v.data_ptr() for k, v in dst.state_dict().items()}
    unflatten_into(dst, flat.to(device), spec)
    for k, v in dst.state_dict().items():
        assert v.data_ptr() == ptrs[k], f'{k} was reallocated'
        torch.testing.assert_close(v.cpu(), src.state_dict()[k])
    assert dst.obs_normalizer.count.dtype == torch.long
    obs = torch.randn(4, 5)
    torch.testing.assert_close(dst(obs.to(device)).cpu(), src(obs))


def test_state_dict_input_and_bad_input_leaves_module_untouched():
    src, dst = _bundle(1), _bundle(2)
    flat, spec = flatten_state(src.state_dict())
    before = {k: v.clone() for k, v in dst.state_dict().items()}
    with pytest.raises(ValueError, match='elements'):
        unflatten_into(dst, flat[:-1], spec)
    bad_spec = list(spec)
    bad_spec[0] = (spec[0][0], (999,))
    with pytest.raises(ValueError):
        unflatten_into(dst, flat, bad_spec)
    with pytest.raises(ValueError, match='lacks'):
        unflatten_into(dst, flat[:-spec_numel(spec[-1:])], spec[:-1])
    for k, v in dst.state_dict().items():
        torch.testing.assert_close(v, before[k])
