# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Perception node: joint state + task state (+ cloud, IMU, image) -> observation batch.

The joint path is the lock-step path of training: a JointState and a task
state with the same stamp make one observation ``[q, qd, extras]``. With
``sensors.pointcloud`` / ``sensors.image`` / ``sensors.imu`` on, the step waits
until every env's cloud and image within ``sync.slop_s`` (and IMU samples
around the stamp) are there and appends their features.

Every input is checked by the ROS-free functions of ``ingest`` / ``joint_obs``
in the precision it is used in. An invalid message is dropped, counted per kind
in ``diagnostics['invalid']`` and logged once per kind, then at most every
10 s per kind (``unilab_core.droplog``). A step whose own sensor message was
rejected is not served by a neighbouring message unless
``sync.substitute_rejected`` says so (then counted as ``substituted``; else it
waits, counted as ``withheld``). The assembled observation is checked once
more before it is published: nothing NaN, Inf or beyond
``ingest.MAX_MAGNITUDE`` leaves the node.
"""

from __future__ import annotations

import time

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Image, Imu, JointState, PointCloud2
from unilab_core import topics
from unilab_core.config import ConfigError
from unilab_core.droplog import DropLog
from unilab_core.joint_names import env_of, JointLayoutError, JointStateIndex
from unilab_core.rehearsal import Rehearsal
from unilab_core.ros.diagnostics import NodeDiagnostics
from unilab_core.ros.joint_state_topic import JointStateInput
from unilab_core.ros.params import declare_params
from unilab_core.ros.qos import sensor_qos
from unilab_core.ros.tensor_msg import Batch
from unilab_core.ros.tensor_topic import (batch_capacity, close_endpoints,
                                          TensorPublisher, TensorSubscription)

from unilab_perception import cloud_ops
from unilab_perception.assembler import ObservationAssembler
from unilab_perception.ingest import (check_task_state, check_values, InvalidMessage, OUTCOME,
                                      read_cloud, read_image, read_imu, stamp_ns)
from unilab_perception.joint_obs import joint_array
from unilab_perception.params import PerceptionNodeParams, SECTIONS
from unilab_perception.robot_source import RobotSource
from unilab_perception.timesync import interpolate_vector, SensorBuffer, used_stamps

#: Unmatched messages kept per source while waiting for the partner stamp.
MAX_PENDING = 32
PASS_THROUGH = OUTCOME


class PerceptionNode(Node):
    """Align joint states with task state (and sensors) by stamp and publish the observation."""

    def __init__(self, **kwargs):
        super().__init__('perception', **kwargs)
        self.params = p = declare_params(self, PerceptionNodeParams)
        self.num_envs, joint_names = p.num_envs, list(p.joint_names)
        self.uses_joint_state, self.extras_dim, self.obs_dim = (p.uses_joint_state,
                                                                p.extras_dim, p.obs_dim)
        self.cfg = {name: getattr(p, name) for name in SECTIONS}
        self.index = JointStateIndex(joint_names, self.num_envs)
        # Every step says what happened to it: published from its own sensor messages
        # (fresh) or with a neighbour standing in for a rejected one (substituted), or
        # held back waiting for a valid one (withheld), or never matched (unmatched).
        self.counters = {'published': 0, 'fresh': 0, 'invalid': 0, 'unmatched': 0,
                         'withheld': 0, 'substituted': 0}
        self.drops = DropLog(period_s=10.0)
        #: Per-kind invalid counts (``drops.counts``), frame latency (ms) samples.
        self.diagnostics = {'invalid': self.drops.counts, 'frame_latency_ms': []}
        self._withheld: set[int] = set()  # waiting steps whose own sensor message was rejected
        self._joint: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._task: dict[int, object] = {}
        self._waiting: dict[int, tuple] = {}
        widths = ({'q': len(joint_names), 'qd': len(joint_names)}
                  if self.uses_joint_state else {})
        widths['extras'] = self.extras_dim
        sensors, sync = self.cfg['sensors'], self.cfg['sync']
        self.slop_ns = int(sync.slop_s * 1e9)
        self.substitute = sync.substitute_rejected
        buf_args = dict(window_ns=int(sync.window_s * 1e9), policy=sync.policy,
                        max_latency_ns=int(sync.max_latency_s * 1e9) or None)
        self.cloud = None
        self.image = None
        self.imu = None
        if sensors.imu:
            self.imu = [SensorBuffer(f'imu/env{i}', capacity=256, **buf_args)
                        for i in range(self.num_envs)]
            widths['imu'] = 6
        if sensors.pointcloud:
            from unilab_perception.pipeline import CloudPipeline
            try:
                self.pipeline = CloudPipeline(self.cfg['pointcloud'], self.cfg['bev'],
                                              self.cfg['encoder'])
            except ValueError as exc:
                raise ConfigError(f'perception: parameter `encoder.device`: {exc}') from None
            self.cloud = SensorBuffer('pointcloud', capacity=MAX_PENDING, **buf_args)
            self._cloud_parts: dict[int, dict[int, tuple[np.ndarray, float]]] = {}
            widths['cloud'] = self.pipeline.feature_dim
        if sensors.image:
            from unilab_perception.pipeline import ImagePipeline
            try:
                self.image_pipeline = ImagePipeline(self.cfg['image'], self.cfg['encoder'])
            except ValueError as exc:
                raise ConfigError(f'perception: parameter `encoder.device`: {exc}') from None
            self.image = SensorBuffer('image', capacity=MAX_PENDING, **buf_args)
            self._image_parts: dict[int, dict[int, tuple[np.ndarray, float]]] = {}
            widths['image'] = self.cfg['image'].feature_dim
        self.assembler = ObservationAssembler(self.num_envs, widths)
        if self.obs_dim and self.obs_dim != self.assembler.width:
            raise ConfigError(
                f'perception: parameter `obs_dim` is {self.obs_dim} but the enabled parts '
                f'{self.assembler.layout} give {self.assembler.width}')
        qos = QoSProfile(depth=4)
        # Zero-copy transport for the observation batch and the task state.
        self.pub = TensorPublisher(
            self, topics.OBSERVATION,
            batch_capacity({'obs': (self.num_envs, self.assembler.width),
                            'step': (self.num_envs, len(PASS_THROUGH))}), qos=qos)
        # Joint states: arrays from the bridge through the transport (no DDS in one
        # process), or a robot driver's sensor_msgs/JointState mapped by name
        # (unilab_core.ros.joint_state_topic).
        self.js_input = JointStateInput(joint_names, self.num_envs)
        self.js_sub = TensorSubscription(
            self, topics.JOINT_STATES, self._on_joint_state, qos=qos,
            standard_type=JointState, from_standard=self.js_input.from_standard,
            on_error=lambda exc: self._invalid('joint_state', str(exc)), deliver='inline')
        self.robot = None
        self.rehearsal: Rehearsal | None = None  # unilab_core.ros.runtime.spin_nodes runs it
        self._rehearse_q: np.ndarray | None = None
        if p.source == 'robot':
            # A robot: the task's extras from standard messages, at the control rate.
            try:
                self.robot = RobotSource(self, p, qos)
            except (ValueError, OSError) as exc:
                raise ConfigError(f'perception: task inputs: {exc}') from None
            # The chain (this node's task inputs, the policy's network, a shadow of the
            # gate) runs once on the last joint state shortly before the next is due.
            if p.rehearse_lead_ms > 0:
                self.rehearsal = Rehearsal(p.rehearse_lead_ms * 1e-3, counters=self.counters,
                                           log=self.get_logger().warning)
        else:
            self.task_sub = TensorSubscription(
                self, topics.TASK_STATE, self._on_task_state, qos=qos,
                on_error=lambda exc: self._invalid('task_state', str(exc)), deliver='inline')
        sensor = sensor_qos(self.num_envs, reliable=False)
        if self.cloud is not None:
            self.create_subscription(PointCloud2, self.cfg['pointcloud'].topic,
                                     self._on_cloud, sensor)
        if self.imu is not None:
            self.create_subscription(Imu, self.cfg['imu'].topic, self._on_imu, sensor)
        if self.image is not None:
            self.create_subscription(Image, self.cfg['image'].topic, self._on_image,
                                     sensor)
        encoders = [x for x in (getattr(self, 'pipeline', None),
                                getattr(self, 'image_pipeline', None)) if x is not None]
        self.health = NodeDiagnostics(self, p.health, self._health_counters,
                                      device=encoders[0].device if encoders else None)

    # -- bookkeeping -----------------------------------------------------
    def _invalid(self, kind: str, why: str) -> None:
        # Counted always, logged rate-limited: a flood of identical log lines
        # would hide everything else and cost time on the control path.
        self.counters['invalid'] += 1
        line = self.drops.drop(kind, why)
        if line is not None:
            self.get_logger().error(line)

    def sensor_counters(self) -> dict:
        """Return per-sensor sync counters and latency (for diagnostics and the summary)."""
        out = {}
        bufs = ([b for b in (self.cloud, self.image) if b is not None]) + (self.imu or [])
        for b in bufs:
            out[b.name] = {**b.counters, 'latency_ms': b.latency_ms()}
        return out

    def _env_of(self, frame_id: str) -> int | None:
        env = env_of(frame_id) or 0
        return env if env < self.num_envs else None

    # -- joint / task lock-step path --------------------------------------
    def _on_joint_state(self, batch: Batch) -> None:
        stamp = batch.stamp_ns
        if not self.uses_joint_state:
            self._joint[stamp] = (None, None)
        else:
            try:
                f = self.js_input.fields(batch)
                q = joint_array(f['position'], 'position')
                qd = joint_array(f['velocity'], 'velocity')
            except (JointLayoutError, KeyError) as exc:
                self._invalid('joint_state', f'no {exc} field' if isinstance(exc, KeyError)
                              else str(exc))
                return
            self._joint[stamp] = (q, qd)
        if self.robot is not None:
            q, qd = self._joint.pop(stamp)
            step = self.robot.step(stamp, q)
            if step is not None:
                if self.rehearsal is not None:
                    self.rehearsal.observe(time.monotonic())
                    self._rehearse_q = q
                self._waiting[stamp] = (q, qd, step)
                self._bound(self._waiting)
                self._flush()
            return
        self._bound(self._joint)
        self._try_emit(stamp)

    def rehearse(self) -> None:
        """Warm the robot path: the task inputs of the last control step's joints, unused."""
        if self.robot is not None and self._rehearse_q is not None:
            self.robot.rehearse(self._rehearse_q)

    def _on_task_state(self, batch: Batch) -> None:
        try:
            check_task_state(batch.tensors, self.num_envs, self.extras_dim)
        except InvalidMessage as exc:
            self._invalid(f'task_state/{exc.kind}', exc.reason)
            return
        self._task[batch.stamp_ns] = batch
        self._bound(self._task)
        self._try_emit(batch.stamp_ns)

    def _bound(self, store: dict) -> None:
        # A source that never gets its partner (a driver without task state,
        # a dead bridge) must not grow memory: keep the newest MAX_PENDING.
        while len(store) > MAX_PENDING:
            del store[min(store)]
            self.counters['unmatched'] += 1

    def _try_emit(self, stamp: int) -> None:
        if stamp not in self._joint or stamp not in self._task:
            return
        q, qd = self._joint.pop(stamp)
        batch = self._task.pop(stamp)
        # Anything older than the matched stamp can never be matched any more.
        for store in (self._joint, self._task):
            for old in [s for s in store if s < stamp]:
                del store[old]
                self.counters['unmatched'] += 1
        self._waiting[stamp] = (q, qd, batch)
        self._bound(self._waiting)
        self._withheld.intersection_update(self._waiting)
        self._flush()

    # -- extra sensors -----------------------------------------------------
    def _serves(self, buf: SensorBuffer, stamp: int, used: tuple[int, ...] | None,
                substituted: list) -> bool:
        """Return whether ``used`` may serve ``stamp`` (never silently in place of a rejected)."""
        if used is None:
            return False
        if buf.replaces_rejected(stamp, used):
            if not self.substitute:
                if stamp not in self._withheld:
                    self._withheld.add(stamp)
                    self.counters['withheld'] += 1
                return False
            substituted.append(buf.name)
        return True

    def _sensor_parts(self, stamp: int):
        """
        Return ``(parts, arrival, substituted)`` for ``stamp``, or None if not ready.

        ``arrival``: the first arrival of the cloud / image used; ``substituted``:
        the sensors whose rejected message a neighbour stands in for.
        """
        parts, arrival, substituted = {}, None, []
        for name, buf in (('cloud', self.cloud), ('image', self.image)):
            if buf is None:
                continue
            hit = buf.nearest(stamp, self.slop_ns)
            if not self._serves(buf, stamp, hit and (hit[0],), substituted):
                return None
            parts[name], first = hit[1]
            arrival = first if arrival is None else min(arrival, first)
        if self.imu is not None:
            rows = []
            for buf in self.imu:
                if not self._serves(buf, stamp, used_stamps(buf, stamp, self.slop_ns),
                                    substituted):
                    return None
                rows.append(interpolate_vector(buf, stamp, self.slop_ns,
                                               key=lambda s: np.r_[s.angular_velocity,
                                                                   s.linear_acceleration]))
            parts['imu'] = np.asarray(rows, np.float32)
        return parts, arrival, substituted

    def _flush(self) -> None:
        """Emit every waiting step whose sensors are ready, oldest first."""
        for stamp in sorted(self._waiting):
            ready = self._sensor_parts(stamp)
            if ready is None:
                continue
            q, qd, batch = self._waiting.pop(stamp)
            self._withheld.discard(stamp)
            parts, arrival, substituted = ready
            parts['extras'] = batch.tensors['extras']
            if self.uses_joint_state:
                parts['q'], parts['qd'] = q, qd
            # A copy: the assembler reuses its buffer, published arrays are handed over.
            obs = np.array(self.assembler(parts), dtype=np.float32)
            try:  # every part was checked; this guards the assembly itself
                check_values(obs, 'obs')
            except InvalidMessage as exc:
                self._invalid('observation/nonfinite', exc.reason)
                continue
            self.counters['substituted'] += len(substituted)
            self.counters['fresh'] += not substituted
            tensors = {'obs': obs}
            tensors.update({k: batch.tensors[k] for k in PASS_THROUGH if k in batch.tensors})
            self.pub.publish('observation', batch.seq, tensors, stamp_ns=stamp)
            self.counters['published'] += 1
            if arrival is not None:
                self.diagnostics['frame_latency_ms'].append(
                    (time.perf_counter() - arrival) * 1e3)
                del self.diagnostics['frame_latency_ms'][:-1024]
            for old in [s for s in self._waiting if s < stamp]:
                del self._waiting[old]
                self._withheld.discard(old)
                self.counters['unmatched'] += 1

    def _on_imu(self, msg: Imu) -> None:
        env = self._env_of(msg.header.frame_id)
        if env is None:
            self._invalid('imu/frame_id', f'frame_id `{msg.header.frame_id}` names no env')
            # Whose sample it was is unknown: no env may bridge this stamp silently (an
            # env whose valid sample of this stamp is kept stays served by it).
            for buf in self.imu:
                buf.reject(stamp_ns(msg.header))
            return
        try:
            sample = read_imu(msg)
        except InvalidMessage as exc:
            self._invalid(f'imu/{exc.kind}', exc.reason)
            self.imu[env].reject(stamp_ns(msg.header))
            return
        if self.imu[env].push(sample.stamp_ns, sample) == 'dropped_out_of_order':
            self._invalid('imu/non_monotonic_stamp', 'stamp older than the reorder window')
            return
        self._flush()

    def _imu_rotation(self, env: int, cloud_stamp: int):
        """Return a ``point_rotation`` callback from the env's IMU orientations, or None."""
        if self.imu is None:
            return None
        buf = self.imu[env]
        with_q = [(s, v.orientation) for s, v in zip(buf.stamps, buf.values)
                  if v.orientation is not None]
        if len(with_q) < 2:
            return None
        stamps = np.array([s for s, _ in with_q], np.float64) * 1e-9
        quats = np.array([q for _, q in with_q])
        # Only samples with an orientation (an Imu without one, covariance[0] = -1, is
        # valid for the rates but has nothing to interpolate): covered within slop.
        slop = self.slop_ns * 1e-9
        if not stamps[0] - slop <= cloud_stamp * 1e-9 <= stamps[-1] + slop:
            return None
        ref = cloud_ops.interpolate_orientation(stamps, quats, np.array([cloud_stamp * 1e-9]))[0]

        def rotation(times):
            t = cloud_stamp * 1e-9 + times
            return cloud_ops.interpolate_orientation(stamps, quats, t), ref
        return rotation

    def _on_cloud(self, msg: PointCloud2) -> None:
        self._on_frame('pointcloud', msg, lambda env, stamp: self.pipeline.process(
            read_cloud(msg), self._imu_rotation(env, stamp)),
            self._cloud_parts, self.pipeline.encode, self.cloud)

    def _on_image(self, msg: Image) -> None:
        self._on_frame('image', msg, lambda env, stamp: self.image_pipeline.process(
            read_image(msg)), self._image_parts, self.image_pipeline.encode, self.image)

    def _on_frame(self, kind: str, msg, process, pending: dict, encode, buffer) -> None:
        """Validate and process one env's frame; encode and buffer once every env has one."""
        arrival = time.perf_counter()
        stamp = stamp_ns(msg.header)
        env = self._env_of(msg.header.frame_id)
        try:
            if env is None:
                raise InvalidMessage('frame_id', f'frame_id `{msg.header.frame_id}` names no '
                                     f'env < {self.num_envs}')
            item = process(env, stamp)
        except InvalidMessage as exc:
            self._invalid(f'{kind}/{exc.kind}', exc.reason)
            # The step of this stamp lost a frame even when the frame names no env we have:
            # remember it for the batch, or a neighbour's frame would serve it silently.
            buffer.reject(stamp)
            return
        feats = self._collect(pending, stamp, env, item, arrival, encode)
        if feats is None:
            return
        try:  # finite inputs can still give Inf features (e.g. z = 1e18 through a linear layer)
            check_values(feats[0], 'features', 'nonfinite_features')
        except InvalidMessage as exc:
            self._invalid(f'{kind}/{exc.kind}', exc.reason)
            buffer.reject(stamp)
            return
        if buffer.push(stamp, feats) == 'dropped_out_of_order':
            self._invalid(f'{kind}/non_monotonic_stamp', 'stamp older than the reorder window')
            return
        self._flush()

    def _collect(self, pending: dict, stamp: int, env: int, item, arrival: float, encode):
        """
        Keep one env's processed item; when every env has one for ``stamp``, encode them.

        Returns ``(features [N, d], first arrival)`` or None while envs are missing.
        """
        parts = pending.setdefault(stamp, {})
        parts[env] = (item, min(arrival, parts.get(env, (None, arrival))[1]))
        while len(pending) > MAX_PENDING:
            del pending[min(pending)]
            self.counters['unmatched'] += 1
        if len(parts) < self.num_envs:
            return None
        del pending[stamp]
        first = min(a for _, a in parts.values())
        return encode([parts[i][0] for i in range(self.num_envs)]), first

    def _health_counters(self) -> dict:
        c = self.counters
        return {**c, 'dropped': c['invalid'], 'stale': c['unmatched'],
                'messages': c['published'] + c['invalid'] + c['unmatched']}

    def destroy_node(self):
        """Release transport endpoints (unlink shared memory), then destroy the node."""
        if hasattr(self, 'health'):
            self.health.close()
        close_endpoints(self)
        return super().destroy_node()


def main(args=None):
    """Run the perception node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(PerceptionNode, args)


if __name__ == '__main__':
    main()
