# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``/joint_states`` as a tensor topic: arrays between UniLab nodes, JointState for the rest.

rclpy has no intra-process path: a ``JointState`` of 64 environments x 6
joints between two nodes of one process costs serialising 384 names and
three float64 arrays into DDS and back, every control step. The bridge
therefore publishes its joint states through a ``TensorPublisher``: UniLab
subscribers (perception, in the same process or through the transport)
get ``[N, J]`` float64 arrays in the order of ``batched_joint_names``, tagged
with a key of those names (``names_key``) so a reader built for other joints
refuses them; a plain ROS reader (a bag recorder, ``ros2 topic echo``, a
node that is not UniLab-aware) gets the standard ``JointState``, built only
while such a reader exists (``joint_state_msg``). In the other direction a
real robot driver's ``JointState`` reaches a ``TensorSubscription`` through
its standard path and the subscriber's ``from_standard`` converter;
``JointStateInput`` is that converter and the check of the arrays, for every
node that reads joint states (perception, safety).
"""

from __future__ import annotations

import array
import hashlib
from typing import Callable

from builtin_interfaces.msg import Time
import numpy as np
from sensor_msgs.msg import JointState
from unilab_core.joint_names import batched_joint_names, JointLayoutError, JointStateIndex
from unilab_core.ros.tensor_msg import Batch, TensorMessageError

KIND = 'joint_state'
FIELDS = ('position', 'velocity', 'effort')


def names_key(names: list[str]) -> np.ndarray:
    """Return the int64[1] key of a joint name list (64-bit BLAKE2b of the names)."""
    digest = hashlib.blake2b('\n'.join(names).encode(), digest_size=8).digest()
    return np.frombuffer(digest, np.int64).copy()


def joint_state_capacity(num_envs: int, n_joints: int) -> int:
    """Return the ring-slot bytes of one joint-state message (three float64 ``[N, J]``)."""
    from unilab_core.ros.tensor_topic import batch_capacity
    return batch_capacity({f: (num_envs, n_joints) for f in FIELDS}, itemsize=8)


def joint_state_tensors(key: np.ndarray, position, velocity, effort) -> dict[str, np.ndarray]:
    """Return the tensors of one joint-state message (fresh float64 ``[N, J]`` arrays)."""
    return {'position': np.array(position, dtype=np.float64),
            'velocity': np.array(velocity, dtype=np.float64),
            'effort': np.array(effort, dtype=np.float64), 'names_key': key}


def f64_array(a: np.ndarray) -> array.array:
    """Return ``a`` as an array('d'): rclpy takes it for a float64[] field without a check."""
    out = array.array('d')
    out.frombytes(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return out


def joint_state_msg(names: list[str]) -> Callable[[Batch], JointState]:
    """Return the ``to_standard`` converter of a publisher whose joints are ``names``."""
    def convert(batch: Batch) -> JointState:
        msg = JointState()
        msg.header.stamp = Time(sec=batch.stamp_ns // 1_000_000_000,
                                nanosec=batch.stamp_ns % 1_000_000_000)
        msg.name = names
        for field in FIELDS:
            setattr(msg, field, f64_array(batch.tensors[field].reshape(-1)))
        return msg
    return convert


def stamp_ns(msg: JointState) -> int:
    """Return a JointState's header stamp in nanoseconds."""
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


class JointStateInput:
    """Turn either form of ``/joint_states`` into ``[N, J]`` float64 fields of our joints."""

    def __init__(self, joint_names: list[str], num_envs: int):
        self.index = JointStateIndex(joint_names, num_envs)
        self.key = names_key(batched_joint_names(joint_names, num_envs))

    def from_standard(self, msg: JointState) -> Batch:
        """Map a plain JointState by name (``TensorSubscription(from_standard=...)``)."""
        try:
            tensors = {'position': self.index.gather(msg.name, msg.position, 'position'),
                       'names_key': self.key}
            if len(msg.velocity):
                tensors['velocity'] = self.index.gather(msg.name, msg.velocity, 'velocity')
        except JointLayoutError as exc:
            raise TensorMessageError(str(exc)) from None
        return Batch(KIND, 0, 0, stamp_ns(msg), tensors)

    def fields(self, batch: Batch) -> dict[str, np.ndarray]:
        """
        Return ``{position, velocity}`` (those present) as ``[N, J]`` float64 copies.

        Raises JointLayoutError when the arrays were made for other joint names
        (``names_key``) or have another shape. Copies: a view from another
        process is valid only during the callback.
        """
        key = batch.tensors.get('names_key')
        if key is None or not np.array_equal(key, self.key):
            raise JointLayoutError('joint-state arrays for other joint names than this '
                                   'node\'s (names_key differs)')
        out = {}
        for f in ('position', 'velocity'):
            if f in batch.tensors:
                a = batch.tensors[f]
                if a.size != self.index.shape[0] * self.index.shape[1]:
                    raise JointLayoutError(f'joint-state `{f}` has {a.size} values, expected '
                                           f'{self.index.shape}')
                out[f] = np.array(a, dtype=np.float64).reshape(self.index.shape)
        return out
