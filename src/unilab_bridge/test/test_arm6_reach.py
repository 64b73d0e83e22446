# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Invariants of the arm6_reach task that can be checked by hand."""

import mujoco
import numpy as np
import pytest

from unilab_bridge.tasks import make_task, observation
from unilab_bridge.tasks.arm6_reach import ASSET
from unilab_bridge.tasks.base import JOINT_LIMIT_KEYS
from unilab_bridge.tasks.reach_expert import JacobianReachController

N = 4


@pytest.fixture
def task():
    with make_task('arm6_reach', N, seed=3) as t:
        yield t


def _rollout(task, seed, commands):
    states = [task.reset(seed)]
    for command in commands:
        states.append(task.step(command))
    return states


def test_attributes_are_consistent(task):
    assert task.action_dim == len(task.joint_names) == 6
    assert task.uses_joint_state and task.extras_dim == 9
    assert task.obs_dim == 2 * 6 + 9
    assert task.command_interface == 'position'
    assert task.control_dt == pytest.approx(0.02)
    assert task.max_episode_steps == 100
    assert task.action_low.shape == task.action_high.shape == (6,)
    assert np.all(task.action_low < 0) and np.all(task.action_high > 0)  # home = 0 is valid


def test_shapes_and_dtypes(task):
    task.reset(0)
    state = task.step(np.zeros((N, 6)))
    for field in ('joint_position', 'joint_velocity', 'joint_effort'):
        assert getattr(state, field).shape == (N, 6)
        assert getattr(state, field).dtype == np.float64
    assert state.extras.shape == (N, 9) and state.extras.dtype == np.float32
    assert state.reward.shape == (N,) and state.reward.dtype == np.float32
    assert state.terminated.dtype == bool and state.truncated.dtype == bool
    assert state.episode_return.dtype == np.float32
    assert state.episode_length.dtype == np.int32
    assert state.sim_time == pytest.approx(task.control_dt)
    obs = observation(state, task)
    assert obs.shape == (N, task.obs_dim) and obs.dtype == np.float32
    np.testing.assert_allclose(obs[:, :6], state.joint_position, rtol=1e-6)
    np.testing.assert_array_equal(obs[:, 12:], state.extras)


def test_extras_are_ee_target_and_difference(task):
    state = task.reset(0)
    ee, target, diff = state.extras[:, :3], state.extras[:, 3:6], state.extras[:, 6:]
    np.testing.assert_allclose(diff, target - ee, atol=1e-6)
    assert np.all(target[:, 2] > 0.1)  # targets float above the floor


def test_deterministic_given_seed():
    rng = np.random.default_rng(0)
    commands = rng.uniform(-0.5, 0.5, (30, N, 6))
    with make_task('arm6_reach', N) as a, make_task('arm6_reach', N, seed=99) as b:
        for sa, sb in zip(_rollout(a, 7, commands), _rollout(b, 7, commands)):
            np.testing.assert_array_equal(sa.joint_position, sb.joint_position)
            np.testing.assert_array_equal(sa.extras, sb.extras)
            np.testing.assert_array_equal(sa.reward, sb.reward)


def test_thread_count_does_not_change_results():
    commands = np.random.default_rng(1).uniform(-0.5, 0.5, (10, 32, 6))
    with make_task('arm6_reach', 32, num_threads=1) as a, \
            make_task('arm6_reach', 32, num_threads=2) as b:
        sa, sb = _rollout(a, 0, commands)[-1], _rollout(b, 0, commands)[-1]
    np.testing.assert_array_equal(sa.joint_position, sb.joint_position)


def test_truncation_and_auto_reset():
    with make_task('arm6_reach', N, max_episode_steps=5) as task:
        task.reset(0)
        command = np.full((N, 6), 0.4)  # drive the arm well away from home
        total = np.zeros(N)
        for step in range(1, 6):
            state = task.step(command)
            total += state.reward
            assert not state.terminated.any()
            if step < 5:
                assert not state.truncated.any()
                assert np.all(np.isnan(state.episode_return))
                assert np.all(state.episode_length == 0)
        assert state.truncated.all()
        np.testing.assert_array_equal(state.episode_length, 5)
        np.testing.assert_allclose(state.episode_return, total, rtol=1e-5)
        # The observation is already the next episode's start: home plus small noise.
        assert np.all(np.abs(state.joint_position) <= task.reset_noise + 1e-9)
        assert np.all(state.joint_velocity == 0)
        assert state.sim_time == pytest.approx(5 * task.control_dt)
        state = task.step(command)
        assert not state.truncated.any()


def test_zero_command_holds_home(task):
    task.reset(0)
    for _ in range(50):
        state = task.step(np.zeros((N, 6)))
    # Only gravity sag against the position servos remains.
    assert np.all(np.abs(state.joint_position) < 0.05)
    assert np.all(np.abs(state.joint_velocity) < 0.05)


def test_wrong_command_shape_names_shapes(task):
    task.reset(0)
    with pytest.raises(ValueError, match=r'\(4, 6\).*\(4, 5\)'):
        task.step(np.zeros((N, 5)))
    with pytest.raises(ValueError):
        task.step(np.full((N, 6), np.nan))


def test_step_before_reset_raises():
    with make_task('arm6_reach', 1) as task, pytest.raises(RuntimeError):
        task.step(np.zeros((1, 6)))


def test_joint_limits_match_mjcf(task):
    model = mujoco.MjModel.from_xml_path(str(ASSET))
    assert set(task.joint_limits) == set(task.joint_names)
    for k, name in enumerate(task.joint_names):
        limits = task.joint_limits[name]
        assert set(JOINT_LIMIT_KEYS) <= set(limits)
        assert limits['has_position_limits'] and limits['has_velocity_limits']
        assert limits['has_effort_limits'] and limits['max_effort'] > 0
        lo, hi = model.joint(name).range
        assert (limits['min_position'], limits['max_position']) == (lo, hi)
        assert (task.action_low[k], task.action_high[k]) == pytest.approx((lo, hi))


def test_jacobian_controller_beats_zero_action():
    """The reward must clearly prefer reaching the target over holding still."""
    returns = {}
    with make_task('arm6_reach', 8) as task:
        controller = JacobianReachController(task.model)
        for name in ('zero', 'expert'):
            state = task.reset(11)
            for _ in range(task.max_episode_steps):
                if name == 'zero':
                    command = np.zeros((8, 6))
                else:
                    command = controller(state.joint_position, state.extras)
                state = task.step(command)
            assert state.truncated.all()
            returns[name] = float(np.mean(state.episode_return))
            # reward_terms hold the scaled terms of the last (pre-reset) transition.
            final_distance = task.reward_terms['distance'] / task.reward_scales['distance']
    assert returns['zero'] < -20.0
    assert returns['expert'] > 40.0
    assert np.all(final_distance < 0.05)
