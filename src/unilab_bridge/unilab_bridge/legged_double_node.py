# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Legged robot double node: one legged robot (``legged_double``) behind its driver's topics.

Topics (names from the profile; rates in simulated time):

- publishes ``sensor_msgs/JointState`` on ``joint_states_topic`` at ``joint_state_rate_hz``
  (the profile's, 500 Hz on a Go2) with the driver's joint names and order
  (``command.joints``: Unitree's FR, FL, RR, RL), position, velocity and effort (the
  torque the motors applied);
- publishes ``sensor_msgs/Imu`` on ``imu_topic`` at the same rate, frame ``imu``
  (orientation, gyro, accelerometer with gravity);
- publishes ``nav_msgs/Odometry`` on ``/odom`` (``task_inputs.odom_topic``) at
  ``odom_rate_hz``: the double's ground truth for scoring, frame ``odom``, child the base
  link; no policy input (a Go2 measures no base velocity);
- publishes the URDF with its ``<ros2_control>`` block on ``robot_description``
  (``std_msgs/String``, transient local): the driver's command interface per joint and,
  on the position interface, its gains ``kp`` / ``kd`` (parameters ``kp`` / ``kd``);
- subscribes the profile's command topic (``std_msgs/Float64MultiArray`` in
  ``command.joints`` order: N m on effort, rad on position); wrong-length or non-finite
  commands are refused (counted per kind, logged once per kind);
- subscribes ``~/push`` (``geometry_msgs/Vector3``: x, y = the kick to the trunk's
  world-frame velocity in m/s; z ignored).

The physics follows the wall clock times ``time_scale`` on a thread of its own, in
chunks of whole 1 kHz ticks, and publishes from there; commands and pushes reach it
through queues and count as arriving at the tick that takes them.

A real driver publishes on time; this one is a Python process sharing the machine. The
wall-clock gap between two joint-state messages is watched (``joint_state_gap_max_ms``,
and ``joint_state_gaps_past_timeout``: gaps longer than the profile's
``legged.state_timeout_s``), so that a stale-input fall stop of the supervisor can be
told apart: the double went quiet (its own stall), or the controller did not take what
arrived.
"""

from __future__ import annotations

import collections
import json
import math
import threading
import time

from geometry_msgs.msg import Vector3
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String
from unilab_bridge.command_in import CommandInput, CommandRefused, REFUSAL_KINDS
from unilab_bridge.legged_double import LeggedDouble, parse_pushes, PHYSICS_DT
from unilab_bridge.params import LeggedDoubleParams
from unilab_bridge.robot_double import Every, ScaledClock
from unilab_bridge.sensor_msgs_out import make_imu
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError
from unilab_core.robot_profile import load_profile
from unilab_core.ros.joint_state_topic import f64_array
from unilab_core.ros.params import declare_params
from unilab_core.ros.qos import DESCRIPTION_QOS

#: The physics thread sleeps this long (wall s) between chunks of ticks.
_NAP_S = 0.0005


class LeggedDoubleNode(Node):
    """A simulated legged robot that looks to the graph like its ros2_control driver."""

    def __init__(self, **kwargs):
        super().__init__('legged_double', **kwargs)
        self.params = p = declare_params(self, LeggedDoubleParams)
        try:
            self.profile = profile = load_profile(p.profile)
            self.double = LeggedDouble(
                profile, p.variant, p.seed, p.start, p.tilt_rad,
                latency_s=None if p.latency_s < 0 else p.latency_s,
                friction=p.friction or None, kp=None if p.kp < 0 else p.kp,
                kd=None if p.kd < 0 else p.kd, pushes=parse_pushes(p.pushes))
        except (ConfigError, OSError) as exc:
            raise ConfigError(f'legged_double: {exc}') from None
        d = self.double
        self.command_in = CommandInput(profile.joint_names, profile.controller_joints)
        self._order = d.joint_index(profile.controller_joints)
        self.counters = {'ticks': 0, 'joint_states': 0, 'imu': 0, 'commands': 0,
                         'push_requests': 0, 'refused_push': 0, 'publish_errors': 0,
                         'joint_state_gaps_past_timeout': 0,
                         **{f'refused_{k}': 0 for k in REFUSAL_KINDS}}
        legged = profile.legged
        self._gap_bound_s = legged.state_timeout_s if legged is not None else math.inf
        self._js_wall: float | None = None   # wall clock of the last joint state sent
        self._gap_max_s = 0.0
        self._logged: set[str] = set()
        self._inbox: collections.deque = collections.deque()  # ('command' | 'push', value)
        qos = QoSProfile(depth=10)
        self.js_pub = self.create_publisher(JointState, profile.joint_states_topic, qos)
        self.imu_pub = self.create_publisher(Imu, profile.imu_topic, qos) \
            if profile.imu_topic else None
        self.odom_pub = self.create_publisher(Odometry, profile.task_inputs.odom_topic, qos)
        self.command_sub = self.create_subscription(
            Float64MultiArray, profile.command.topic, self._on_command, qos)
        self.push_sub = self.create_subscription(Vector3, '~/push', self._on_push, qos)
        if p.publish_description:
            self.description_pub = self.create_publisher(String, 'robot_description',
                                                         DESCRIPTION_QOS)
            self.description_pub.publish(String(data=d.urdf()))
        self._js = JointState()
        self._js.name = list(profile.controller_joints)
        self._js_due = Every(1.0 / (p.joint_state_rate_hz or profile.joint_state_rate_hz))
        self._odom_due = Every(1.0 / p.odom_rate_hz)
        self._sim_clock = ScaledClock(p.time_scale, p.max_lag_s)
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._final = None
        self._thread = threading.Thread(target=self._run, daemon=True, name='legged_double')
        self._thread.start()
        self.get_logger().info(
            f'{profile.name} ({p.variant}, start {p.start}): {profile.command.interface} on '
            f'{profile.command.topic}, latency {d.latency_s * 1e3:g} ms, floor friction '
            f'{d.friction if d.friction is not None else "of the model"}, joint states at '
            f'{1.0 / self._js_due.period:g} Hz, physics {1.0 / PHYSICS_DT:g} Hz, time scale '
            f'{p.time_scale:g}')

    # ------------------------------------------------------------------ ROS inputs
    def _on_command(self, msg: Float64MultiArray) -> None:
        try:
            target = self.command_in.forward(msg.data)
        except CommandRefused as exc:
            self.counters[f'refused_{exc.kind}'] += 1
            if exc.kind not in self._logged:
                self._logged.add(exc.kind)
                self.get_logger().error(
                    f'refused a command on {self.command_sub.topic_name}: {exc} (further '
                    f'`{exc.kind}` refusals are counted, not logged)')
            return
        self._inbox.append(('command', target.q))
        self.counters['commands'] += 1

    def _on_push(self, msg: Vector3) -> None:
        if not (math.isfinite(msg.x) and math.isfinite(msg.y)):
            # A NaN kick would poison the physics for good: refused, counted, logged once.
            self.counters['refused_push'] += 1
            if 'push' not in self._logged:
                self._logged.add('push')
                self.get_logger().error(f'refused a push ({msg.x}, {msg.y}): not finite')
            return
        self._inbox.append(('push', (msg.x, msg.y)))
        self.counters['push_requests'] += 1

    # ------------------------------------------------------------------ physics thread
    def _run(self) -> None:
        d = self.double
        self._sim_clock.start = time.monotonic()
        while not self._stop.is_set():
            target = self._sim_clock.target(time.monotonic(), d.sim_time)
            while d.sim_time + PHYSICS_DT <= target + 1e-9 and not self._stop.is_set():
                self._take_inbox()
                d.step()
                self.counters['ticks'] += 1
                try:
                    self._publish(d.sim_time)
                except Exception as exc:  # noqa: B902 - a DDS error: the robot runs on
                    # As a robot's driver: a message that cannot go out is counted and
                    # logged once; the physics keeps running (it used to end this thread).
                    self.counters['publish_errors'] += 1
                    if 'publish' not in self._logged and not self._stop.is_set():
                        self._logged.add('publish')
                        self.get_logger().error(f'could not publish the robot state: {exc}')
            time.sleep(_NAP_S)

    def _take_inbox(self) -> None:
        inbox, d = self._inbox, self.double
        while inbox:
            kind, value = inbox.popleft()
            if kind == 'command':
                d.command(value)
            else:
                d.push(*value)

    def _publish(self, t: float) -> None:
        js_due, odom_due = self._js_due.due(t), self._odom_due.due(t)
        if not (js_due or odom_due):
            return
        stamp = self.get_clock().now().to_msg()
        d = self.double
        if js_due:
            now = time.monotonic()
            if self._js_wall is not None:
                gap = now - self._js_wall
                self._gap_max_s = max(self._gap_max_s, gap)
                if gap > self._gap_bound_s:
                    self.counters['joint_state_gaps_past_timeout'] += 1
            self._js_wall = now
            js = self._js
            js.header.stamp = stamp
            js.position = f64_array(d.joint_position[self._order])
            js.velocity = f64_array(d.joint_velocity[self._order])
            js.effort = f64_array(d.joint_effort[self._order])
            self.js_pub.publish(js)
            self.counters['joint_states'] += 1
            if self.imu_pub is not None:
                r = d.imu()
                self.imu_pub.publish(make_imu(stamp, 'imu', r.gyro, r.accel, r.quat))
                self.counters['imu'] += 1
        if odom_due:
            self._publish_odom(stamp)

    def _publish_odom(self, stamp) -> None:
        g = self.double.ground_truth()
        msg = Odometry()
        msg.header.stamp = stamp
        msg.header.frame_id = 'odom'
        msg.child_frame_id = self.double.base_link
        pose, twist = msg.pose.pose, msg.twist.twist
        pose.position.x, pose.position.y, pose.position.z = (float(v) for v in g.pos)
        o = pose.orientation
        o.w, o.x, o.y, o.z = (float(v) for v in g.quat)
        twist.linear.x, twist.linear.y, twist.linear.z = (float(v) for v in g.linvel)
        twist.angular.x, twist.angular.y, twist.angular.z = (float(v) for v in g.angvel)
        self.odom_pub.publish(msg)

    # ------------------------------------------------------------------ stats
    def stats(self) -> dict:
        """Return the node's and the double's counters."""
        if self._final is not None:
            return self._final
        wall = max(time.monotonic() - self._t0, 1e-9)
        return {**self.counters, **self.double.stats(), 'wall_s': round(wall, 3),
                'slipped_s': round(self._sim_clock.slipped, 4),
                'joint_state_gap_max_ms': round(self._gap_max_s * 1e3, 2)}

    def close(self) -> None:
        """Stop the physics, write the stats file (if asked); once."""
        if self._final is not None:
            return
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._final = self.stats()
        if self.params.stats_file:
            atomic_write_text(self.params.stats_file, json.dumps(self._final, indent=2))
        self.get_logger().info(f'legged double: {json.dumps(self._final)}')


def main(args=None):
    """Run the legged robot double node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(LeggedDoubleNode, args)


if __name__ == '__main__':
    main()
