# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The trained envelope: the joint range of the observations trained on, in every checkpoint."""

import numpy as np
import pytest
from test_trainer import _chunk, _rollout, _trainer, N, T
import torch
from unilab_policy.checkpoint import load_checkpoint
from unilab_policy.envelope import joint_range, KEY, TrainedEnvelope

WS = (-0.2, -0.8, 0.1, 0.9, 0.8, 1.0)


def test_min_max_of_the_leading_joint_columns():
    env = TrainedEnvelope(2, WS, 'base_link')
    assert 'joint_low' not in env.state_dict()  # nothing seen: no range
    env.update(torch.tensor([[[0.1, -0.2, 9.0], [0.3, -0.5, -9.0]]]))
    env.update(torch.tensor([[[-0.4, 0.0, 7.0]]]))
    s = env.state_dict()
    assert s['joint_low'] == pytest.approx([-0.4, -0.5])
    assert s['joint_high'] == pytest.approx([0.3, 0.0])
    assert s['samples'] == 3 and s['workspace'] == list(WS)
    assert s['workspace_frame'] == 'base_link'
    # The deploy side adds its margin on each side.
    lo, hi = joint_range(s, 0.1)
    assert lo == pytest.approx([-0.5, -0.6]) and hi == pytest.approx([0.4, 0.1])
    assert joint_range({'samples': 0}, 0.1) is None and joint_range(None, 0.1) is None


def test_a_resumed_envelope_keeps_what_it_saw():
    env = TrainedEnvelope(2)
    env.update(torch.tensor([[1.0, 2.0]]))
    again = TrainedEnvelope(2)
    again.load_state_dict(env.state_dict())
    again.update(torch.tensor([[0.0, 3.0]]))
    assert again.state_dict()['joint_low'] == [0.0, 2.0]
    assert again.state_dict()['joint_high'] == [1.0, 3.0]
    with pytest.raises(ValueError, match='joints'):
        TrainedEnvelope(3).load_state_dict(env.state_dict())


def test_every_checkpoint_carries_the_range_of_the_stored_observations(tmp_path):
    rng = np.random.default_rng(0)
    tr = _trainer(tmp_path)
    tr.envelope = TrainedEnvelope(2, WS, 'base_link')
    seen = []
    for _ in range(T // 2):
        chunk = _chunk(tr, rng)
        seen.append(chunk['obs'][..., :2].reshape(-1, 2))
        tr.add_chunk(chunk, tr.version)
    path = tr.save_checkpoint()
    state = load_checkpoint(path)[KEY]
    q = np.concatenate(seen).astype(np.float64)
    np.testing.assert_allclose(state['joint_low'], q.min(axis=0))
    np.testing.assert_allclose(state['joint_high'], q.max(axis=0))
    assert state['samples'] == T * N and state['workspace'] == list(WS)
    _rollout(tr, rng)  # a resumed trainer goes on from the checkpoint's range
    fresh = _trainer(tmp_path / 'again')
    fresh.envelope = TrainedEnvelope(2)
    fresh.load(path)
    assert fresh.envelope.state_dict()['joint_low'] == state['joint_low']
