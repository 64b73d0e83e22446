# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The gymnasium adapter on Hopper-v5."""

import numpy as np
import pytest

from unilab_bridge.tasks import make_task, observation
from unilab_bridge.tasks.base import JOINT_LIMIT_KEYS


@pytest.fixture
def hopper():
    with make_task('Hopper-v5', 2, seed=5) as task:
        yield task


def test_hopper_attributes(hopper):
    assert hopper.joint_names == ['thigh_joint', 'leg_joint', 'foot_joint']
    assert hopper.action_dim == 3 and hopper.extras_dim == 11
    assert not hopper.uses_joint_state and hopper.obs_dim == 11
    assert hopper.command_interface == 'effort'
    assert hopper.control_dt == pytest.approx(0.008)
    assert hopper.max_episode_steps == 1000
    np.testing.assert_array_equal(hopper.action_low, -1.0)
    for limits in hopper.joint_limits.values():
        assert set(JOINT_LIMIT_KEYS) <= set(limits)
        assert limits['has_position_limits'] and not limits['has_velocity_limits']
        assert limits['has_effort_limits'] and limits['max_effort'] == 1.0


def test_hopper_steps_two_envs(hopper):
    state = hopper.reset()
    assert observation(state, hopper).shape == (2, 11)
    state = hopper.step(np.zeros((2, 3)))
    obs = observation(state, hopper)
    assert obs.shape == (2, 11) and obs.dtype == np.float32
    assert state.joint_position.shape == (2, 3) and state.joint_effort.shape == (2, 3)
    # Hopper's observation starts with qpos[1:], whose last three entries are the joints.
    np.testing.assert_allclose(obs[:, 2:5], state.joint_position, rtol=1e-5)
    assert np.all(state.reward > 0)  # the healthy bonus
    with pytest.raises(ValueError, match=r'\(2, 3\)'):
        hopper.step(np.zeros((3, 3)))


def test_hopper_deterministic_and_auto_resets():
    commands = np.random.default_rng(0).uniform(-1, 1, (60, 2, 3))
    finals = []
    for _ in range(2):
        with make_task('Hopper-v5', 2, seed=1, max_episode_steps=20) as task:
            task.reset()
            done_seen = 0
            for step, command in enumerate(commands, start=1):
                state = task.step(command)
                if state.done.any():
                    done_seen += 1
                    assert np.all(np.isfinite(state.episode_return[state.done]))
                    assert np.all(state.episode_length[state.done] <= 20)
                assert np.all(np.isnan(state.episode_return[~state.done]))
                if step == 20 and not state.terminated.any():
                    assert state.truncated.all()
            assert done_seen >= 2
            finals.append(state.extras)
    np.testing.assert_array_equal(finals[0], finals[1])
