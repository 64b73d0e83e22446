# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
One env's goal and command on standard topics, for a live view of training.

The training graph's commands travel in the transport and its goals inside the task
state; a viewer (``unilab view --training``) reads neither. ``EnvView`` publishes env
``env``'s goal (``geometry_msgs/PoseStamped`` on ``topics.SIM_GOAL_POSE``, in the task's
workspace frame) and the command it was stepped with (``std_msgs/Float64MultiArray`` on
``topics.SIM_COMMAND``, the task's joint order) at most ``topics.VIEW_RATE_HZ`` times a
second of wall time, and each only while a reader is matched: without a viewer, a step
costs one clock read.
"""

from __future__ import annotations

import time

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray
from unilab_core import topics


class EnvView:
    """Env ``env``'s goal and command at a screen's rate, while someone listens."""

    def __init__(self, node: Node, task, env: int = 0):
        self.env = int(env)
        self.task = getattr(task, 'inner', task)  # a disturbed task's own goals
        workspace = getattr(self.task, 'workspace', None)
        self.frame = workspace.frame if workspace is not None else 'world'
        self.goal_pub = node.create_publisher(PoseStamped, topics.SIM_GOAL_POSE, 1)
        self.command_pub = node.create_publisher(Float64MultiArray, topics.SIM_COMMAND, 1)
        self.period = 1.0 / topics.VIEW_RATE_HZ
        self.due = 0.0
        self.published = 0  # messages sent (goal and command)

    def publish(self, command, stamp) -> None:
        """Publish the env's goal and ``command`` row if a period passed and a reader listens."""
        now = time.monotonic()
        if now < self.due:
            return
        self.due = now + self.period
        if self.command_pub.get_subscription_count():
            self.command_pub.publish(Float64MultiArray(
                data=[float(v) for v in command[self.env]]))
            self.published += 1
        goals = self.task.goal_positions() if self.goal_pub.get_subscription_count() else None
        if goals is not None:
            msg = PoseStamped()
            msg.header.stamp = stamp
            msg.header.frame_id = self.frame
            p = msg.pose.position
            p.x, p.y, p.z = (float(v) for v in goals[self.env])
            msg.pose.orientation.w = 1.0
            self.goal_pub.publish(msg)
            self.published += 1
