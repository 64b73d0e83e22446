# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The robot double's physics without ROS: held commands, no resets, fleets, variants, clocks."""

import pathlib

import numpy as np
import pytest
from unilab_bridge.command_in import CommandInput
from unilab_bridge.robot_double import Every, RobotDouble, ScaledClock
from unilab_bridge.tasks import make_task
from unilab_core.config import ConfigError
from unilab_core.robot_profile import load_profile

ROBOTS = pathlib.Path(__file__).resolve().parents[2] / 'unilab_bringup' / 'config' / 'robots'


def profile(name):
    return load_profile(ROBOTS / f'{name}.yaml')


@pytest.mark.parametrize('task', ['arm6_reach', 'quad_walk', 'quad12_walk'])
def test_no_reset_mode_never_ends_an_episode(task):
    with make_task(task, 2, seed=0, auto_reset=False) as t:
        t.reset(seed=0)
        steps = t.max_episode_steps + 20  # past the time limit of training episodes
        for _ in range(steps):
            # An absurd command makes the quadruped fall: it stays down, no episode ends.
            s = t.step(np.tile(t.action_low, (2, 1)))
            assert not s.terminated.any() and not s.truncated.any()
        assert np.isnan(s.episode_return).all()


def test_drives_hold_the_start_pose_before_any_command():
    d = RobotDouble(profile('arm6'), robots=2, seed=3)
    try:
        start = d.state.joint_position.copy()
        np.testing.assert_allclose(d.command, start)  # the reset's command is the pose
        assert d.advance_to(1.0) == 50  # 50 Hz control
        assert d.sim_time == pytest.approx(1.0)
        # Position servos under gravity: the pose sags by millimetres, not more.
        assert np.abs(d.state.joint_position - start).max() < 0.05
    finally:
        d.close()


def test_a_robot_follows_its_own_command_only_and_never_teleports():
    p = profile('arm6')
    d = RobotDouble(p, robots=2, seed=0)
    try:
        other = d.state.joint_position[1].copy()
        goal = np.array([0.6, 0.3, -0.4, 0.2, 0.1, -0.3])
        d.set_target(0, CommandInput(p.joint_names).forward(goal))
        prev = d.state.joint_position.copy()
        for _ in range(400):  # 8 s, four training episodes long
            d.step()
            # Joint speed limit 3.14 rad/s: at most ~0.07 rad per 20 ms step, no jumps.
            assert np.abs(d.state.joint_position - prev).max() < 0.1
            prev = d.state.joint_position.copy()
        np.testing.assert_allclose(d.state.joint_position[0], goal, atol=0.03)
        assert np.abs(d.state.joint_position[1] - other).max() < 0.05
    finally:
        d.close()


def test_trajectory_target_reaches_its_point_at_time_from_start():
    p = profile('ur5e')
    d = RobotDouble(p, robots=1, seed=0)
    try:
        goal = np.array([0.3, -0.2, 0.4, 0.0, 0.2, 0.1])
        traj = CommandInput(p.joint_names, p.controller_joints).trajectory(
            p.joint_names, [1.0], [goal], d.sim_time, d.setpoint(0))
        d.set_target(0, traj)
        d.advance_to(0.5)
        np.testing.assert_allclose(d.command[0], 0.5 * (traj.q[0] + goal), atol=1e-9)
        d.advance_to(3.0)
        np.testing.assert_allclose(d.command[0], goal)
        np.testing.assert_allclose(d.state.joint_position[0], goal, atol=0.03)
    finally:
        d.close()


def test_real_variant_applies_the_held_out_disturbances():
    d = RobotDouble(profile('quad8'), robots=1, seed=0, variant='real', imu=True)
    try:
        terms = d.task.active_terms
        assert {'imu', 'action_delay', 'action_loss', 'model'} <= set(terms)
        params = d.task.current_params(0)
        assert 1 <= params['action_delay_steps'] <= 3
        d.advance_to(0.2)
        reading = d.imu_reading()
        assert reading['gyro'].shape == (1, 3) and reading['quat'].shape == (1, 4)
        base = d.base_state()
        assert d.base_link == 'trunk' and base['pos'].shape == (1, 3)
        assert 0.2 < base['pos'][0, 2] < 0.45  # standing on its legs
    finally:
        d.close()


def test_profile_and_task_must_agree():
    p = profile('arm6')
    with pytest.raises(ConfigError, match='variant'):
        RobotDouble(p, variant='moon')
    with pytest.raises(ConfigError, match='no no-reset mode'):
        RobotDouble(p.model_copy(update={'task': 'Hopper-v5'}))
    with pytest.raises(ConfigError, match='joint_names'):
        RobotDouble(p.model_copy(update={'joint_names': p.joint_names[:5]}))


def test_scaled_clock_runs_scale_times_faster_and_slips_instead_of_bursting():
    clock = ScaledClock(scale=4.0, max_lag=0.1, start=10.0)
    assert clock.target(10.5, sim_time=2.0) == pytest.approx(2.0)
    # The physics is 1.9 s behind (the machine stalled): step to 0.1 s ahead only.
    assert clock.target(11.0, sim_time=2.1) == pytest.approx(2.2)
    assert clock.slipped == pytest.approx(1.8)
    assert clock.target(11.25, sim_time=3.15) == pytest.approx(3.2)  # on pace again


def test_every_keeps_its_rate_on_a_jittery_tick_and_does_not_burst_after_a_stall():
    every = Every(0.004)  # a 250 Hz broadcaster
    ticks = np.arange(0.0, 1.0, 0.002) + np.random.default_rng(0).uniform(0, 0.0015, 500)
    assert sum(every.due(t) for t in ticks) == 250
    every = Every(0.004)
    assert every.due(0.0) and every.due(1.0)  # a 1 s stall: one message,
    assert not every.due(1.001) and every.due(1.004)  # then the period again
