# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Operator scenarios without ROS: goal sequencing, success, time-outs, summaries."""

import numpy as np
import pytest
from unilab_bridge.scenario import (ReachScenario, sample_reach_goals, sample_walk_goals,
                                    WalkScenario)


def _tool(q):
    """Return the tool position of a scripted 'robot': its first three joint values."""
    return np.asarray(q[:3], float)


def test_reach_goals_succeed_within_tolerance_and_follow_each_other():
    goals = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])  # one robot, two goals
    sc = ReachScenario(goals, _tool, timeout_s=2.0, tolerance_m=0.05)
    assert [(k, g.tolist()) for k, g in sc.begin(0.0)] == [(0, [1.0, 0.0, 0.0])]
    assert sc.on_joints(0, 0.5, [0.9, 0.0, 0.0]) == []  # 10 cm away
    nxt = sc.on_joints(0, 0.8, [0.97, 0.0, 0.0, 0.0])  # 3 cm away: success, next goal
    assert [(k, g.tolist()) for k, g in nxt] == [(0, [0.0, 1.0, 0.0])]
    assert sc.results[0] == {'robot': 0, 'goal': 0, 'target': [1.0, 0.0, 0.0],
                             'success': True, 'elapsed_s': 0.8, 'time_to_reach_s': 0.8,
                             'final_distance_m': 0.03, 'min_distance_m': 0.03}
    # The second goal is never reached: it times out 2 s after it was given (at 0.8).
    assert sc.on_joints(0, 1.0, [0.97, 0.0, 0.0]) == []
    assert sc.on_time(2.7) == [] and not sc.done
    assert sc.on_time(2.9) == [] and sc.done
    last = sc.results[1]
    assert not last['success'] and last['time_to_reach_s'] is None
    assert last['final_distance_m'] == pytest.approx(np.sqrt(0.97 ** 2 + 1), abs=1e-4)
    s = sc.summary()
    assert s['goals_scored'] == 2 and s['successes'] == 1 and s['success_fraction'] == 0.5
    assert s['mean_time_to_reach_s'] == 0.8
    assert sc.on_joints(0, 3.0, [0.0, 1.0, 0.0]) == []  # finished robots are not scored


def test_a_late_arrival_is_a_time_out_and_robots_are_scored_independently():
    goals = np.zeros((2, 1, 3))
    sc = ReachScenario(goals, _tool, timeout_s=1.0)
    sc.begin(0.0)
    assert sc.on_joints(1, 0.5, [0.0, 0.0, 0.01]) == []  # robot 1 done
    assert sc.results[0]['robot'] == 1 and sc.results[0]['success']
    sc.on_joints(0, 1.5, [0.0, 0.0, 0.0])  # at the goal, but after the time-out
    assert not sc.results[1]['success'] and sc.done
    assert sc.summary()['success_fraction_per_robot'] == {'0': 0.0, '1': 1.0}


def test_walk_goal_scores_speed_tracking_over_its_second_half_and_falls():
    goals = np.array([[0.5, 0.4]])
    sc = WalkScenario(goals, timeout_s=2.0, speed_tolerance_mps=0.1, fall_height_m=0.14)
    sc.begin(0.0)
    sc.on_odometry(0, 0.5, 0.0, 0.3)  # first half: accelerating, not scored
    sc.on_odometry(0, 1.2, 0.45, 0.3)
    nxt = sc.on_odometry(0, 2.0, 0.55, 0.3)
    assert len(nxt) == 1 and nxt[0][1] == 0.4
    assert sc.results[0]['success'] and sc.results[0]['mean_speed_error_mps'] == 0.05
    sc.on_odometry(0, 3.5, 0.4, 0.10)  # fell (trunk below 0.14 m)
    sc.on_time(4.0)
    assert not sc.results[1]['success'] and sc.results[1]['fallen'] and sc.done


def test_goals_come_from_the_task_sampler_and_are_reproducible():
    a = sample_reach_goals('arm6_reach', 2, 3, seed=5)
    assert a.shape == (2, 3, 3)
    np.testing.assert_array_equal(a, sample_reach_goals('arm6_reach', 2, 3, seed=5))
    assert not np.allclose(a, sample_reach_goals('arm6_reach', 2, 3, seed=6))
    assert (a[..., 2] >= 0.15).all()  # the sampler keeps targets off the floor
    v = sample_walk_goals('quad_walk', 1, 4, seed=0)
    assert v.shape == (1, 4) and ((v >= 0.0) & (v <= 0.8)).all()
    with pytest.raises(ValueError, match='sample_targets'):
        sample_reach_goals('quad_walk', 1, 1, seed=0)
