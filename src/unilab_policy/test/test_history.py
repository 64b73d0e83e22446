# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The action history appended to the policy's observation (pure numpy)."""

import numpy as np
import pytest
from unilab_policy.history import ActionHistory, policy_input_dim


def test_newest_first_and_reset_per_env():
    h = ActionHistory(num_envs=2, act_dim=2, length=3)
    obs = np.array([[1.0], [2.0]])
    np.testing.assert_array_equal(h.observe(obs), [[1, 0, 0, 0, 0, 0, 0], [2, 0, 0, 0, 0, 0, 0]])
    for t in (1, 2, 3, 4):
        h.push(np.array([[t, -t], [10 * t, -10 * t]]))
    # a_{t-1}, a_{t-2}, a_{t-3}: the first action fell out.
    np.testing.assert_array_equal(h.observe(obs)[0], [1, 4, -4, 3, -3, 2, -2])
    h.reset(np.array([False, True]))  # a mask, as done flags come
    out = h.observe(obs)
    np.testing.assert_array_equal(out[1], [2, 0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(out[0], [1, 4, -4, 3, -3, 2, -2])
    h.reset([0])  # or indices
    assert not h.observe(obs)[:, 1:].any()
    assert out.dtype == np.float32 and out.shape == (2, policy_input_dim(1, 2, 3))


def test_length_zero_passes_the_observation_through():
    h = ActionHistory(num_envs=3, act_dim=4, length=0)
    obs = np.ones((3, 5), np.float32)
    h.push(np.ones((3, 4)))
    assert h.observe(obs) is obs
    assert policy_input_dim(5, 4, 0) == 5


def test_shape_errors_name_the_mismatch():
    h = ActionHistory(num_envs=2, act_dim=3, length=1)
    with pytest.raises(ValueError, match=r'action shape \(2, 2\), expected \(2, 3\)'):
        h.push(np.zeros((2, 2)))
    with pytest.raises(ValueError, match='observation batch 3 != 2 envs'):
        h.observe(np.zeros((3, 1)))
    with pytest.raises(ValueError, match='>= 0'):
        ActionHistory(2, 3, -1)


def test_commands_are_clipped_and_an_episode_starts_with_the_held_command():
    h = ActionHistory(num_envs=2, act_dim=2, length=2, low=[-1.0, -2.0], high=[1.0, 2.0])
    h.reset([0, 1], fill=np.array([[0.3, 5.0], [-0.2, 0.1]]))  # e.g. joint positions
    np.testing.assert_array_equal(h.observe(np.zeros((2, 0)))[0], np.float32([0.3, 2, 0.3, 2]))
    h.push(np.array([[9.0, -9.0], [0.5, 0.5]]))
    np.testing.assert_array_equal(h.observe(np.zeros((2, 0))),
                                  np.float32([[1, -2, 0.3, 2], [0.5, 0.5, -0.2, 0.1]]))
    h.reset(np.array([True, False]), fill=np.array([[0.7, 0.7]]))
    np.testing.assert_array_equal(h.observe(np.zeros((2, 0)))[0], np.float32([0.7] * 4))
    with pytest.raises(ValueError, match='low has 3 values, act_dim is 2'):
        ActionHistory(2, 2, 1, low=[0, 0, 0])
