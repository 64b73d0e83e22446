# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Fuzz run: random and hostile messages into a real PerceptionNode through real topics.

For a few seconds a source node publishes, step by step, IMU samples and
point clouds for two envs, a JointState and a task state; about a third of
them are hostile (a catalogue of known breakages plus random layouts and
values). The test checks that the node keeps running (an exception in a
callback would surface from the executor), that no observation it publishes
holds a NaN, Inf or out-of-range value, that a step is published exactly when
all its messages were valid, and that every drop is counted under the kind
the ROS-free validators give for that message.
"""

import collections

from hostile import (cloud_msg, imu_msg, joint_state_msg, random_cloud, random_imu, task_tensors,
                     velodyne_fields)
import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_sensor_data, QoSProfile
from sensor_msgs.msg import Imu, JointState, PointCloud2
from unilab_core.joint_names import batched_joint_names, JointLayoutError
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch
from unilab_perception.ingest import (check_task_state, check_values, InvalidMessage,
                                      MAX_MAGNITUDE, read_cloud, read_imu)
from unilab_perception.joint_obs import joint_field
from unilab_perception.messages import make_cloud
from unilab_perception.perception_node import PerceptionNode
from unilab_perception.synthetic import lidar_scan

JOINTS = ['a', 'b']
N, E, F = 2, 1, 8
STEPS = 60
DT = 20_000_000  # 20 ms between steps; sync.slop_s (5 ms) never reaches a neighbour
CLOUD_TOPIC, IMU_TOPIC = '/fuzz_points', '/fuzz_imu'


class Source(Node):
    """Publishes the sensors, joint and task state; records every observation."""

    def __init__(self, context, names):
        super().__init__('fuzz_source', context=context)
        self.cloud_pub = self.create_publisher(PointCloud2, CLOUD_TOPIC, qos_profile_sensor_data)
        self.imu_pub = self.create_publisher(Imu, IMU_TOPIC, qos_profile_sensor_data)
        qos = QoSProfile(depth=50)
        self.js_pub = self.create_publisher(JointState, names.joint_states, qos)
        self.task_pub = self.create_publisher(TensorBatch, names.task_state, qos)
        self.received = []
        self.create_subscription(TensorBatch, names.observation, self.received.append, qos)


@pytest.fixture
def fuzz_graph(context, private_topics):
    """Yield (perception node with cloud + IMU + de-skew, source, executor), connected."""
    params = {'num_envs': N, 'joint_names': JOINTS, 'extras_dim': E,
              'obs_dim': 2 * len(JOINTS) + E + F + 6, 'sensors.pointcloud': True,
              'sensors.imu': True, 'pointcloud.topic': CLOUD_TOPIC, 'imu.topic': IMU_TOPIC,
              'pointcloud.stages': ['deskew', 'roi', 'voxel', 'statistical_outlier'],
              'pointcloud.voxel_size': 0.3, 'pointcloud.sor_k': 4, 'bev.feature_dim': F,
              'bev.channels': 4, 'sync.slop_s': 0.005, 'encoder.device': 'cpu'}
    node = PerceptionNode(context=context, cli_args=private_topics.args,
                          parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
    src = Source(context, private_topics)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(src)
    assert spin_until(executor, lambda: all(p.get_subscription_count() for p in (
        src.cloud_pub, src.imu_pub, src.js_pub, src.task_pub)) and
        node.pub.get_subscription_count() > 0, 5.0), 'discovery timed out'
    try:
        yield node, src, executor
    finally:
        executor.shutdown()
        src.destroy_node()
        node.destroy_node()


# ------------------------------------------------------------------ catalogue
def _scan(seed):
    return lidar_scan(300, rings=4, seed=seed)


def _cloud_variant(rng, stamp, env):
    """Return ``(msg, note)``: a valid cloud, a known breakage or a random one."""
    frame = f'env{env}/lidar'
    pts = _scan(int(rng.integers(0, 1000)))
    r = rng.random()
    if r < 0.65:
        return make_cloud(pts, stamp, frame), 'valid'
    if r < 0.8:
        return random_cloud(rng, stamp, frame), 'random'
    msg = make_cloud(pts, stamp, frame)
    case = int(rng.integers(0, 9))
    if case == 0:
        pts['intensity'] = np.nan  # only x, y, z used to be checked
        msg = make_cloud(pts, stamp, frame)
    elif case == 1:  # float64 x of 1e300: finite there, Inf in float32
        fields, step = velodyne_fields(8)
        vals = np.zeros((len(pts), 5))
        vals[:, 0], vals[:, 1], vals[:, 2] = 1e300, pts['y'], pts['z']
        msg = cloud_msg(fields, step, len(pts), 1, step * len(pts), vals.tobytes(),
                        stamp_ns=stamp, frame_id=frame)
    elif case == 2:
        msg.data = msg.data[:-1]
    elif case == 3:
        msg.point_step = 0
    elif case == 4:
        msg.fields[3].offset = msg.point_step
    elif case == 5:
        msg.fields[1].name = 'x'
    elif case == 6:
        msg.fields[0].datatype = 42
    elif case == 7:
        msg.fields[0].count = 3
    else:
        pts['time'] = np.nan  # refused where de-skew uses it
        msg = make_cloud(pts, stamp, frame)
    return msg, 'catalogue'


def _imu_variant(rng, stamp, env):
    frame = f'env{env}/imu'
    r = rng.random()
    gyro, acc = rng.normal(0, 0.3, 3), rng.normal(0, 0.3, 3) + [0, 0, 9.81]
    yaw = 0.1 * stamp * 1e-9
    quat = (0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2))
    if r < 0.58:
        return imu_msg(gyro, acc, quat, stamp_ns=stamp, frame_id=frame)
    if r < 0.65:  # valid, without an orientation estimate (covariance[0] = -1)
        return imu_msg(gyro, acc, (0.0, 0.0, 0.0, 0.0), cov=-1.0, stamp_ns=stamp,
                       frame_id=frame)
    if r < 0.8:
        return random_imu(rng, stamp, frame)
    case = int(rng.integers(0, 4))
    if case == 0:
        gyro = (1e300, 0.0, 0.0)  # finite in float64, the old check
    elif case == 1:
        acc = (0.0, 1e39, 0.0)  # Inf in float32
    elif case == 2:
        quat = (0.0, 0.0, 0.0, 0.5)
    else:
        quat = (np.nan, 0.0, 0.0, 1.0)
    return imu_msg(gyro, acc, quat, stamp_ns=stamp, frame_id=frame)


def _joint_variant(rng, stamp):
    names = batched_joint_names(JOINTS, N)
    q, qd = rng.normal(0, 1, len(names)), rng.normal(0, 1, len(names))
    if rng.random() < 0.75:
        return joint_state_msg(names, q, qd, stamp)
    case = int(rng.integers(0, 4))
    if case == 0:
        qd[1] = 1e300
    elif case == 1:
        q[0] = np.nan
    elif case == 2:
        names = names[1:]
        q, qd = q[1:], qd[1:]
    else:
        qd = qd[:-1]
    return joint_state_msg(names, q, qd, stamp)


def _task_variant(rng, seq, stamp):
    """Return ``(TensorBatch, tensors or None for a malformed message)``."""
    term = (rng.random(N) < 0.1).astype(np.float32)
    t = task_tensors(N, E, extras=rng.normal(0, 1, (N, E)).astype(np.float32),
                     reward=rng.normal(0, 1, N).astype(np.float32), terminated=term,
                     episode_return=np.where(term > 0, 3.0, np.nan).astype(np.float32),
                     episode_length=np.where(term > 0, 9.0, 0.0).astype(np.float32))
    if rng.random() < 0.75:
        return make_batch('task_state', seq, t, stamp_ns=stamp), t
    case = int(rng.integers(0, 8))
    if case == 0:
        t['extras'] = np.full((N, E), np.nan, np.float32)
    elif case == 1:
        t['reward'] = np.array([np.inf, 0.0], np.float32)
    elif case == 2:
        t['terminated'] = np.array([0.5, 0.0], np.float32)
    elif case == 3:
        t['episode_return'] = np.array([2.0, 1.0], np.float32) * (1 - term)
    elif case == 4:
        t['episode_length'] = np.array([-3.0, 0.0], np.float32)
    elif case == 5:
        del t['truncated']
    elif case == 6:
        t['extras'] = np.zeros((N, E + 2), np.float32)
    else:  # shape and data disagree: refused while decoding
        msg = make_batch('task_state', seq, t, stamp_ns=stamp)
        msg.tensors[0].shape = [N, E + 5]
        return msg, None
    return make_batch('task_state', seq, t, stamp_ns=stamp), t


# ------------------------------------------------------------------ oracle
def _verdict(fn, prefix):
    """Return the drop kind the validators give (None: valid)."""
    try:
        fn()
    except InvalidMessage as exc:
        return f'{prefix}/{exc.kind}'
    except JointLayoutError:
        return prefix
    return None


def test_fuzz_run_publishes_nothing_unusable_and_counts_every_drop(fuzz_graph):
    node, src, executor = fuzz_graph
    rng = np.random.default_rng(7)
    expected = collections.Counter()
    valid_steps, notes = 0, collections.Counter()

    def settle(what):
        ok = spin_until(executor, lambda: dict(node.drops.counts) == dict(+expected), 5.0)
        assert ok, f'{what}: counted {dict(node.drops.counts)}, expected {dict(+expected)}'

    for k in range(1, STEPS + 1):
        stamp = 10**9 + k * DT
        step_ok = True
        landed = []
        for env in range(N):
            msg = _imu_variant(rng, stamp, env)
            kind = _verdict(lambda: read_imu(msg), 'imu')
            expected.update([kind] if kind else [])
            step_ok &= kind is None
            if kind is None:
                landed.append(env)
            src.imu_pub.publish(msg)
        if rng.random() < 0.1:  # a sample for an env that does not exist, besides the others
            src.imu_pub.publish(imu_msg((0, 0, 0), (0, 0, 9.8), stamp_ns=stamp,
                                        frame_id='env7/imu'))
            expected['imu/frame_id'] += 1
        settle(f'step {k} imu')
        assert spin_until(executor, lambda: all(stamp in node.imu[e].stamps for e in landed), 5.0)
        items = []
        for env in range(N):
            msg, note = _cloud_variant(rng, stamp, env)
            notes[note] += 1
            rotation = node._imu_rotation(env, stamp)
            kind = _verdict(lambda: items.append(
                node.pipeline.process(read_cloud(msg), rotation)), 'pointcloud')
            # A valid scan is accepted and keeps its points (a NaN de-skew rotation would
            # empty it silently: the ROI test is False for NaN).
            assert note != 'valid' or (kind is None and len(items[-1]) > 0), kind
            expected.update([kind] if kind else [])
            step_ok &= kind is None
            src.cloud_pub.publish(msg)
        if rng.random() < 0.1:
            src.cloud_pub.publish(make_cloud(_scan(0), stamp, 'env9/lidar'))
            expected['pointcloud/frame_id'] += 1
        if step_ok:  # every env's cloud valid: the features are checked as a batch
            kind = _verdict(lambda: check_values(node.pipeline.encode(items), 'f'),
                            'pointcloud')
            expected.update([kind] if kind else [])
            step_ok &= kind is None
        settle(f'step {k} clouds')
        js = _joint_variant(rng, stamp)
        kind = _verdict(lambda: [joint_field(node.index, js.name, js.position, 'position'),
                                 joint_field(node.index, js.name, js.velocity, 'velocity')],
                        'joint_state')
        expected.update([kind] if kind else [])
        step_ok &= kind is None
        batch, tensors = _task_variant(rng, k, stamp)
        kind = 'task_state' if tensors is None else _verdict(
            lambda: check_task_state(tensors, N, E), 'task_state')
        expected.update([kind] if kind else [])
        step_ok &= kind is None
        src.js_pub.publish(js)
        src.task_pub.publish(batch)
        valid_steps += step_ok
        settle(f'step {k} joint/task state')
        assert spin_until(executor, lambda: node.counters['published'] == valid_steps, 5.0), (
            f"step {k}: published {node.counters['published']}, expected {valid_steps}; "
            f"{[read_batch(m).seq for m in src.received]} {dict(+expected)}")
    assert spin_until(executor, lambda: len(src.received) == valid_steps, 5.0)

    # Nothing unusable left the node; every drop was counted under its kind.
    bad_obs = 0
    for msg in src.received:
        t = read_batch(msg).tensors
        bad_obs += not np.all(np.abs(t['obs']) <= MAX_MAGNITUDE)
        bad_obs += not np.all(np.isfinite(t['reward']))
    assert bad_obs == 0
    assert node.counters['invalid'] == sum(expected.values()) == node.drops.total
    # The run did what it is for: most steps and some of each hostile kind went through it.
    assert valid_steps >= 3 and sum(expected.values()) >= STEPS
    assert notes['random'] and notes['catalogue']
    for family in ('imu/', 'pointcloud/', 'joint_state', 'task_state/'):
        assert any(k.startswith(family) for k in expected), family
    # Logged once per kind, then rate-limited: far fewer lines than drops.
    assert set(node.drops.logged) == set(expected)
    assert sum(node.drops.logged.values()) == len(expected)
