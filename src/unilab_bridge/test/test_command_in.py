# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Controller command input without ROS: validation, joint order, trajectory sampling."""

import numpy as np
import pytest
from unilab_bridge.command_in import CommandInput, CommandRefused, Hold, Trajectory

POLICY = ['a', 'b', 'c']
CONTROLLER = ['c', 'a', 'b']  # the controller's `joints` parameter, in its own order


def test_forward_command_is_reordered_from_the_controller_order():
    ci = CommandInput(POLICY, CONTROLLER)
    target = ci.forward([3.0, 1.0, 2.0])  # c=3, a=1, b=2
    assert isinstance(target, Hold)
    np.testing.assert_array_equal(target.at(0.0), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(target.at(99.0), [1.0, 2.0, 3.0])  # held


@pytest.mark.parametrize('data, kind', [([1.0, 2.0], 'length'), ([1.0, 2.0, 3.0, 4.0], 'length'),
                                        ([1.0, float('nan'), 0.0], 'non_finite'),
                                        ([float('inf'), 0.0, 0.0], 'non_finite')])
def test_bad_forward_commands_are_refused_by_kind(data, kind):
    with pytest.raises(CommandRefused) as err:
        CommandInput(POLICY, CONTROLLER).forward(data)
    assert err.value.kind == kind


def test_controller_joints_must_be_the_robot_joints():
    with pytest.raises(ValueError, match='controller joints'):
        CommandInput(POLICY, ['a', 'b', 'x'])


def test_one_point_trajectory_is_reached_at_time_from_start():
    ci = CommandInput(POLICY)
    # Message order b, c, a; start at t=10 from [0, 0, 0]; reach [1, 2, 3] at t=10.5.
    traj = ci.trajectory(['b', 'c', 'a'], [0.5], [[2.0, 3.0, 1.0]], 10.0, [0.0, 0.0, 0.0])
    assert isinstance(traj, Trajectory) and traj.end == 10.5
    np.testing.assert_allclose(traj.at(9.0), [0, 0, 0])  # before the start: hold
    np.testing.assert_allclose(traj.at(10.25), [0.5, 1.0, 1.5])  # half way, linear
    np.testing.assert_allclose(traj.at(10.5), [1, 2, 3])
    np.testing.assert_allclose(traj.at(12.0), [1, 2, 3])  # after the last point: hold it


def test_multi_point_trajectory_is_piecewise_linear():
    traj = CommandInput(['a']).trajectory(['a'], [1.0, 3.0], [[2.0], [0.0]], 0.0, [0.0])
    # knots (0, 0), (1, 2), (3, 0)
    for t, q in ((0.5, 1.0), (1.0, 2.0), (2.0, 1.0), (3.0, 0.0)):
        np.testing.assert_allclose(traj.at(t), [q])


@pytest.mark.parametrize('names, times, points, kind', [
    (['a', 'b', 'x'], [0.1], [[0, 0, 0]], 'joint_names'),
    (['a', 'b'], [0.1], [[0, 0]], 'joint_names'),
    (['a', 'a', 'b'], [0.1], [[0, 0, 0]], 'joint_names'),
    (['a', 'b', 'c'], [], [], 'no_points'),
    (['a', 'b', 'c'], [0.1], [[0, 0]], 'length'),
    (['a', 'b', 'c'], [0.1], [[0, float('nan'), 0]], 'non_finite'),
    (['a', 'b', 'c'], [0.2, 0.1], [[0, 0, 0], [1, 1, 1]], 'time'),
    (['a', 'b', 'c'], [-0.1], [[0, 0, 0]], 'time'),
])
def test_bad_trajectories_are_refused_by_kind(names, times, points, kind):
    with pytest.raises(CommandRefused) as err:
        CommandInput(POLICY).trajectory(names, times, points, 0.0, [0.0, 0.0, 0.0])
    assert err.value.kind == kind
