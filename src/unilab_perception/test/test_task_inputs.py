# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Task inputs on a robot give the same extras the simulator gives the policy."""

import numpy as np
import pytest
from unilab_bridge.tasks import make_task
from unilab_perception.task_inputs import (GOAL_REFUSALS, GoalRefused, MissingInput,
                                           ReachInputs, WalkInputs)


def _asset(name):
    import pathlib

    import unilab_bridge
    return str(pathlib.Path(unilab_bridge.__file__).parent / 'assets' / name)


def test_reach_extras_match_the_simulators():
    task = make_task('arm6_reach', 4, seed=3)
    try:
        state = task.reset(seed=3)
        state = task.step(np.asarray(state.joint_position) + 0.2)  # somewhere else
        inputs = ReachInputs(_asset('arm6.xml'), task.joint_names, 'ee_site')
        with pytest.raises(MissingInput, match='goal'):
            inputs.extras(state.joint_position[:1])
        for i in range(4):
            goal = state.extras[i, 3:6]  # the simulator's target for env i
            inputs.set_goal(goal)
            got = inputs.extras(state.joint_position[i:i + 1])
            assert got.shape == (1, 9) and got.dtype == np.float32
            np.testing.assert_allclose(got[0], state.extras[i], atol=1e-5)
    finally:
        task.close()


def test_reach_refuses_goals_that_are_not_finite_in_float32():
    inputs = ReachInputs(_asset('arm6.xml'), ['shoulder_pan_joint', 'shoulder_lift_joint',
                                              'elbow_joint', 'wrist_1_joint', 'wrist_2_joint',
                                              'wrist_3_joint'], 'ee_site')
    for bad in ([np.nan, 0, 0], [1e39, 0, 0]):
        with pytest.raises(ValueError, match='goal'):
            inputs.set_goal(bad)
    assert inputs.goal is None


ARM = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
       'wrist_2_joint', 'wrist_3_joint']


@pytest.mark.parametrize('xyz, frame, kind', [
    ((5.0, 5.0, 5.0), 'base_link', 'workspace'),      # the far goal of the issue
    ((0.5, 0.0, 1.01), 'base_link', 'workspace'),     # just above the box (z max 1.0)
    ((-0.21, 0.0, 0.5), 'base_link', 'workspace'),    # just behind it (x min -0.2)
    ((0.5, 0.0, 0.5), 'world', 'frame'),              # another frame: not transformed
    ((0.5, 0.0, 0.5), '', 'frame'),                   # no frame at all
    ((np.inf, 0.0, 0.5), 'base_link', 'non_finite'),
])
def test_reach_refuses_goals_outside_the_workspace_or_frame(xyz, frame, kind):
    inputs = ReachInputs(_asset('arm6.xml'), ARM, 'ee_site', 'base_link',
                         (-0.2, -0.8, 0.1, 0.9, 0.8, 1.0))
    inputs.set_goal((0.5, 0.0, 0.5), 'base_link')
    with pytest.raises(GoalRefused) as info:
        inputs.set_goal(xyz, frame)
    assert info.value.kind == kind and kind in GOAL_REFUSALS
    # The policy keeps its last valid goal (and its episode).
    np.testing.assert_array_equal(inputs.goal, [0.5, 0.0, 0.5])
    assert inputs.episode == 1
    inputs.set_goal((0.9, 0.8, 1.0), 'base_link')  # on the box's corner: inside
    assert inputs.episode == 2


def test_the_arm6_workspace_holds_every_target_it_samples():
    task = make_task('arm6_reach', 1, seed=5)
    try:
        lo, hi = np.array(task.workspace.low), np.array(task.workspace.high)
        targets = task.sample_targets(500)
    finally:
        task.close()
    assert task.workspace.frame == 'base_link'
    assert np.all(targets >= lo) and np.all(targets <= hi)
    inputs = ReachInputs(_asset('arm6.xml'), ARM, 'ee_site', 'base_link',
                         task.workspace.box())
    for t in targets[:50]:
        inputs.set_goal(t, 'base_link')
    with pytest.raises(GoalRefused):
        inputs.set_goal((5.0, 5.0, 5.0), 'base_link')


def test_walk_extras_match_the_simulators():
    from unilab_bridge.tasks.quad_walk import quat_rotate_inverse
    task = make_task('quad_walk', 2, seed=1)
    try:
        state = task.reset(seed=1)
        for _ in range(5):
            state = task.step(np.asarray(state.joint_position))
        b = task._batch
        inputs = WalkInputs()
        with pytest.raises(MissingInput, match='imu'):
            inputs.extras(None)
        for i in range(2):
            w, x, y, z = b.root_quat[i]  # MuJoCo wxyz -> ROS xyzw
            inputs.set_imu([x, y, z, w], b.root_angvel[i])
            v_body = quat_rotate_inverse(b.root_quat[i:i + 1], b.root_linvel[i:i + 1])[0]
            inputs.set_odometry(v_body, b.root_pos[i, 2])
            inputs.set_command(*state.extras[i, 9:11])
            np.testing.assert_allclose(inputs.extras(None)[0], state.extras[i], atol=1e-5)
    finally:
        task.close()


def test_legged_extras_carry_a_state_estimate_for_the_critic_and_a_new_command_is_an_episode():
    from unilab_perception.task_inputs import LeggedInputs
    inputs = LeggedInputs(17)   # go2_walk: 9 actor extras, 8 critic-only columns
    inputs.set_imu([0.0, 0.0, 0.0, 1.0], [0.1, 0.2, 0.3])
    out = inputs.extras(None)[0]
    np.testing.assert_allclose(out[:6], [0.1, 0.2, 0.3, 0.0, 0.0, -1.0], atol=1e-7)
    assert out[9:].tolist() == [0.0] * 8     # no estimate: zeros, as before
    inputs.set_estimate([0.5, -0.1, 0.02], 0.31)
    out = inputs.extras(None)[0]
    np.testing.assert_allclose(out[9:13], [0.5, -0.1, 0.02, 0.31], atol=1e-6)
    assert out[13:].tolist() == [0.0] * 4    # foot contacts: not measured
    with pytest.raises(ValueError, match='state estimate'):
        inputs.set_estimate([np.nan, 0.0, 0.0], 0.3)
    with pytest.raises(ValueError, match='a state estimate needs 4'):
        LeggedInputs(9).set_estimate([0.0, 0.0, 0.0], 0.3)
    # Its age, by arrival: the robot side counts a step whose estimate is older than the
    # profile's estimate_timeout_s (a refused message leaves the last one's time).
    assert inputs.estimate_age_s(0) is None           # the estimate above came untimed
    inputs.set_estimate([0.5, 0.0, 0.0], 0.3, now_ns=1_000_000_000)
    assert inputs.estimate_age_s(1_050_000_000) == pytest.approx(0.05)
    with pytest.raises(ValueError):
        inputs.set_estimate([0.0, 0.0, np.inf], 0.3, now_ns=2_000_000_000)
    assert inputs.estimate_age_s(2_000_000_000) == pytest.approx(1.0)
    # A walk segment on a robot is one command held: a repeated command is the same one.
    episodes = []
    for cmd in ([0.5, 0, 0], [0.5, 0, 0], [0.5, 0, 0.0004], [0, 0.3, 0], [0, 0.3, 0]):
        inputs.set_command(*cmd)
        episodes.append(inputs.episode)
    assert episodes == [1, 1, 1, 2, 2]
