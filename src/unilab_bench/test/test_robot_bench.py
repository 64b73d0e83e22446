# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench robot``: its figures by hand, and its core on the UR5e double with a tiny policy."""

import numpy as np
import pytest
from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()


def _figures(envelope=None, speed_window=1):
    from unilab_bench.robot import RobotFigures
    # Two "links": the origin at height q[0] and a fixed point; the tool at (q[1], 0, 0).
    return RobotFigures(lambda q: np.array([[0.0, 0.0, q[0]], [0.0, 0.0, 1.0]]),
                        lambda q: np.array([q[1], 0.0, 0.0]), dt=0.02, envelope=envelope,
                        speed_window=speed_window)


def test_figures_by_hand():
    f = _figures(envelope=(np.array([-1.0, -1.0]), np.array([1.0, 1.0])))
    f.on_joint_state(0.00, [0.5, 0.00])
    f.on_joint_state(0.01, [0.5, 0.00])   # half a control period: no speed sample yet
    f.on_joint_state(0.02, [-0.1, 0.01])  # 1 cm in 0.02 s: 0.5 m/s; below from here ...
    f.on_command([0.4, 0.01])             # tracking error max(|0.5|, 0) = 0.5
    f.on_joint_state(0.05, [0.2, 0.04])   # ... to here (0.03 s); 3 cm in 0.03 s: 1 m/s
    f.on_command([0.2, 1.5])              # outside the envelope; error 1.46
    out = f.figures()
    assert out['below_mount_s'] == pytest.approx(0.03)
    assert out['tool_speed_p50_mps'] == pytest.approx(0.75)
    assert f.speeds == pytest.approx([0.5, 1.0])
    assert f.tracking == pytest.approx([0.5, 1.46])
    # Commanded tool x from 0.01 to 1.5 between the two commands, one period (0.02 s).
    assert f.command_speeds == pytest.approx([1.49 / 0.02])
    assert out['commands_seen'] == 2
    assert out['commands_out_of_trained_range'] == 1


def test_tool_speed_of_a_double_that_steps_at_the_control_rate():
    # The tool moves 1 cm per 20 ms physics step (0.5 m/s); the states come about every
    # 2 ms, late by up to 1.5 ms (a loaded machine), each holding the last step's position.
    # A one-period window by stamp that starts just before a step and ends just after the
    # next-but-one holds two steps: about 1 m/s. Five-period windows stay near 0.5 m/s.
    from unilab_bench.robot import SPEED_WINDOW_PERIODS
    rng = np.random.default_rng(0)
    one, five = _figures(), _figures(speed_window=SPEED_WINDOW_PERIODS)
    for k in range(2000):
        t = 0.002 * k + 0.0015 * rng.random()
        x = 0.01 * np.floor(t / 0.02)
        one.on_joint_state(t, [1.0, x])
        five.on_joint_state(t, [1.0, x])
    assert max(one.speeds) > 0.9
    assert SPEED_WINDOW_PERIODS == 5
    assert 0.5 * 0.75 <= min(five.speeds) and max(five.speeds) <= 0.5 * 1.25


def test_outside_goals_are_all_outside_the_workspace_and_distinct():
    from unilab_bench.robot import outside_goals
    low, high = np.array([0.25, -0.4, 0.1]), np.array([0.65, 0.4, 0.5])
    goals = outside_goals((low, high), 14)
    assert not np.any(np.all((goals >= low) & (goals <= high), axis=1))
    assert len({tuple(g) for g in goals}) == 13  # the far ones (k >= 12) share one place


def test_the_goal_sequence_spreads_the_outside_goals_among_the_others():
    from unilab_bench.robot import goal_sequence
    seq = goal_sequence('ur5e_reach', 20, 4, seed=3)
    kinds = [k for k, _ in seq]
    assert kinds.count('inside') == 20 and kinds.count('outside') == 4
    assert [i for i, k in enumerate(kinds) if k == 'outside'] == [5, 11, 17, 23]


@pytest.mark.system
def test_the_core_deploys_a_tiny_policy_on_the_double_and_refuses_the_outside_goal(tmp_path):
    from unilab_bench.learn_runs import train_graph
    from unilab_bench.robot import run_goals
    run = tmp_path / 'run'
    train_graph({'run.task': 'ur5e_reach', 'run.total_steps': 2048, 'rollout.num_envs': 4,
                 'logging.tensorboard': False}, run)
    out = run_goals(str(run), 'ur5e', goals=2, out_goals=1, tmp=tmp_path, timeout_s=1.0)
    assert out['goals'] == 2 and len(out['per_goal']) == 3
    assert [r['kind'] for r in out['per_goal']] == ['inside', 'inside', 'outside']
    # The goal outside the workspace is refused by the deploy, and only it.
    assert out['goals_refused'] == 1
    assert out['goals_refused_by_rule'].get('goals_refused_workspace') == 1
    assert out['commands_seen'] > 0 and out['gate']['commands'] > 0
    # The gate keeps commands inside the trained envelope, whatever the policy asks.
    assert out['commands_out_of_trained_range'] == 0
    assert 0.0 <= out['success'] <= 1.0 and out['below_mount_s'] >= 0.0
    assert 0.0 <= out['clamp_share'] <= 1.0


def test_bench_robot_is_registered():
    from unilab_bench.registry import BENCHMARKS
    from unilab_bench.robot import bench_robot
    assert BENCHMARKS['robot'] is bench_robot
