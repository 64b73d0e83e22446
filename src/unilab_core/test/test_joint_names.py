# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""JointStateIndex: batched simulator names and a robot's own names, one rule."""

import array

import numpy as np
import pytest
from unilab_core.joint_names import (batched_joint_names, env_joints, env_of, JointLayoutError,
                                     JointStateIndex)

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
    assert out.dtype == np.float64
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


def test_a_single_robot_uses_its_plain_joint_names_in_any_order():
    # joint_state_broadcaster: the robot's own names, in no promised order, plus others.
    index = JointStateIndex(['shoulder', 'elbow'], 1)
    out = index.gather(['gripper', 'elbow', 'shoulder'], [9.0, 2.0, 1.0])
    np.testing.assert_array_equal(out, [[1.0, 2.0]])
    with pytest.raises(JointLayoutError, match="'elbow'"):
        index.gather(['shoulder'], [1.0])


def test_batched_envs_do_not_accept_plain_names():
    index = JointStateIndex(['a'], 2)
    with pytest.raises(JointLayoutError, match='env0/a'):
        index.gather(['a'], [1.0])


def test_gather_into_a_buffer_of_the_caller():
    index = JointStateIndex(['a', 'b'], 2)
    out = np.zeros((2, 2))
    got = index.gather(['env1/b', 'env0/a', 'env1/a', 'env0/b'], [4.0, 1.0, 3.0, 2.0], out=out)
    assert got is out
    np.testing.assert_array_equal(out, [[1.0, 2.0], [3.0, 4.0]])


def test_env_of_reads_the_prefix():
    assert env_of('env12/imu') == 12 and env_of('/env3/lidar') == 3
    assert env_of('base_link') is None


def test_env_joints_takes_one_env_of_a_batch_under_plain_names():
    names = batched_joint_names(['a', 'b'], 12)
    values = list(range(len(names)))
    assert env_joints(names, values, 0) == (['a', 'b'], [0, 1])
    # env1 is not env10 or env11: the whole number counts.
    assert env_joints(names, values, 1) == (['a', 'b'], [2, 3])
    assert env_joints(names, values, 11) == (['a', 'b'], [22, 23])
    assert env_joints(names, values, 12) == ([], [])
    # A robot's own JointState (no env prefix) comes back as it is.
    assert env_joints(['b', 'a'], [1.0, 2.0], 3) == (['b', 'a'], [1.0, 2.0])
