# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``bench deploy``'s baseline: the plain rclpy node one would write by hand to run a policy.

One node, one process, no gate: subscribe the profile's ``/joint_states``, map the
joints by name, build the same observation (``[q, qd]``, the reach task's extras
by forward kinematics of the measured joints, the last actions if the network
takes them), one torch forward of the same network (normaliser included, the
mean action, its action map to joint units), clamp to the task's action range,
publish ``std_msgs/Float64MultiArray`` in the controller's joint order. Run:
``python -m unilab_bench.deploy_baseline MODEL PROFILE``.

``--echo``: the floor of any rclpy controller on this machine: the same node with
no work at all (the measured positions are published back, a hold), so what is
left is DDS in and out and the executors on both sides.
"""

from __future__ import annotations

import argparse

from geometry_msgs.msg import PoseStamped
import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
import torch
from unilab_core.robot_profile import load_profile
from unilab_perception.task_inputs import MissingInput, ReachInputs


class PlainPolicyNode(Node):
    """Joint states in, the policy's clamped action out, in the controller's order."""

    def __init__(self, model: str, profile_file: str, echo: bool = False):
        super().__init__('plain_policy')
        self.echo = echo
        from unilab_policy.action_map import ActionMap
        from unilab_policy.networks import load_trained
        self._missing = MissingInput
        profile = load_profile(profile_file)
        trained = load_trained(model)
        p = trained.params
        torch.set_num_threads(p.run.torch_threads)
        self.net = trained.bundle.eval()
        self.action_map = ActionMap.of(p.model, p.act_dim)
        self.names = list(profile.joint_names)
        self.low = np.asarray(p.action_low, np.float32)
        self.high = np.asarray(p.action_high, np.float32)
        self.history = np.zeros(p.model.action_history * p.act_dim, np.float32)
        self.out_index = [self.names.index(j)
                          for j in (profile.controller_joints or self.names)]
        ti = profile.task_inputs
        self.inputs = ReachInputs(profile.model_file, self.names, ti.tool_site) \
            if ti.kind == 'reach' else None
        self.index: list[int] | None = None
        self.pub = self.create_publisher(Float64MultiArray, profile.command.topic, 10)
        self.create_subscription(JointState, profile.joint_states_topic, self._on_state, 10)
        if self.inputs is not None:
            self.create_subscription(PoseStamped, ti.goal_topic, self._on_goal, 10)

    def _on_goal(self, msg: PoseStamped) -> None:
        p = msg.pose.position
        self.inputs.set_goal([p.x, p.y, p.z])

    def _on_state(self, msg: JointState) -> None:
        if self.index is None or len(msg.name) != len(self.index):
            self.index = [list(msg.name).index(j) for j in self.names]
        if self.echo:
            self.pub.publish(Float64MultiArray(data=[msg.position[self.index[i]]
                                                     for i in self.out_index]))
            return
        q = np.asarray(msg.position, np.float32)[self.index][None, :]
        qd = np.asarray(msg.velocity, np.float32)[self.index][None, :]
        parts = [q, qd]
        if self.inputs is not None:
            try:
                parts.append(self.inputs.extras(q))
            except self._missing:
                return
        parts.append(self.history[None, :])
        obs = np.concatenate(parts, axis=1)
        with torch.inference_mode():
            mean = self.net(torch.from_numpy(obs)).numpy()
        action = np.clip(self.action_map.command(obs, mean)[0], self.low, self.high)
        if self.history.size:
            self.history = np.concatenate([self.history[action.size:], action])
        self.pub.publish(Float64MultiArray(data=[float(v) for v in action[self.out_index]]))


def main(args=None) -> None:
    """Run the baseline node with ``rclpy.spin`` until Ctrl-C (the plain way)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[1])
    parser.add_argument('model')
    parser.add_argument('profile')
    parser.add_argument('--echo', action='store_true',
                        help='no work: publish the measured positions back (the floor)')
    ns, ros_args = parser.parse_known_args(args)
    rclpy.init(args=ros_args)
    node = PlainPolicyNode(ns.model, ns.profile, ns.echo)
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
