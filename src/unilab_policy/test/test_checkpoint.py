# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for atomic checkpoints."""

import os
import random

import numpy as np
import pytest
import torch
from unilab_core.config import AdvantageSection, PolicyUpdateSection

from unilab_policy.checkpoint import (capture_rng_state, CHECKPOINT_VERSION, CheckpointError,
                                      load_checkpoint, restore_rng_state, save_checkpoint)
from unilab_policy.models import ActorCritic, PolicyBundle
from unilab_policy.ppo import PPO, PPOParams
from unilab_policy.storage import RolloutStorage, Transition


def _trained(device, seed):
    torch.manual_seed(seed)
    bundle = PolicyBundle(ActorCritic(3, 2, hidden_sizes=(8,)))
    params = PPOParams(PolicyUpdateSection(epochs=1), AdvantageSection(), 2)
    ppo = PPO(bundle.actor_critic, params, device)
    bundle.to(device)
    bundle.obs_normalizer.update(torch.randn(20, 3, device=device))
    st = RolloutStorage(2, 4, 3, 2, device)
    obs = torch.randn(4, 3, device=device)
    with torch.no_grad():
        for _ in range(2):
            out = bundle.actor_critic.act(obs)
            flags = torch.zeros(4, dtype=torch.bool, device=device)
            st.add(Transition(obs, out.action, torch.randn(4, device=device), flags, flags,
                              out.value, out.log_prob, out.mean, out.std))
    st.compute_returns(torch.zeros(4, device=device), 0.99, 0.95)
    ppo.update(st)
    return bundle, ppo


def _state(bundle, ppo):
    return {'model': bundle.state_dict(), 'ppo': ppo.state_dict(), 'iteration': 7,
            'env_steps': 123456, 'rng': capture_rng_state()}


def test_round_trip(tmp_path, device):
    bundle, ppo = _trained(device, 0)
    path = tmp_path / 'sub' / 'ckpt.pt'
    save_checkpoint(path, _state(bundle, ppo))
    assert os.listdir(tmp_path / 'sub') == ['ckpt.pt']  # no temp file left behind
    state = load_checkpoint(path, map_location=device)
    assert state['version'] == CHECKPOINT_VERSION
    assert state['iteration'] == 7 and state['env_steps'] == 123456
    bundle2, ppo2 = _trained(device, 1)
    bundle2.load_state_dict(state['model'])
    ppo2.load_state_dict(state['ppo'])
    for k, v in bundle.state_dict().items():
        torch.testing.assert_close(bundle2.state_dict()[k], v)
    assert ppo2.learning_rate == ppo.learning_rate
    # Overwriting keeps a single file.
    save_checkpoint(path, _state(bundle2, ppo2))
    assert os.listdir(tmp_path / 'sub') == ['ckpt.pt']


def test_rng_round_trip(tmp_path):
    torch.manual_seed(5)
    random.seed(5)
    np.random.seed(5)
    save_checkpoint(tmp_path / 'rng.pt', {'rng': capture_rng_state()})
    expected = (torch.rand(3), random.random(), np.random.rand())
    restore_rng_state(load_checkpoint(tmp_path / 'rng.pt')['rng'])
    torch.testing.assert_close(torch.rand(3), expected[0])
    assert random.random() == expected[1]
    assert np.random.rand() == expected[2]


def test_truncated_file_gives_clear_error(tmp_path):
    path = tmp_path / 'ckpt.pt'
    save_checkpoint(path, {'model': {'w': torch.randn(100, 100)}})
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(CheckpointError, match='corrupt or truncated'):
        load_checkpoint(path)
    path.write_bytes(b'')
    with pytest.raises(CheckpointError):
        load_checkpoint(path)


def test_missing_and_future_version(tmp_path):
    with pytest.raises(FileNotFoundError, match='checkpoint not found'):
        load_checkpoint(tmp_path / 'nope.pt')
    save_checkpoint(tmp_path / 'v.pt', {'version': CHECKPOINT_VERSION + 1})
    with pytest.raises(CheckpointError, match='version'):
        load_checkpoint(tmp_path / 'v.pt')


def test_failed_save_leaves_old_file_and_no_temp(tmp_path):
    path = tmp_path / 'ckpt.pt'
    save_checkpoint(path, {'iteration': 1})

    class Unpicklable:
        def __reduce__(self):
            raise RuntimeError('boom')

    with pytest.raises(RuntimeError, match='boom'):
        save_checkpoint(path, {'iteration': 2, 'bad': Unpicklable()})
    assert os.listdir(tmp_path) == ['ckpt.pt']
    assert load_checkpoint(path)['iteration'] == 1
