# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The training graph at a screen's rate on standard topics, for a live view of training.

The training graph's commands travel in the transport and its goals inside the task
state; a viewer (``unilab view --training``) reads neither. ``EnvView`` publishes env
``env``'s goal (``geometry_msgs/PoseStamped`` on ``topics.SIM_GOAL_POSE``, in the task's
workspace frame) and the command it was stepped with (``std_msgs/Float64MultiArray`` on
``topics.SIM_COMMAND``, the task's joint order), and every env's joint state
(``sensor_msgs/JointState`` on ``topics.SIM_VIEW_JOINT_STATES``, names ``env<i>/<joint>``
as on ``topics.SIM_JOINT_STATES``), at most ``topics.VIEW_RATE_HZ`` times a second of
wall time, and each only while a reader is matched: without a viewer, a step costs one
clock read. A viewer of the full-rate ``SIM_JOINT_STATES`` makes the bridge build a
JointState of the whole batch every step (a bag recorder needs each one; a screen does not).
"""

from __future__ import annotations

import time

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from unilab_core import topics
from unilab_core.joint_names import batched_joint_names
from unilab_core.ros.joint_state_topic import f64_array


class EnvView:
    """Env ``env``'s goal and command, every env's joints, at a screen's rate while read."""

    def __init__(self, node: Node, task, env: int = 0):
        self.env = int(env)
        self.task = getattr(task, 'inner', task)  # a disturbed task's own goals
        # The goal's frame comes from the task's workspace box, read with the first goal
        # sent: arm6's box takes thousands of forward kinematics, which a bridge nobody
        # watches should not pay at start-up.
        self.frame = None
        self.goal_pub = node.create_publisher(PoseStamped, topics.SIM_GOAL_POSE, 1)
        self.command_pub = node.create_publisher(Float64MultiArray, topics.SIM_COMMAND, 1)
        self.joints_pub = node.create_publisher(JointState, topics.SIM_VIEW_JOINT_STATES, 1)
        self.joint_names = None  # ``env<i>/<joint>``, built with the first message
        self.period = 1.0 / topics.VIEW_RATE_HZ
        self.due = 0.0
        self.published = 0  # messages sent (goal and command)

    def publish(self, command, state, stamp) -> None:
        """
        Publish what is read of the step's outcome, if a period passed since the last.

        ``command`` is the batch's command the step took, ``state`` the task state it gave
        (joint positions, velocities and efforts of every env).
        """
        now = time.monotonic()
        if now < self.due:
            return
        self.due = now + self.period
        if self.joints_pub.get_subscription_count():
            self._joint_states(state, stamp)
        if self.command_pub.get_subscription_count():
            self.command_pub.publish(Float64MultiArray(
                data=[float(v) for v in command[self.env]]))
            self.published += 1
        goals = self.task.goal_positions() if self.goal_pub.get_subscription_count() else None
        if goals is not None:
            msg = PoseStamped()
            msg.header.stamp = stamp
            if self.frame is None:
                workspace = getattr(self.task, 'workspace', None)
                self.frame = workspace.frame if workspace is not None else 'world'
            msg.header.frame_id = self.frame
            p = msg.pose.position
            p.x, p.y, p.z = (float(v) for v in goals[self.env])
            msg.pose.orientation.w = 1.0
            self.goal_pub.publish(msg)
            self.published += 1

    def _joint_states(self, state, stamp) -> None:
        position = state.joint_position
        if self.joint_names is None:
            self.joint_names = batched_joint_names(self.task.joint_names, position.shape[0])
        msg = JointState(name=self.joint_names)
        msg.header.stamp = stamp
        msg.position = f64_array(position.reshape(-1))
        msg.velocity = f64_array(state.joint_velocity.reshape(-1))
        msg.effort = f64_array(state.joint_effort.reshape(-1))
        self.joints_pub.publish(msg)
        self.published += 1
