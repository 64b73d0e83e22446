# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for the K-step rollout chunk builder (pure numpy, no ROS)."""

import numpy as np
import pytest
from unilab_policy.chunk import CHUNK_FIELDS, ChunkBuilder

K, N, OBS, ACT = 3, 2, 4, 2


def _open(cb, seq, value=0.0):
    """Open step ``seq`` with arrays filled with ``value`` (obs with ``seq``)."""
    cb.open_step(np.full((N, OBS), seq, np.float32), np.full((N, ACT), value, np.float32),
                 np.full(N, value, np.float32), np.full(N, value, np.float32),
                 np.full((N, ACT), value, np.float32), np.full((N, ACT), 1.0, np.float32), seq)


def _close(cb, seq, **kw):
    return cb.close_step(np.full(N, float(seq), np.float32), np.zeros(N, np.float32),
                         np.zeros(N, np.float32), **kw)


def test_full_exactly_at_k_and_tensor_shapes():
    cb = ChunkBuilder(K, N, OBS, ACT)
    assert not cb.has_open_step()
    fulls = []
    for seq in range(10, 10 + K):
        _open(cb, seq, value=seq)
        assert cb.has_open_step()
        fulls.append(_close(cb, seq))
        assert not cb.has_open_step()
    assert fulls == [False] * (K - 1) + [True]
    assert cb.size == K
    assert cb.first_seq == 10

    next_obs = np.full((N, OBS), 99.0, np.float32)
    t = cb.tensors(next_obs)
    assert set(t) == set(CHUNK_FIELDS) | {'next_obs'}
    assert t['obs'].shape == (K, N, OBS)
    for name in ('actions', 'mu', 'sigma'):
        assert t[name].shape == (K, N, ACT), name
    for name in ('log_prob', 'values', 'rewards', 'terminated', 'truncated',
                 'episode_return', 'episode_length'):
        assert t[name].shape == (K, N), name
    assert all(t[name].dtype == np.float32 for name in CHUNK_FIELDS)
    np.testing.assert_array_equal(t['next_obs'], next_obs)
    # Step i holds what was opened / closed at seq 10 + i.
    np.testing.assert_array_equal(t['obs'][:, 0, 0], [10, 11, 12])
    np.testing.assert_array_equal(t['actions'][:, 1, 1], [10, 11, 12])
    np.testing.assert_array_equal(t['rewards'][:, 0], [10, 11, 12])


def test_episode_return_nan_and_length_zero_by_default():
    cb = ChunkBuilder(K, N, OBS, ACT)
    _open(cb, 0)
    _close(cb, 0)
    _open(cb, 1)
    _close(cb, 1, episode_return=np.array([np.nan, 7.5], np.float32),
           episode_length=np.array([0, 12], np.float32))
    t = cb.tensors(np.zeros((N, OBS), np.float32))
    assert t['episode_return'].shape == (2, N)
    assert np.isnan(t['episode_return'][0]).all()
    assert t['episode_length'][0].tolist() == [0.0, 0.0]
    assert np.isnan(t['episode_return'][1, 0])
    assert t['episode_return'][1, 1] == 7.5
    assert t['episode_length'][1].tolist() == [0.0, 12.0]


def test_partial_chunk_tensors_have_size_rows():
    cb = ChunkBuilder(K, N, OBS, ACT)
    _open(cb, 5)
    _close(cb, 5)
    _open(cb, 6)  # still open: not part of the chunk
    t = cb.tensors(np.zeros((N, OBS), np.float32))
    assert t['obs'].shape == (1, N, OBS)
    assert t['rewards'].shape == (1, N)


def test_opening_past_k_raises():
    cb = ChunkBuilder(K, N, OBS, ACT)
    for seq in range(K):
        _open(cb, seq)
        _close(cb, seq)
    with pytest.raises(RuntimeError, match='full'):
        _open(cb, K)


def test_close_without_open_raises():
    cb = ChunkBuilder(K, N, OBS, ACT)
    with pytest.raises(RuntimeError, match='no open step'):
        _close(cb, 0)
    _open(cb, 0)
    _close(cb, 0)
    with pytest.raises(RuntimeError, match='no open step'):
        _close(cb, 0)  # closed twice
    _open(cb, 1)
    cb.drop_open_step()
    assert not cb.has_open_step()
    with pytest.raises(RuntimeError, match='no open step'):
        _close(cb, 1)
    assert cb.size == 1


def test_clear_resets_size_and_first_seq():
    cb = ChunkBuilder(K, N, OBS, ACT)
    for seq in range(4, 4 + K):
        _open(cb, seq)
        _close(cb, seq)
    assert cb.first_seq == 4
    cb.clear()
    assert cb.size == 0
    assert cb.first_seq == -1
    assert not cb.has_open_step()
    # A new chunk starts at its own first seq, and the buffers are reused.
    _open(cb, 20)
    assert cb.first_seq == 20
    cb.drop_open_step()  # its outcome never came: slot 0 is opened again
    _open(cb, 21)
    assert cb.first_seq == 21
    assert not _close(cb, 21)
    assert cb.tensors(np.zeros((N, OBS), np.float32))['obs'][0, 0, 0] == 21
