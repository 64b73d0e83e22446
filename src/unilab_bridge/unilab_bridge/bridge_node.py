# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Bridge node: batched MuJoCo simulation that publishes what robot drivers would.

Lock-step protocol: the node publishes the state of step ``seq`` (one batched
sensor_msgs/JointState, a ``task_state`` TensorBatch and /clock, all with the
same simulated stamp) and advances only when the safety gate's command for
that ``seq`` arrives on the safe-command topic, the only input it accepts.
If no command comes within ``state_timeout_s`` it re-sends the same state
(consumers de-duplicate by ``seq``), so a lost message cannot stall training.

Optional robot-like sensors (parameters ``imu``, ``lidar``, ``camera``; all off by
default) publish one message per env and step with the same stamp, frame ids
``env<i>/imu``, ``env<i>/lidar``, ``env<i>/camera``. Disturbances (parameters
``disturbances.*``, the config section of the same name) wrap the task; each
finished episode's disturbance parameters are appended to
``<run_dir>/disturbances.jsonl``.
"""

from __future__ import annotations

import json
import pathlib
import time

from builtin_interfaces.msg import Time
import numpy as np
from rcl_interfaces.msg import ParameterEvent
from rclpy.clock import Clock as RosClock, ClockType
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.time import Time as RosTime
from rclpy.type_support import check_for_type_support
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Image, Imu, JointState, PointCloud2
from std_msgs.msg import String
from unilab_bridge.params import BridgeNodeParams
from unilab_bridge.sensor_msgs_out import make_imu, make_pointcloud
from unilab_bridge.sensors import Lidar
from unilab_bridge.tasks import make_task, UnknownTaskError
from unilab_bridge.tasks.reach_reward import episode_success
from unilab_bridge.view_out import EnvView
from unilab_core import topics
from unilab_core.config import BridgeSection, ConfigError, DisturbancesSection
from unilab_core.joint_names import batched_joint_names
from unilab_core.ros.diagnostics import NodeDiagnostics
from unilab_core.ros.joint_state_topic import (joint_state_capacity, joint_state_msg,
                                               joint_state_tensors, KIND as KIND_JOINT_STATE,
                                               names_key)
from unilab_core.ros.params import declare_params
from unilab_core.ros.qos import DESCRIPTION_QOS, sensor_qos
from unilab_core.ros.tensor_msg import Batch, TensorMessageError
from unilab_core.ros.tensor_topic import (batch_capacity, close_endpoints,
                                          TensorPublisher, TensorSubscription)
from unilab_interfaces.msg import TensorBatch, TensorDescriptor

# rosidl loads a message type's C type support on first use (~30 ms for the first type of a
# process: rosidl_generator_py pulls in its code generator and lark). It does not depend on
# the model, so it is done with the other imports, at process start, rather than inside the
# model-to-first-observation path (``unilab bench bridge`` reports both).
for _msg_type in (ParameterEvent, JointState, Clock, TensorBatch, TensorDescriptor):
    check_for_type_support(_msg_type)


class BridgeNode(Node):
    """Step N simulated robots in lock-step with the safe command topic."""

    def __init__(self, **kwargs):
        super().__init__('bridge', **kwargs)
        self.params = p = declare_params(self, BridgeNodeParams)
        b, disturbances = p.bridge, p.disturbances
        task_name, seed, self.num_envs = p.run.task, p.run.seed, p.num_envs
        self.timeout, self.publish_clock = b.state_timeout_s, b.publish_clock
        self.camera_required = p.camera_required
        run_dir = p.run_dir
        try:
            self.task = make_task(task_name, self.num_envs, seed=seed,
                                  disturbances=disturbances)
        except UnknownTaskError as exc:
            raise ConfigError(f'bridge: parameter `run.task`: {exc}') from None
        # Log after the first publish: rclpy's first log call costs ~0.1 s (inspect).
        self._later = [('warning', f'disturbances: {n}') for n in getattr(self.task, 'notes', [])]
        self._episode_log = None
        if hasattr(self.task, 'pop_episode_log'):
            self._later.append(
                ('info', f'disturbances on: {", ".join(self.task.active_terms) or "none"}'))
            if run_dir:
                self._episode_log = pathlib.Path(run_dir) / 'disturbances.jsonl'
        self._sensor_envs = range(min(b.sensor_envs or self.num_envs, self.num_envs))
        self._setup_sensors(b, disturbances)
        self.seq = 0
        self.counters = {'steps': 0, 'republished': 0, 'stale_commands': 0, 'bad_commands': 0,
                         'episodes_ended': 0, 'episodes_judged': 0, 'episodes_succeeded': 0}
        self._logged: set[str] = set()
        js_names = batched_joint_names(self.task.joint_names, self.num_envs)
        self._js_key = names_key(js_names)
        qos = QoSProfile(depth=4)
        # Joint states through the transport (arrays in-process, no DDS); plain ROS
        # readers get sensor_msgs/JointState (unilab_core.ros.joint_state_topic).
        self.js_pub = TensorPublisher(
            self, topics.JOINT_STATES,
            joint_state_capacity(self.num_envs, len(self.task.joint_names)), qos=qos,
            standard_type=JointState, to_standard=joint_state_msg(js_names))
        # Zero-copy transport for the task state; the safe command is accepted from the
        # transport and from a plain TensorBatch publisher alike.
        n, e = self.num_envs, self.task.extras_dim
        self.task_pub = TensorPublisher(
            self, topics.TASK_STATE, batch_capacity({'extras': (n, e), 'step': (n, 5)}), qos=qos)
        self.clock_pub = self.create_publisher(Clock, topics.CLOCK, 10)
        self._local_clocks: list = []   # composed nodes' clocks, set directly (drive_clocks)
        # Only a bridge that publishes the clock may take the composed nodes' clocks over
        # (with publish_clock off their time comes from another /clock publisher).
        self.drives_sim_clock = bool(self.publish_clock)
        # Every message in order (``reliable``), depth 4: the safety's watchdog fallbacks
        # (published while a long step runs; a simulation ignores them) are read and
        # counted as ``fallback_commands``, never skipped: a 'latest' read counted each
        # as a transport loss (4-6 % of a training's messages) and could let one replace
        # the step's command.
        self.command_sub = TensorSubscription(
            self, topics.SAFE_COMMAND, self._on_command, qos=qos, depth=4, policy='reliable',
            on_error=lambda exc: self._bad(f'malformed command message: {exc}'))
        self.state = self.task.reset(seed=seed)
        sim = getattr(self.task, 'sim', None)
        self.counters['episodes_logged'] = 0
        self._last_pub = 0.0
        self._publish()
        #: time.monotonic() when observation seq 0 was out (``unilab bench bridge`` reads it).
        self.first_observation_at = self._last_pub
        # Now build what only stepping needs (the envs' MjData, see MjBatch) while the
        # policy computes the first action in its own process.
        if sim is not None and hasattr(sim, 'materialize'):
            sim.materialize()
        for level, text in self._later:
            getattr(self.get_logger(), level)(text)
        # Wall-clock timers: with use_sim_time a ROS timer would wait for the very
        # /clock this node publishes only after a step, and never re-send.
        steady = RosClock(clock_type=ClockType.STEADY_TIME)
        self.create_timer(self.timeout / 2.0, self._check_timeout, clock=steady)
        self.health = NodeDiagnostics(self, p.health, self._health_counters)
        self._publish_description(task_name)
        self.env_view = EnvView(self, self.task)  # env 0 for `unilab view --training`
        self.get_logger().info(
            f'{task_name}: {self.num_envs} envs, {len(self.task.joint_names)} joints, '
            f'control dt {self.task.control_dt:.3f} s, obs {self.task.obs_dim}, '
            f'act {self.task.action_dim} ({self.task.command_interface})')

    def _publish_description(self, task_name: str) -> None:
        """
        Latch the simulated robot's URDF, as a robot's robot_state_publisher does.

        On ``topics.SIM_ROBOT_DESCRIPTION``, the training graph's own name (a robot on
        the same domain keeps its ``/robot_description``). The envs share one model, so
        one URDF (its joints named as the JointState's after ``env<i>/``): a live view
        draws any env from it. After the first observation is out: the export does not
        delay the policy's start.
        """
        sim = getattr(self.task, 'sim', None)
        if getattr(sim, 'model', None) is None:  # a task without a MuJoCo model of ours
            self.description_pub = None
            return
        from unilab_bridge.urdf_export import urdf_from_model
        self.description_pub = self.create_publisher(String, topics.SIM_ROBOT_DESCRIPTION,
                                                     DESCRIPTION_QOS)
        self.description_pub.publish(String(data=urdf_from_model(
            sim.model, task_name, joint_limits=self.task.joint_limits)))

    def _setup_sensors(self, b: BridgeSection, dist: DisturbancesSection) -> None:
        want_imu, want_lidar, want_camera = b.imu, b.lidar, b.camera
        task = self.task
        sim = getattr(task, 'sim', None)
        self.imu_pub = self.points_pub = self.image_pub = None
        qos = sensor_qos(len(self._sensor_envs))  # one message per env and step, in a burst
        if want_imu:
            if getattr(task, 'has_imu', False):
                getattr(task, 'inner', task).enable_sensors(True)
                self.imu_pub = self.create_publisher(Imu, topics.IMU, qos)
                # Discrete white-noise variance of the injected noise (Kalibr: sigma^2 / dt).
                on = dist.enabled and dist.imu.enabled
                dt = task.control_dt
                self._imu_var = ((dist.imu.gyro_noise_density ** 2 / dt,
                                  dist.imu.accel_noise_density ** 2 / dt) if on else (0.0, 0.0))
            else:
                self._later.append(
                    ('warning', f'imu: task {task.name} has no IMU sensors; /imu is off'))
        self.lidar = None
        if want_lidar:
            try:
                if sim is None:
                    raise ValueError('not a UniLab MuJoCo task')
                self.lidar = Lidar(sim.model, channels=b.lidar_channels,
                                   horizontal_samples=b.lidar_horizontal_samples,
                                   max_range=b.lidar_range_m)
                self.points_pub = self.create_publisher(PointCloud2, topics.POINTS, qos)
            except ValueError as exc:
                self._later.append(('warning', f'lidar: {exc}; /points is off'))
        self.camera = None
        if want_camera:
            from unilab_bridge.camera import open_camera
            blur = dist.enabled and dist.camera.enabled
            self.camera, why = open_camera(sim, dist.camera.exposure_s if blur else 0.0)
            if self.camera is None and self.camera_required:
                raise ConfigError(f'bridge: camera images are in the observation '
                                  f'(perception.image) but rendering is unavailable: {why}')
            if self.camera is None:
                self._later.append(('warning', f'camera: rendering unavailable ({why}); '
                                    '/camera/image_raw is off'))
            else:
                self.image_pub = self.create_publisher(Image, topics.IMAGE, qos)
                self._later.append(('info', f'camera: rendering with {why}'))
        if not (want_imu or want_lidar or want_camera):
            self._later.append(
                ('info', 'sensors: imu, lidar and camera off (bridge.imu/lidar/camera)'))

    def _publish_sensors(self, t) -> None:
        envs = self._sensor_envs
        if self.imu_pub is not None:
            r = self.task.imu_reading()
            for i in envs:
                self.imu_pub.publish(make_imu(
                    t, f'env{i}/imu', r['gyro'][i], r['accel'][i],
                    None if r['quat'] is None else r['quat'][i], *self._imu_var))
        if self.lidar is not None:
            sim = self.task.sim
            for i in envs:
                self.points_pub.publish(make_pointcloud(
                    t, f'env{i}/lidar', self.lidar.scan(sim.models[i], sim.data[i])))
        if self.camera is not None:
            gyro = self.task.imu_reading()['gyro'] if getattr(self.task, 'has_imu', False) \
                else None
            for i in envs:
                self.image_pub.publish(self.camera.image_msg(
                    t, i, None if gyro is None else gyro[i]))

    def _write_episode_log(self) -> None:
        records = self.task.pop_episode_log()
        if not records:
            return
        self.counters['episodes_logged'] += len(records)
        if self._episode_log is not None:
            with self._episode_log.open('a') as f:
                f.write(''.join(json.dumps(r) + '\n' for r in records))

    def _stamp_ns(self, seq: int | None = None) -> int:
        return int(round((self.seq if seq is None else seq) * self.task.control_dt * 1e9))

    def _stamp_msg(self, seq: int) -> Time:
        ns = self._stamp_ns(seq)
        return Time(sec=ns // 1_000_000_000, nanosec=ns % 1_000_000_000)

    def drive_clocks(self, clocks: list) -> None:
        """
        Set ``clocks`` (this process's nodes on simulated time) at every step, directly.

        Called by ``unilab_core.ros.runtime.share_sim_clock`` for composed nodes, whose
        ``/clock`` subscriptions it drops: ``/clock`` then goes over DDS only while a reader
        outside the process (a recorder, a ``--multiprocess`` peer, RViz) subscribes.
        """
        self._local_clocks = list(clocks)

    def _tick_clocks(self, stamp_ns: int, t: Time) -> None:
        if self._local_clocks:
            now = RosTime(nanoseconds=stamp_ns, clock_type=ClockType.ROS_TIME)
            for clock in self._local_clocks:
                clock.set_ros_time_override(now)
            if self.clock_pub.get_subscription_count() == 0:
                return
        self.clock_pub.publish(Clock(clock=t))

    def _publish(self) -> None:
        s = self.state
        stamp_ns = self._stamp_ns()
        t = self._stamp_msg(self.seq)
        if self.publish_clock:
            self._tick_clocks(stamp_ns, t)
        self.js_pub.publish(KIND_JOINT_STATE, self.seq, joint_state_tensors(
            self._js_key, s.joint_position, s.joint_velocity, s.joint_effort),
            stamp_ns=stamp_ns)
        # Fresh float32 arrays: published arrays are handed over read-only.
        tensors = {k: np.array(v, dtype=np.float32) for k, v in (
            ('extras', s.extras), ('reward', s.reward), ('terminated', s.terminated),
            ('truncated', s.truncated), ('episode_return', s.episode_return),
            ('episode_length', s.episode_length))}
        self.task_pub.publish('task_state', self.seq, tensors, stamp_ns=stamp_ns)
        if self.imu_pub or self.points_pub or self.image_pub:
            self._publish_sensors(t)
        self._last_pub = time.monotonic()

    def _check_timeout(self) -> None:
        if time.monotonic() - self._last_pub > self.timeout:
            self.counters['republished'] += 1
            self._publish()

    def _on_command(self, batch: Batch) -> None:
        try:
            command = batch.tensors['command']
        except (TensorMessageError, KeyError) as exc:
            self._bad(f'malformed command message: {exc}')
            return
        if batch.kind != 'command':  # safety watchdog fallback/estop: a robot applies it
            self.counters['fallback_commands'] = self.counters.get('fallback_commands', 0) + 1
            return
        if batch.seq != self.seq:
            self.counters['stale_commands'] += 1
            return
        expected = (self.num_envs, self.task.action_dim)
        if command.shape != expected or not np.all(np.isfinite(command)):
            # The safety gate never sends this; refuse rather than step with it.
            self._bad(f'command shape {command.shape} (expected {expected}) or non-finite')
            return
        # A copy: a transport view is valid only during this callback, and delay
        # injection keeps commands for later steps.
        self.state = self.task.step(np.array(command))
        self.env_view.publish(command, self.state, self._stamp_msg(self.seq + 1))
        if self._episode_log is not None or hasattr(self.task, 'pop_episode_log'):
            self._write_episode_log()
        self.seq += 1
        self.counters['steps'] += 1
        self._count_episodes()
        self._publish()

    def _count_episodes(self) -> None:
        # Episodes that ended, and the success of those the task can judge (a reach).
        done = self.state.terminated | self.state.truncated
        if not done.any():
            return
        c = self.counters
        c['episodes_ended'] += int(done.sum())
        success = episode_success(self.task, done)
        if success is not None:
            c['episodes_judged'] += int(success.size)
            c['episodes_succeeded'] += int(success.sum())

    def _health_counters(self) -> dict:
        c = self.counters
        return {**c, 'stale': c['stale_commands'], 'dropped': c['bad_commands'],
                'messages': c['steps'] + c['stale_commands'] + c['bad_commands']
                + c.get('fallback_commands', 0)}

    def _bad(self, text: str) -> None:
        self.counters['bad_commands'] += 1
        if text not in self._logged:
            self._logged.add(text)
            self.get_logger().error(f'ignored: {text}')

    def close(self) -> None:
        """Release the simulator (and the renderer)."""
        if self.camera is not None:
            self.camera.close()
        self.task.close()

    def destroy_node(self):
        """Release transport endpoints (unlink shared memory), then destroy the node."""
        if hasattr(self, 'health'):
            self.health.close()
        close_endpoints(self)
        return super().destroy_node()


def main(args=None):
    """Run the bridge node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(BridgeNode, args)


if __name__ == '__main__':
    main()
