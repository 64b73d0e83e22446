# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Inference wrapper: eager on CPU, CUDA-graph replay on CUDA, same numbers either way."""

import math

import numpy as np
import pytest
import torch
from torch.distributions import Normal
from unilab_policy.inference import InferencePolicy
from unilab_policy.models import ActorCritic, PolicyBundle
from unilab_policy.weights import flatten_state, unflatten_into

N, OBS, ACT = 5, 4, 3


def make_bundle(device, seed=0):
    torch.manual_seed(seed)
    bundle = PolicyBundle(ActorCritic(OBS, ACT, hidden_sizes=(16,), init_noise_std=0.7))
    bundle.obs_normalizer.update(torch.randn(64, OBS) * 2 + 1)
    return bundle.to(device).eval()


def eager(bundle, obs):
    with torch.no_grad():
        nobs = bundle.normalize(torch.as_tensor(obs, device=bundle.obs_normalizer.mean.device))
        return bundle.actor_critic.actor(nobs), bundle.actor_critic.value(nobs)


def test_cpu_skips_capture_with_a_log_line_and_matches_eager():
    logs = []
    bundle = make_bundle('cpu')
    policy = InferencePolicy(bundle, N, torch.device('cpu'), graph_capture=True, log=logs.append)
    assert policy.graph is None
    assert any('graph_capture skipped' in line for line in logs)
    obs = np.random.default_rng(0).standard_normal((N, OBS)).astype(np.float32)
    out = policy.act(obs)
    mean, value = eager(bundle, obs)
    torch.testing.assert_close(out.mean, mean)
    torch.testing.assert_close(out.value, value)
    assert out.action.shape == (N, ACT) and out.log_prob.shape == (N,)
    expected = Normal(out.mean, out.std).log_prob(out.action).sum(-1)
    torch.testing.assert_close(out.log_prob, expected)
    torch.testing.assert_close(out.std[0], torch.full((ACT,), 0.7))


def test_log_prob_by_hand():
    bundle = make_bundle('cpu')
    policy = InferencePolicy(bundle, N, torch.device('cpu'))
    out = policy.act(np.zeros((N, OBS), np.float32))
    z = (out.action - out.mean) / out.std
    by_hand = (-0.5 * z ** 2 - torch.log(out.std) - 0.5 * math.log(2 * math.pi)).sum(-1)
    torch.testing.assert_close(out.log_prob, by_hand)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='no CUDA')
def test_cuda_graph_replay_matches_eager_and_follows_weight_swaps():
    device = torch.device('cuda')
    bundle = make_bundle(device)
    policy = InferencePolicy(bundle, N, device, graph_capture=True, log=lambda s: None)
    assert policy.graph is not None
    obs = np.random.default_rng(1).standard_normal((N, OBS)).astype(np.float32)
    out = policy.act(obs)
    mean, value = eager(bundle, obs)
    torch.testing.assert_close(out.mean, mean)
    torch.testing.assert_close(out.value, value)
    # New weights copied in place are used by the captured graph without re-capture.
    flat, spec = flatten_state(make_bundle('cpu', seed=1))
    unflatten_into(bundle, flat, spec)
    out2 = policy.act(obs)
    mean2, _ = eager(bundle, obs)
    torch.testing.assert_close(out2.mean, mean2)
    assert not torch.allclose(out2.mean, out.mean)
