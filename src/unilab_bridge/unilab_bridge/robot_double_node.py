# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Robot double node: K simulated robots behind a ros2_control robot's standard topics.

Per robot, under its fleet namespace (``''`` alone, ``/robot<k>`` in a fleet; topic
names from the profile):

- publishes ``sensor_msgs/JointState`` on ``joint_states_topic`` with the profile's
  joint names at the broadcaster rate (``joint_state_rate_hz``), stamped with the
  node clock, as ``joint_state_broadcaster`` does;
- subscribes the controller's command topic and type (``forward_command``:
  ``std_msgs/Float64MultiArray`` in the controller's joint order;
  ``joint_trajectory``: ``trajectory_msgs/JointTrajectory``, reached at
  ``time_from_start``) and holds the last accepted command; refused commands
  (wrong length, non-finite, wrong joint names, bad times) are counted per kind
  and logged once per kind;
- publishes ``sensor_msgs/Imu`` on ``imu_topic`` (if the profile names one) and
  ``nav_msgs/Odometry`` on ``task_inputs.odom_topic`` (walk tasks) at the control
  rate, a Velodyne-style ``sensor_msgs/PointCloud2`` on ``points_topic`` (if named)
  at 10 Hz, and the URDF on ``robot_description`` (``std_msgs/String``, transient
  local), so ``robot_state_publisher`` + RViz show the robot.

Latency probe (``latency_probe_cycles`` > 0; ``unilab bench deploy``): instead of
the broadcaster, a thread publishes one joint state per control period at
deadline-scheduled times, stamped with them, steps the physics right before each,
and times every command's arrival on the same thread
(``unilab_bridge.latency_probe``); after the cycles asked for it writes the
figures to ``latency_probe_file`` and the node ends.

Time: the physics follows the wall clock times ``time_scale`` (``time.monotonic``);
stamps are the node clock. With ``time_scale`` S the robots live S times faster,
and a controller (the deploy graph) runs at S times its rate; durations in
commands (``time_from_start``) are wall-clock durations and scale the same way.
"""

from __future__ import annotations

import json
import threading
import time

from nav_msgs.msg import Odometry
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.time import Time
from sensor_msgs.msg import Imu, JointState, PointCloud2
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory
from unilab_bridge.command_in import CommandInput, CommandRefused, REFUSAL_KINDS
from unilab_bridge.latency_probe import CycleLatency
from unilab_bridge.params import RobotDoubleParams
from unilab_bridge.robot_double import Every, profile_urdf, RobotDouble, ScaledClock
from unilab_bridge.sensor_msgs_out import make_imu, make_pointcloud
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError
from unilab_core.robot_profile import fleet_namespace, load_profile, namespaced
from unilab_core.ros.joint_state_topic import f64_array
from unilab_core.ros.params import declare_params
from unilab_core.ros.qos import DESCRIPTION_QOS

#: Lidar sweeps per simulated second (a VLP-16's default).
LIDAR_HZ = 10.0


def _seconds(duration) -> float:
    return duration.sec + duration.nanosec * 1e-9


class RobotDoubleNode(Node):
    """Simulated robots that look to the graph like ros2_control robots."""

    def __init__(self, **kwargs):
        super().__init__('robot_double', **kwargs)
        self.params = p = declare_params(self, RobotDoubleParams)
        try:
            self.profile = profile = load_profile(p.profile)
        except (ConfigError, OSError) as exc:
            raise ConfigError(f'robot_double: parameter `profile`: {exc}') from None
        self.double = RobotDouble(profile, p.robots, p.seed, p.variant,
                                  imu=bool(profile.imu_topic))
        self.scale = p.time_scale
        self.max_lag = p.max_lag_s
        self.js_period = 1.0 / (p.joint_state_rate_hz or profile.joint_state_rate_hz)
        self.command_in = CommandInput(profile.joint_names, profile.controller_joints)
        self.counters = {'steps': 0, 'joint_states': 0, 'commands': 0,
                         **{f'refused_{k}': 0 for k in REFUSAL_KINDS}}
        self._logged: set[str] = set()
        self._base = self.double.base_state() if profile.task_inputs.kind == 'walk' else None
        self._setup_lidar()
        # Probe mode: joint states and commands live on a node of the probe's own thread.
        self._probe = Node('robot_double_probe', context=self.context) \
            if p.latency_probe_cycles else None
        self._setup_robots(profile, p, self._probe or self)
        self.sim_clock: ScaledClock | None = None
        self._t0 = time.monotonic()
        self._js_due = Every(self.js_period)
        self._last_js = 0.0  # scaled-clock time of the last joint state
        self._scan_due = Every(1.0 / LIDAR_HZ)
        # Ticks at twice the fastest rate: a late tick still finds its period (Every).
        period = min(self.js_period, self.double.control_dt) / self.scale / 2.0
        self.done = False
        if self._probe is None:
            self.create_timer(period, self._tick)
        else:
            self._start_probe(p)
        kinds = [k for k, on in (('imu', self.imu_pubs), ('odom', self.odom_pubs),
                                 ('points', self.points_pubs)) if on]
        self.get_logger().info(
            f'{profile.name} ({profile.task}, {p.variant}): {p.robots} robot(s) under '
            f'{", ".join(self.namespaces) if p.robots > 1 else "/"}, joint states at '
            f'{1.0 / self.js_period:g} Hz, control {1.0 / self.double.control_dt:g} Hz, '
            f'{profile.command.type} on {profile.command.topic}, time scale {self.scale:g}'
            f'{", sensors: " + ", ".join(kinds) if kinds else ""}')

    # ------------------------------------------------------------------ set-up
    def _setup_lidar(self) -> None:
        self.lidar = None
        if self.profile.points_topic:
            from unilab_bridge.sensors import Lidar
            try:
                self.lidar = Lidar(self.double.sim.model)
            except ValueError as exc:
                raise ConfigError(f'robot {self.profile.name}: key `points_topic`: {exc}') \
                    from None

    def _setup_robots(self, profile, p, io: Node) -> None:
        n = p.robots
        self.namespaces = [fleet_namespace(k, n) for k in range(n)]
        self.frame_prefix = [ns.strip('/') + '/' if ns else '' for ns in self.namespaces]
        qos = QoSProfile(depth=10)
        self.js_pubs = [io.create_publisher(
            JointState, namespaced(ns, profile.joint_states_topic), qos)
            for ns in self.namespaces]
        self._js = JointState()
        self._js.name = list(profile.joint_names)
        self.imu_pubs = [self.create_publisher(Imu, namespaced(ns, profile.imu_topic), qos)
                         for ns in self.namespaces] if self.double.has_imu else []
        self.odom_pubs = [self.create_publisher(
            Odometry, namespaced(ns, profile.task_inputs.odom_topic), qos)
            for ns in self.namespaces] if self._base is not None else []
        self.points_pubs = [self.create_publisher(
            PointCloud2, namespaced(ns, profile.points_topic), qos)
            for ns in self.namespaces] if self.lidar is not None else []
        msg_type = Float64MultiArray if profile.command.type == 'forward_command' \
            else JointTrajectory
        self.command_subs = [io.create_subscription(
            msg_type, namespaced(ns, profile.command.topic),
            (lambda msg, k=k: self._on_probe_command(k, msg)) if io is not self
            else (lambda msg, k=k: self._on_command(k, msg)), qos)
            for k, ns in enumerate(self.namespaces)]
        self.description_pubs = []
        if p.publish_description:
            urdf = profile_urdf(profile, self.double.task)
            for ns in self.namespaces:
                pub = self.create_publisher(String, namespaced(ns, 'robot_description'),
                                            DESCRIPTION_QOS)
                pub.publish(String(data=urdf))
                self.description_pubs.append(pub)

    # ------------------------------------------------------------------ time
    def _advance(self, now: float, stamp) -> float:
        """Step the physics to the scaled clock at ``now``; return the simulated time."""
        d = self.double
        if self.sim_clock is None:  # the robots' time starts with the first tick
            self.sim_clock = ScaledClock(self.scale, self.max_lag, now)
            self._t0 = now
        target = self.sim_clock.target(now, d.sim_time)
        steps = d.advance_to(target)
        if steps:
            self.counters['steps'] += steps
            self._publish_sensors(stamp)
        return target

    def _tick(self) -> None:
        stamp = self.get_clock().now().to_msg()
        target = self._advance(time.monotonic(), stamp)
        if self._js_due.due(target):
            # The broadcaster reads the latest physics state on its own (scaled) clock.
            self._publish_joint_states(stamp)
            self._last_js = target

    # ------------------------------------------------------------------ latency probe
    def _start_probe(self, p) -> None:
        self.cycle_latency = CycleLatency(p.latency_probe_cycles)
        self._probe_exec = SingleThreadedExecutor(context=self.context)
        self._probe_exec.add_node(self._probe)
        self._probe_stop = threading.Event()
        self._probe_thread = threading.Thread(target=self._probe_loop, daemon=True,
                                              name='robot_double_probe')
        self._probe_thread.start()

    def _probe_loop(self) -> None:
        # Stamps: the scheduled times on the node clock (ROS time of monotonic t).
        offset = self.get_clock().now().nanoseconds - time.monotonic_ns()
        period = int(round(self.double.control_dt / self.scale * 1e9))
        due = time.monotonic_ns() + period
        probe = self.cycle_latency
        while not self._probe_stop.is_set():
            # Serve commands (timed in their callback) until the next deadline.
            while (left := due - time.monotonic_ns()) > 0 and not self._probe_stop.is_set():
                self._probe_exec.spin_once(timeout_sec=left * 1e-9)
            stamp = Time(nanoseconds=due + offset).to_msg()
            target = self._advance(due * 1e-9, stamp)
            probe.sent(time.monotonic_ns())
            self._publish_joint_states(stamp)
            self._last_js = target
            if probe.done:
                atomic_write_text(self.params.latency_probe_file, json.dumps(
                    {**probe.summary(), 'period_ms': period / 1e6}))
                self.done = True
                return
            due += period
            now = time.monotonic_ns()
            if due <= now:  # a stall: keep the phase, skip the periods missed
                due += ((now - due) // period + 1) * period

    def _on_probe_command(self, robot: int, msg) -> None:
        self.cycle_latency.arrived(time.monotonic_ns())
        self._on_command(robot, msg)

    # ------------------------------------------------------------------ publish
    def _publish_joint_states(self, stamp) -> None:
        s, js = self.double.state, self._js
        js.header.stamp = stamp
        for k, pub in enumerate(self.js_pubs):
            js.position = f64_array(s.joint_position[k])
            js.velocity = f64_array(s.joint_velocity[k])
            js.effort = f64_array(s.joint_effort[k])
            pub.publish(js)
        self.counters['joint_states'] += 1

    def _publish_sensors(self, stamp) -> None:
        d = self.double
        if self.imu_pubs:
            r = d.imu_reading()
            for k, pub in enumerate(self.imu_pubs):
                pub.publish(make_imu(stamp, self.frame_prefix[k] + 'imu', r['gyro'][k],
                                     r['accel'][k], None if r['quat'] is None else r['quat'][k]))
        if self.odom_pubs:
            self._publish_odom(stamp, d.base_state())
        if self.points_pubs and self._scan_due.due(d.sim_time):
            sim = d.sim
            for k, pub in enumerate(self.points_pubs):
                pub.publish(make_pointcloud(stamp, self.frame_prefix[k] + 'lidar',
                                            self.lidar.scan(sim.models[k], sim.data[k])))

    def _publish_odom(self, stamp, base: dict) -> None:
        root = self.double.base_link
        for k, pub in enumerate(self.odom_pubs):
            msg = Odometry()
            msg.header.stamp = stamp
            msg.header.frame_id = self.frame_prefix[k] + 'odom'
            msg.child_frame_id = self.frame_prefix[k] + root
            pose, twist = msg.pose.pose, msg.twist.twist
            pose.position.x, pose.position.y, pose.position.z = (float(v) for v in
                                                                 base['pos'][k])
            q = base['quat'][k]
            pose.orientation.w, pose.orientation.x = float(q[0]), float(q[1])
            pose.orientation.y, pose.orientation.z = float(q[2]), float(q[3])
            twist.linear.x, twist.linear.y, twist.linear.z = (float(v) for v in
                                                              base['linvel'][k])
            twist.angular.x, twist.angular.y, twist.angular.z = (float(v) for v in
                                                                 base['angvel'][k])
            pub.publish(msg)

    # ------------------------------------------------------------------ commands
    def _on_command(self, robot: int, msg) -> None:
        try:
            if isinstance(msg, Float64MultiArray):
                target = self.command_in.forward(msg.data)
            else:
                target = self._trajectory(robot, msg)
        except CommandRefused as exc:
            self.counters[f'refused_{exc.kind}'] += 1
            if exc.kind not in self._logged:
                self._logged.add(exc.kind)
                self.get_logger().error(
                    f'refused a command on {self.command_subs[robot].topic_name}: {exc} '
                    f'(holding the last good one; further `{exc.kind}` refusals are counted, '
                    'not logged)')
            return
        self.double.set_target(robot, target)
        self.counters['commands'] += 1

    def _trajectory(self, robot: int, msg: JointTrajectory):
        d = self.double
        start = d.sim_time
        stamp = msg.header.stamp
        if stamp.sec or stamp.nanosec:
            # Stamped start: the same offset from now, in simulated time.
            now = self.get_clock().now().nanoseconds * 1e-9
            start += (stamp.sec + stamp.nanosec * 1e-9 - now) * self.scale
        times = [_seconds(p.time_from_start) * self.scale for p in msg.points]
        if (stamp.sec or stamp.nanosec) and times and start + times[-1] < d.sim_time:
            # joint_trajectory_controller: "Received trajectory with non-zero start time
            # that ends in the past" -- a stamped command that arrived too late is dropped.
            raise CommandRefused('time', 'trajectory with a non-zero start time ends in the '
                                 'past (it arrived after its last point)')
        return self.command_in.trajectory(msg.joint_names, times,
                                          [p.positions for p in msg.points], start,
                                          d.setpoint(robot))

    # ------------------------------------------------------------------ stats
    def stats(self) -> dict:
        """Return the counters plus the simulated time and the achieved time scale."""
        if self.double is None:
            return self._final
        wall = max(time.monotonic() - self._t0, 1e-9)
        out = dict(self.counters, sim_time_s=round(self.double.sim_time, 4),
                   wall_s=round(wall, 3),
                   slipped_s=round(self.sim_clock.slipped if self.sim_clock else 0.0, 4),
                   unstable=self.double.unstable)
        sim = max(self.double.sim_time, 1e-9)
        out['achieved_time_scale'] = round(sim / wall, 4)
        # Broadcaster rate in simulated time (below the nominal one where ticks were late).
        n = self.counters['joint_states']
        out['joint_state_rate_hz'] = round((n - 1) / self._last_js, 2) if n > 1 else 0.0
        return out

    def close(self) -> None:
        """Write the stats file (if asked), release the simulator (once)."""
        if self.double is None:
            return
        if self._probe is not None:
            self._probe_stop.set()
            self._probe_thread.join(timeout=2.0)
            self._probe_exec.shutdown()
            self._probe.destroy_node()
        self._final = self.stats()
        if self.params.stats_file:
            atomic_write_text(self.params.stats_file, json.dumps(self._final, indent=2))
        self.get_logger().info(f'robot double: {json.dumps(self._final)}')
        self.double.close()
        self.double = None


def main(args=None):
    """Run the robot double node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(RobotDoubleNode, args)


if __name__ == '__main__':
    main()
