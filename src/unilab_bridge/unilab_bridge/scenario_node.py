# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Scenario node: an operator that gives each robot goals and scores them.

Reach profiles: publishes ``geometry_msgs/PoseStamped`` goals on
``<ns>/<task_inputs.goal_topic>`` (reliable, transient local: a controller started
later still gets the current goal; frame ``base_link``, the robot's base, identity
orientation) and reads ``<ns>/<joint_states_topic>``. Walk profiles: publishes
``geometry_msgs/Twist`` on ``<ns>/<task_inputs.cmd_vel_topic>`` (every control
period, as a teleop would) and reads ``<ns>/<task_inputs.odom_topic>``. Scoring is
``unilab_bridge.scenario``. With ``wait_for_subscribers`` the first goals wait until
every robot's goal topic has a subscriber and its state arrives. Per-goal results
go to ``results_file`` (JSON, rewritten atomically after every goal); the node is
``done`` when every goal is scored and logs the success fraction.
"""

from __future__ import annotations

import json
import time

from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from unilab_bridge.params import ScenarioParams
from unilab_bridge.scenario import (ReachScenario, sample_reach_goals, sample_walk_goals,
                                    WalkScenario)
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError
from unilab_core.joint_names import JointLayoutError, JointStateIndex
from unilab_core.kinematics import SiteKinematics
from unilab_core.robot_profile import fleet_namespace, load_profile, namespaced
from unilab_core.ros.params import declare_params

GOAL_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                      reliability=ReliabilityPolicy.RELIABLE)
#: Goal poses are in the robot's base frame (the URDF root of a fixed-base robot).
GOAL_FRAME = 'base_link'


class ScenarioNode(Node):
    """Give goals to K robots; score each goal; end when all are scored."""

    def __init__(self, **kwargs):
        super().__init__('scenario', **kwargs)
        self.params = p = declare_params(self, ScenarioParams)
        try:
            self.profile = profile = load_profile(p.profile)
        except (ConfigError, OSError) as exc:
            raise ConfigError(f'scenario: parameter `profile`: {exc}') from None
        kind = profile.task_inputs.kind
        self.namespaces = [fleet_namespace(k, p.robots) for k in range(p.robots)]
        self.done = False
        self.started = False
        self.scale = p.time_scale
        self._seen = [False] * p.robots
        self._scored = 0
        qos = QoSProfile(depth=10)
        if kind == 'reach':
            self._setup_reach(profile, p, qos)
        elif kind == 'walk':
            self._setup_walk(profile, p, qos)
        else:
            raise ConfigError(f'scenario: robot {profile.name}: key `task_inputs.kind` is '
                              f'`{kind}`; the scenario needs reach or walk goals')
        self._t0 = time.monotonic()
        self.create_timer(min(0.05, profile.control_dt) / self.scale, self._tick)

    def _setup_reach(self, profile, p, qos) -> None:
        if not profile.model_file:
            raise ConfigError(f'scenario: robot {profile.name}: key `model_file` is needed '
                              'for the tool position (forward kinematics)')
        try:
            fk = SiteKinematics(profile.model_file, profile.joint_names,
                                profile.task_inputs.tool_site)
            goals = sample_reach_goals(profile.task, p.robots, p.goals, p.seed)
        except ValueError as exc:
            raise ConfigError(f'scenario: robot {profile.name}: {exc}') from None
        self.scenario = ReachScenario(goals, lambda q: fk.positions(q)[0], p.goal_timeout_s,
                                      p.tolerance_m)
        self.goal_pubs = [self.create_publisher(
            PoseStamped, namespaced(ns, profile.task_inputs.goal_topic), GOAL_QOS)
            for ns in self.namespaces]
        self._index = [JointStateIndex(profile.joint_names) for _ in self.namespaces]
        self.state_subs = [self.create_subscription(
            JointState, namespaced(ns, profile.joint_states_topic),
            lambda msg, k=k: self._on_joints(k, msg), qos)
            for k, ns in enumerate(self.namespaces)]

    def _setup_walk(self, profile, p, qos) -> None:
        from unilab_bridge.tasks.quad_walk import MIN_HEIGHT
        goals = sample_walk_goals(profile.task, p.robots, p.goals, p.seed)
        self.scenario = WalkScenario(goals, p.goal_timeout_s, p.speed_tolerance_mps,
                                     MIN_HEIGHT)
        self.goal_pubs = [self.create_publisher(
            Twist, namespaced(ns, profile.task_inputs.cmd_vel_topic), qos)
            for ns in self.namespaces]
        self._speed = [0.0] * p.robots
        self.state_subs = [self.create_subscription(
            Odometry, namespaced(ns, profile.task_inputs.odom_topic),
            lambda msg, k=k: self._on_odom(k, msg), qos)
            for k, ns in enumerate(self.namespaces)]

    # ------------------------------------------------------------------ time
    def now(self) -> float:
        """Return the scenario's time in simulated seconds (scaled wall clock)."""
        return (time.monotonic() - self._t0) * self.scale

    def _ready(self) -> bool:
        if not self.params.wait_for_subscribers:
            return True
        return all(self._seen) and all(pub.get_subscription_count() > 0
                                       for pub in self.goal_pubs)

    def _tick(self) -> None:
        if self.done:
            return
        if not self.started:
            if not self._ready():
                return
            self.started = True
            self._t0 = time.monotonic()
            self._publish(self.scenario.begin(0.0))
            self.get_logger().info(
                f'{self.scenario.kind} scenario: {self.scenario.num_goals} goal(s) for each '
                f'of {self.scenario.num_robots} robot(s), time-out '
                f'{self.scenario.timeout_s:g} s (simulated)')
            return
        self._publish(self.scenario.on_time(self.now()))
        if self.scenario.kind == 'walk':
            self._publish_velocities()

    # ------------------------------------------------------------------ inputs
    def _on_joints(self, k: int, msg: JointState) -> None:
        try:
            q = self._index[k].gather(msg.name, msg.position)[0]
        except JointLayoutError as exc:
            self.get_logger().error(f'robot {k}: {exc}', once=True)
            return
        self._seen[k] = True
        if self.started and not self.done:
            self._publish(self.scenario.on_joints(k, self.now(), q))

    def _on_odom(self, k: int, msg: Odometry) -> None:
        self._seen[k] = True
        if self.started and not self.done:
            self._publish(self.scenario.on_odometry(
                k, self.now(), msg.twist.twist.linear.x, msg.pose.pose.position.z))

    # ------------------------------------------------------------------ outputs
    def _publish(self, goals) -> None:
        n_before = self._scored
        for k, goal in goals:
            if self.scenario.kind == 'reach':
                msg = PoseStamped()
                msg.header.stamp = self.get_clock().now().to_msg()
                msg.header.frame_id = GOAL_FRAME
                msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (
                    float(v) for v in goal)
                msg.pose.orientation.w = 1.0
                self.goal_pubs[k].publish(msg)
            else:
                self._speed[k] = float(goal)
        if self.scenario.kind == 'walk' and goals:
            self._publish_velocities()
        self._scored = len(self.scenario.results)
        if self._scored != n_before:
            self._write_results()
        if self.scenario.done and not self.done:
            self.done = True
            self.get_logger().info(f'scenario finished: {json.dumps(self.scenario.summary())}')

    def _publish_velocities(self) -> None:
        for k, pub in enumerate(self.goal_pubs):
            active = self.scenario.active(k)
            pub.publish(Twist() if not active else self._twist(self._speed[k]))

    @staticmethod
    def _twist(vx: float) -> Twist:
        msg = Twist()
        msg.linear.x = vx
        return msg

    def report(self) -> dict:
        """Return the results document: robot, scenario, summary and per-goal results."""
        return {'robot': self.profile.name, 'task': self.profile.task,
                'scenario': self.scenario.kind, 'time_scale': self.scale,
                'goal_timeout_s': self.scenario.timeout_s,
                'summary': self.scenario.summary(), 'goals': self.scenario.results}

    def _write_results(self) -> None:
        if self.params.results_file:
            atomic_write_text(self.params.results_file, json.dumps(self.report(), indent=2))


def main(args=None):
    """Run the scenario node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(ScenarioNode, args)


if __name__ == '__main__':
    main()
