# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge's view topics (env 0's goal and command, every env's joints): while read, 20 Hz."""

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


def test_the_view_topics_only_while_read_and_at_most_at_the_view_rate():
    node = _Node()
    with make_task('ur5e_reach', 4, seed=0) as task:
        state = task.reset(0)
        view = EnvView(node, task)
        goal_pub, cmd_pub = node.pubs[topics.SIM_GOAL_POSE], node.pubs[topics.SIM_COMMAND]
        joints_pub = node.pubs[topics.SIM_VIEW_JOINT_STATES]
        command = np.arange(24, dtype=np.float32).reshape(4, 6)
        view.publish(command, state, STAMP)
        # Nobody listens: nothing built (not even the batch's joint names).
        assert goal_pub.sent == [] and cmd_pub.sent == [] and joints_pub.sent == []
        assert view.joint_names is None
        goal_pub.readers = cmd_pub.readers = joints_pub.readers = 1
        view.due = 0.0
        view.publish(command, state, STAMP)
        view.publish(command, state, STAMP)  # within the same period: dropped
        assert len(goal_pub.sent) == 1 and len(cmd_pub.sent) == 1 and len(joints_pub.sent) == 1
        # Every env's joints, named as the per-step topic names them.
        js = joints_pub.sent[0]
        assert js.header.stamp == STAMP
        assert list(js.name) == [f'env{i}/{j}' for i in range(4) for j in task.joint_names]
        np.testing.assert_array_equal(np.reshape(js.position, (4, 6)), state.joint_position)
        np.testing.assert_array_equal(np.reshape(js.velocity, (4, 6)), state.joint_velocity)
        np.testing.assert_array_equal(np.reshape(js.effort, (4, 6)), state.joint_effort)
        # The next period: the newest state only, and nothing for a topic nobody reads.
        joints_pub.readers = 0
        view.due = 0.0
        view.publish(command, state, STAMP)
        assert len(joints_pub.sent) == 1 and len(cmd_pub.sent) == 2
        cmd_pub.sent.pop()
        assert list(cmd_pub.sent[0].data) == list(map(float, command[0]))
        goal = goal_pub.sent[0]
        assert goal.header.frame_id == 'base_link' and goal.header.stamp == STAMP
        p = goal.pose.position
        np.testing.assert_allclose((p.x, p.y, p.z), task.goal_positions()[0])
