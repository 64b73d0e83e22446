# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Task lookup by name."""

import numpy as np
import pytest

from unilab_bridge.tasks import (
    available_tasks, DEFAULT_TASK, make_task, observation, StepState, UnknownTaskError)


def test_default_task_is_available():
    assert DEFAULT_TASK == 'arm6_reach'
    assert DEFAULT_TASK in available_tasks()


def test_unknown_task_lists_names():
    with pytest.raises(UnknownTaskError) as info:
        make_task('no_such_task', 1)
    message = str(info.value)
    assert 'no_such_task' in message and 'arm6_reach' in message and 'Hopper-v5' in message
    assert isinstance(info.value, ValueError)


def test_non_mujoco_gym_ids_are_rejected():
    with pytest.raises(UnknownTaskError):
        make_task('CartPole-v1', 1)


class _Spec:
    uses_joint_state = True


def _state(n, j, e):
    return StepState(
        joint_position=np.ones((n, j)), joint_velocity=2 * np.ones((n, j)),
        joint_effort=np.zeros((n, j)), extras=3 * np.ones((n, e), dtype=np.float32),
        reward=np.zeros(n, np.float32), terminated=np.zeros(n, bool),
        truncated=np.zeros(n, bool), episode_return=np.full(n, np.nan, np.float32),
        episode_length=np.zeros(n, np.int32), sim_time=0.0)


def test_observation_rule():
    spec = _Spec()
    obs = observation(_state(2, 3, 4), spec)
    assert obs.shape == (2, 10) and obs.dtype == np.float32
    np.testing.assert_array_equal(obs[0], [1, 1, 1, 2, 2, 2, 3, 3, 3, 3])
    spec.uses_joint_state = False
    np.testing.assert_array_equal(observation(_state(2, 3, 4), spec), 3 * np.ones((2, 4)))
