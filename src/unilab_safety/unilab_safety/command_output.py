# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The safety node's output edge: gated commands as the consumer's own message type.

- ``tensor_batch``: ``unilab_interfaces/TensorBatch`` on the graph's safe-command
  topic through the zero-copy transport (training and simulation; the bridge
  steps on kind ``command`` only). The transport carries the gate's float64
  command unchanged (a plain ROS reader gets the message's float32);
- ``forward_command``: ``std_msgs/Float64MultiArray`` for ros2_controllers'
  ``forward_command_controller`` (``/<controller>/commands``), values in the
  controller's ``joints`` order;
- ``joint_trajectory``: a one-point ``trajectory_msgs/JointTrajectory`` for
  ``joint_trajectory_controller`` (``/<controller>/joint_trajectory``),
  ``time_from_start`` = one control period, ``header.stamp`` = the time the
  command was published, on the node's clock. joint_trajectory_controller
  starts a stamped trajectory at its stamp and refuses one that ends in the
  past ("Received trajectory with non-zero start time that ends in the past"):
  a command that reaches the controller more than one control period after it
  was made is dropped there and the controller holds its last point, rather
  than executing a stale command late. A zero stamp ("start now", the old
  behaviour) would run any delayed command in full. This needs the deploy
  machine's and the controller's clocks in sync (``unilab doctor`` checks
  clock sync); ``output.stamp: zero`` restores "start now".

Every kind (command, fallback, e-stop hold) goes out the same way: a robot
applies holds too. This module only converts; it decides nothing.
"""

from __future__ import annotations

from builtin_interfaces.msg import Duration
import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from unilab_core.ros.tensor_topic import batch_capacity, TensorPublisher

from unilab_safety.params import SafetySpec


def controller_index(joint_names, controller_joints) -> np.ndarray:
    """Return, for each controller joint, its column in the gate's command."""
    names = list(joint_names)
    return np.array([names.index(j) for j in (controller_joints or names)], dtype=np.intp)


def command_capacity(num_envs: int, joints: int) -> int:
    """Return the ring slot bytes of a ``[num_envs, joints]`` safe command (float64 values)."""
    return batch_capacity({'command': (num_envs, joints)}, itemsize=8)


class CommandOutput:
    """Publish gated ``[N, J]`` commands in the configured message type (thread-safe)."""

    def __init__(self, node: Node, spec: SafetySpec, qos: QoSProfile):
        self.type = spec.output.type
        self.interface = spec.interface
        self.topic = spec.output.topic
        if self.type == 'tensor_batch':
            self._pub = TensorPublisher(
                node, self.topic, command_capacity(spec.num_envs, len(spec.joint_names)),
                qos=qos)
            return
        self.joints = list(spec.output.joints or spec.joint_names)
        self._index = controller_index(spec.joint_names, self.joints)
        sec, frac = divmod(float(spec.dt), 1.0)
        self._duration = Duration(sec=int(sec), nanosec=int(round(frac * 1e9)))
        mtype = Float64MultiArray if self.type == 'forward_command' else JointTrajectory
        self._pub = node.create_publisher(mtype, self.topic, qos)
        self._clock = node.get_clock() if spec.output.stamp == 'now' else None

    def publish(self, kind: str, seq: int, version: int, stamp_ns: int,
                command: np.ndarray) -> None:
        """Publish one gated batch (a controller gets row 0, the one robot)."""
        if self.type == 'tensor_batch':
            # The gate's float64 command as it is: the simulator steps with what the gate
            # computed (and limits the next command from), as the direct loop does; only a
            # plain ROS reader gets the float32 TensorBatch.
            self._pub.publish(kind, seq, {'command': command}, version, stamp_ns)
            return
        values = [float(v) for v in np.asarray(command, np.float64)[0, self._index]]
        if self.type == 'forward_command':
            self._pub.publish(Float64MultiArray(data=values))
            return
        point = JointTrajectoryPoint(time_from_start=self._duration)
        if self.interface == 'position':
            point.positions = values
        elif self.interface == 'velocity':
            point.velocities = values
        else:
            point.effort = values
        msg = JointTrajectory(joint_names=self.joints, points=[point])
        if self._clock is not None:
            msg.header.stamp = self._clock.now().to_msg()  # made now (see the module doc)
        self._pub.publish(msg)

    def get_subscription_count(self) -> int:
        """Return how many subscribers the output topic has."""
        return self._pub.get_subscription_count()

    @property
    def topic_name(self) -> str:
        """Return the resolved output topic."""
        return self._pub.topic_name
