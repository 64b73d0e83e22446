# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge's env-0 goal and command for a live view: only while read, at a screen's rate."""

from builtin_interfaces.msg import Time
import numpy as np
from unilab_bridge.tasks import make_task
from unilab_bridge.view_out import EnvView
from unilab_core import topics


STAMP = Time(sec=1, nanosec=20_000_000)


class _Publisher:
    def __init__(self):
        self.readers = 0
        self.sent = []

    def get_subscription_count(self):
        return self.readers

    def publish(self, msg):
        self.sent.append(msg)


class _Node:
    def __init__(self):
        self.pubs = {}

    def create_publisher(self, msg_type, topic, depth):
        self.pubs[topic] = _Publisher()
        return self.pubs[topic]


def test_env_0s_goal_and_command_only_while_read_and_at_most_at_the_view_rate():
    node = _Node()
    with make_task('ur5e_reach', 4, seed=0) as task:
        task.reset(0)
        view = EnvView(node, task)
        goal_pub, cmd_pub = node.pubs[topics.SIM_GOAL_POSE], node.pubs[topics.SIM_COMMAND]
        command = np.arange(24, dtype=np.float32).reshape(4, 6)
        view.publish(command, STAMP)
        assert goal_pub.sent == [] and cmd_pub.sent == []  # nobody listens: nothing built
        goal_pub.readers = cmd_pub.readers = 1
        view.due = 0.0
        view.publish(command, STAMP)
        view.publish(command, STAMP)  # within the same period: dropped
        assert len(goal_pub.sent) == 1 and len(cmd_pub.sent) == 1
        assert list(cmd_pub.sent[0].data) == list(map(float, command[0]))
        goal = goal_pub.sent[0]
        assert goal.header.frame_id == 'base_link' and goal.header.stamp == STAMP
        p = goal.pose.position
        np.testing.assert_allclose((p.x, p.y, p.z), task.goal_positions()[0])
