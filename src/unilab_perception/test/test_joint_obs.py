# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The observation's joint fields and build_observation without ROS."""

import array

import numpy as np
import pytest
from unilab_core.joint_names import batched_joint_names, JointLayoutError, JointStateIndex
from unilab_perception.joint_obs import build_observation, joint_field

JOINTS = ['a', 'b', 'c']


def _f64(values):
    return array.array('d', [float(v) for v in values])


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
def test_non_finite_raises(bad):
    names = batched_joint_names(JOINTS, 1)
    index = JointStateIndex(JOINTS, 1)
    with pytest.raises(JointLayoutError, match='NaN or Inf'):
        joint_field(index, names, _f64([0.0, bad, 1.0]), 'position')


def test_float64_values_beyond_float32_are_refused():
    # Finite in the message's float64, Inf in the policy's float32.
    index = JointStateIndex(JOINTS, 1)
    with pytest.raises(JointLayoutError, match='float32'):
        joint_field(index, batched_joint_names(JOINTS, 1), _f64([0.0, 1e39, 1.0]), 'position')


def test_non_finite_in_an_unused_joint_is_ignored():
    names = ['env0/unused'] + batched_joint_names(JOINTS, 1)
    index = JointStateIndex(JOINTS, 1)
    out = joint_field(index, names, _f64([np.nan, 1, 2, 3]), 'position')
    assert out.dtype == np.float32
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
