# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A UR5e double built from the maker's data, not from the policy's model.

It publishes what ur_robot_driver publishes (``/joint_states``, the URDF on
``robot_description``, latched) and takes ``scaled_joint_trajectory_controller``'s
commands; its kinematics are UR's DH table (``unilab_bridge/test/ur5e_dh.py``), so a
check or a deploy that relies on a model with other joint zeros fails against it.
"""

import pathlib
import sys
import threading

from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

sys.path.append(str(pathlib.Path(__file__).resolve().parents[2] / 'unilab_bridge' / 'test'))
from ur5e_dh import dh_flange, HOME, JOINTS, ur5e_urdf  # noqa: E402,I100

__all__ = ['dh_flange', 'DhDouble', 'HOME', 'JOINTS', 'ur5e_urdf']


class DhDouble:
    """The double's node spun in a thread; ``close()`` stops it."""

    def __init__(self, context, rate_hz=100.0):
        self.node = Node('ur_driver_double', context=context)
        self.q = list(HOME)
        self.commands = 0
        self._states = self.node.create_publisher(JointState, '/joint_states', 10)
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.node.create_publisher(String, '/robot_description', latched).publish(
            String(data=ur5e_urdf()))
        self.node.create_subscription(
            JointTrajectory, '/scaled_joint_trajectory_controller/joint_trajectory',
            self._on_command, 10)
        self.node.create_timer(1.0 / rate_hz, self._publish)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def _publish(self):
        msg = JointState(name=list(JOINTS), position=[float(x) for x in self.q],
                         velocity=[0.0] * 6, effort=[0.0] * 6)
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self._states.publish(msg)

    def _on_command(self, msg):
        self.commands += 1

    def close(self):
        """Stop spinning and destroy the node."""
        self.executor.shutdown()
        self._thread.join(timeout=5)
        self.node.destroy_node()
