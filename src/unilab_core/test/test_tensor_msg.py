# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""TensorBatch conversion: round trip, stamps, and malformed shapes."""

import array

import numpy as np
import pytest
from unilab_core.ros.tensor_msg import make_batch, read_batch, TensorMessageError


def test_round_trip_keeps_values_shapes_and_metadata():
    obs = np.arange(12, dtype=np.float32).reshape(3, 4)
    done = np.array([True, False, True])
    msg = make_batch('observation', 41, {'obs': obs, 'done': done}, version=7,
                     stamp_ns=3_500_000_123)
    batch = read_batch(msg)
    assert (batch.kind, batch.seq, batch.version, batch.stamp_ns) == (
        'observation', 41, 7, 3_500_000_123)
    np.testing.assert_array_equal(batch.tensors['obs'], obs)
    np.testing.assert_array_equal(batch.tensors['done'], [1.0, 0.0, 1.0])
    assert batch.tensors['obs'].dtype == np.float32


def test_read_is_a_view_of_the_message_buffer():
    msg = make_batch('x', 0, {'a': np.ones(4, np.float32)})
    batch = read_batch(msg)
    msg.tensors[0].data[0] = 5.0
    assert batch.tensors['a'][0] == 5.0


def test_shape_mismatch_is_reported_with_tensor_name():
    msg = make_batch('action', 3, {'action': np.zeros((2, 3), np.float32)})
    msg.tensors[0].shape = array.array('I', [2, 4])
    with pytest.raises(TensorMessageError, match='tensor `action` of `action`'):
        read_batch(msg)


def test_empty_tensor():
    batch = read_batch(make_batch('e', 0, {'z': np.zeros((0, 3), np.float32)}))
    assert batch.tensors['z'].shape == (0, 3)
