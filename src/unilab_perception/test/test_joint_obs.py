# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""JointStateIndex and build_observation without ROS."""

import array

import numpy as np
import pytest
from unilab_perception.joint_obs import (
    batched_joint_names, build_observation, JointLayoutError, JointStateIndex)

JOINTS = ['a', 'b', 'c']


def _f64(values):
    return array.array('d', [float(v) for v in values])


def test_batched_names_are_env_major():
    assert batched_joint_names(['a', 'b'], 2) == ['env0/a', 'env0/b', 'env1/a', 'env1/b']


def test_gather_reorders_shuffled_names():
    names = batched_joint_names(JOINTS, 2)
    # value = 10 * env + joint, so a wrong index shows in the number
    value = {f'env{i}/{j}': 10.0 * i + k for i in range(2) for k, j in enumerate(JOINTS)}
    rng = np.random.default_rng(3)
    shuffled = [names[i] for i in rng.permutation(len(names))]
    assert shuffled != names
    index = JointStateIndex(JOINTS, 2)
    out = index.gather(shuffled, _f64(value[n] for n in shuffled), 'position')
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [[0, 1, 2], [10, 11, 12]])


def test_gather_ignores_extra_joints():
    names = ['env0/gripper'] + batched_joint_names(JOINTS, 1)
    index = JointStateIndex(JOINTS, 1)
    out = index.gather(names, _f64([99, 1, 2, 3]), 'position')
    np.testing.assert_array_equal(out, [[1, 2, 3]])


def test_index_is_cached_per_name_list():
    names = batched_joint_names(JOINTS, 1)
    index = JointStateIndex(JOINTS, 1)
    first = index.index_for(names)
    assert index.index_for(list(names)) is first
    other = index.index_for(list(reversed(names)))
    np.testing.assert_array_equal(other, [2, 1, 0])


def test_missing_joint_raises_naming_it():
    names = [n for n in batched_joint_names(JOINTS, 2) if n != 'env1/b']
    index = JointStateIndex(JOINTS, 2)
    with pytest.raises(JointLayoutError, match='env1/b'):
        index.gather(names, _f64(range(len(names))), 'position')


def test_value_count_mismatch_raises():
    names = batched_joint_names(JOINTS, 1)
    index = JointStateIndex(JOINTS, 1)
    with pytest.raises(JointLayoutError, match='velocity'):
        index.gather(names, _f64([1, 2]), 'velocity')
    with pytest.raises(JointLayoutError):
        index.gather(names, _f64([]), 'velocity')


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
def test_non_finite_raises(bad):
    names = batched_joint_names(JOINTS, 1)
    index = JointStateIndex(JOINTS, 1)
    with pytest.raises(JointLayoutError, match='NaN, Inf'):
        index.gather(names, _f64([0.0, bad, 1.0]), 'position')


def test_non_finite_in_an_unused_joint_is_ignored():
    names = ['env0/unused'] + batched_joint_names(JOINTS, 1)
    index = JointStateIndex(JOINTS, 1)
    out = index.gather(names, _f64([np.nan, 1, 2, 3]), 'position')
    np.testing.assert_array_equal(out, [[1, 2, 3]])


def test_build_observation_concatenates_q_qd_extras():
    q = np.arange(6, dtype=np.float32).reshape(2, 3)
    qd = -q
    extras = np.array([[7, 8], [9, 10]], dtype=np.float32)
    out = build_observation(q, qd, extras, True)
    assert out.shape == (2, 8) and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.concatenate([q, qd, extras], axis=1))


def test_build_observation_reuses_out_buffer():
    q = np.ones((2, 3), np.float32)
    extras = np.zeros((2, 1), np.float32)
    buf = np.empty((2, 7), np.float32)
    out = build_observation(q, 2 * q, extras, True, buf)
    assert out is buf
    # a buffer of the wrong shape is replaced, not written out of bounds
    other = build_observation(q, 2 * q, extras, True, np.empty((2, 3), np.float32))
    assert other.shape == (2, 7)
    np.testing.assert_array_equal(other, out)


def test_build_observation_extras_only():
    extras = np.array([[1, 2]], dtype=np.float32)
    out = build_observation(None, None, extras, False)
    np.testing.assert_array_equal(out, extras)
    assert out is not extras
