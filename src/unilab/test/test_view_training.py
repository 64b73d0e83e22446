# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab view`` beside ``unilab train`` (docs/view.md, "Beside a training run").

A tiny training run of arm6_reach (8 envs) and the view node in this process, on the
training graph's names (``--training``): the robot comes from the bridge's URDF on
``/unilab/sim/robot_description``, the joints shown are env 0's of the batched
``/unilab/sim/view/joint_states`` (``env<i>/<joint>``, the bridge's screen-rate copy of
``/unilab/sim/joint_states``) with env 0's goal and command ghost (the bridge's
``/unilab/sim/goal_pose`` and ``/unilab/sim/command``), and the Training folder's curves
take their points from the graph's statuses on ``/diagnostics``. The workspace box is
the trainer's, asked of the live graph, drawn around the robot's base.
"""

import time

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from test_deploy_system import Process
from unilab_bringup.prepare import task_info
from unilab_core import topics
from unilab_core.testing import isolate_ros_domain
from unilab_view.curves import CURVES
from unilab_view.workspace import box_geometry

isolate_ros_domain()

#: seconds for the run to start and train a few updates (a deadline, not a measurement)
WAIT_S = 240.0
ENVS = 8


def _spin_until(node, executor, train, what, done):
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert train.poll() is None, f'training exited ({train.returncode}):\n{train.output()}'
        assert time.monotonic() < deadline, f'the view never showed {what}:\n{train.output()}'
        node.frame(executor)  # what `unilab view` does once per screen frame
        time.sleep(1.0 / node.rate_hz)


def test_view_shows_env_0_and_the_training_curves(tmp_path, tiny_config):
    from unilab_view.view_node import ViewNode
    train = Process('train', '--steps', 1_000_000, '--run-dir', tmp_path / 'run',
                    '--config', tiny_config, '--num-envs', ENVS, '--no-progress')
    rclpy.init()
    # What `unilab view --training` starts: the training graph's own names.
    node = ViewNode([''], port=0, host='127.0.0.1',
                    joint_states=topics.SIM_VIEW_JOINT_STATES,
                    description=topics.SIM_ROBOT_DESCRIPTION,
                    goal=topics.SIM_GOAL_POSE, command=topics.SIM_COMMAND)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    robot = node.robots[0]
    try:
        _spin_until(node, executor, train, 'the robot and its joints',
                    lambda: robot.model is not None and robot.measured is not None
                    and all(f.value for f in robot.joint_fields.values()))
        # The workspace box, the trainer's (its parameter, asked of the live graph),
        # around the robot's base (base_link: the URDF's root).
        task = task_info('arm6_reach')[0]
        workspace = task.workspace
        _spin_until(node, executor, train, 'the trainer\'s workspace box',
                    lambda: robot.workspace_box is not None)
        centre, dims = box_geometry(workspace)
        assert np.allclose(robot.workspace[0], workspace)
        assert robot.workspace[1] == task.workspace_frame == 'base_link'
        assert np.allclose(robot.workspace_box.dimensions, dims)
        assert np.allclose(robot.workspace_box.position, centre)
        # The training graph's JointState carries every env; the page shows env 0's.
        names, positions = robot.measured
        assert len(names) == ENVS * len(robot.model.joint_names)
        assert {n.split('/')[0] for n in names} == {f'env{i}' for i in range(ENVS)}
        env0 = {n[len('env0/'):]: v for n, v in zip(names, positions) if n.startswith('env0/')}
        env1 = {n[len('env1/'):]: v for n, v in zip(names, positions) if n.startswith('env1/')}
        assert set(env0) == set(robot.model.joint_names)
        node._draw()  # the page as of this message
        shown = {n: f.value for n, f in robot.joint_fields.items()}
        assert shown == {n: f'{env0[n]:+.3f}' for n in robot.model.joint_names}
        assert shown != {n: f'{env1[n]:+.3f}' for n in robot.model.joint_names}
        # Env 0's goal (a red sphere, inside the task's workspace) and command (the ghost):
        # the bridge publishes them while the view listens.
        _spin_until(node, executor, train, 'env 0\'s goal and command',
                    lambda: robot.goal is not None and robot.commanded is not None)
        node._draw()
        assert np.all(np.asarray(robot.goal) >= np.asarray(workspace[:3]) - 1e-6)
        assert np.all(np.asarray(robot.goal) <= np.asarray(workspace[3:]) + 1e-6)
        shown_robot, ghost, goal_handle = robot.drawn
        assert goal_handle.visible and np.allclose(goal_handle.position, robot.goal)
        assert ghost.show_visual
        assert len(robot.commanded[1]) == len(robot.model.joint_names)
        assert np.all(np.isfinite(robot.commanded[1]))
        # The curves: a point per trainer status that moved, at growing env steps, drawn
        # in the page; the clamp share over each interval from the gate's counters.
        _spin_until(node, executor, train, 'training updates with the gate\'s clamp share',
                    lambda: node.curves.count >= 2 and node.curve_plots is not None
                    and np.isfinite(node.curves.series('safety/clamp_share')[1]).any())
        node._draw()
        x, clamp = node.curves.series('safety/clamp_share')
        assert np.all(np.diff(x) > 0) and np.all(x % (ENVS * 16) == 0)  # rollout: 16 steps
        finite = clamp[np.isfinite(clamp)]
        assert np.all((finite >= 0) & (finite <= 1))
        for name in CURVES:
            plotted = node.curve_plots[name].data
            assert len(plotted) == 2 and len(plotted[0]) == node.curves.count
    finally:
        train.stop()
        executor.shutdown()
        node.close()
        node.destroy_node()
        rclpy.try_shutdown()
    assert 'Traceback' not in train.output(), train.output()
