# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Point cloud and IMU through PerceptionNode: a synthetic lidar node to the observation."""

import array

from builtin_interfaces.msg import Time
import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_sensor_data, QoSProfile
from sensor_msgs.msg import Imu, JointState, PointCloud2
from unilab_core.config import ConfigError
from unilab_core.joint_names import batched_joint_names
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch
from unilab_perception.ingest import read_cloud
from unilab_perception.messages import make_cloud
from unilab_perception.perception_node import PerceptionNode
from unilab_perception.synthetic import lidar_scan

JOINTS = ['a', 'b']
N = 2
E = 1
F = 8
CLOUD_TOPIC = '/test_points'
IMU_TOPIC = '/test_imu'


def _params(**extra):
    base = {'num_envs': N, 'joint_names': JOINTS, 'extras_dim': E,
            'obs_dim': 2 * len(JOINTS) + E + F + 6, 'sensors.pointcloud': True,
            'sensors.imu': True, 'pointcloud.topic': CLOUD_TOPIC, 'imu.topic': IMU_TOPIC,
            'pointcloud.stages': ['roi', 'voxel', 'statistical_outlier'],
            'pointcloud.voxel_size': 0.3, 'bev.feature_dim': F, 'bev.channels': 4,
            'sync.slop_s': 0.01, 'encoder.device': 'cpu'}
    base.update(extra)
    return [Parameter(k, value=v) for k, v in base.items()]


class Lidar(Node):
    """A synthetic sensor driver: one Velodyne-style cloud per env, plus IMU and the step."""

    def __init__(self, context, names):
        super().__init__('synthetic_lidar', context=context)
        self.cloud_pub = self.create_publisher(PointCloud2, CLOUD_TOPIC, qos_profile_sensor_data)
        self.imu_pub = self.create_publisher(Imu, IMU_TOPIC, qos_profile_sensor_data)
        qos = QoSProfile(depth=10)
        self.js_pub = self.create_publisher(JointState, names.joint_states, qos)
        self.task_pub = self.create_publisher(TensorBatch, names.task_state, qos)
        self.received = []
        self.create_subscription(TensorBatch, names.observation, self.received.append, qos)

    def imu(self, env, stamp, gyro_z):
        msg = Imu()
        msg.header.stamp = Time(sec=stamp // 10**9, nanosec=stamp % 10**9)
        msg.header.frame_id = f'env{env}/imu'
        msg.orientation.w = 1.0
        msg.angular_velocity.z = gyro_z
        msg.linear_acceleration.z = 9.81
        self.imu_pub.publish(msg)

    def step(self, stamp, seq):
        names = batched_joint_names(JOINTS, N)
        js = JointState()
        js.header.stamp = Time(sec=stamp // 10**9, nanosec=stamp % 10**9)
        js.name = names
        js.position = array.array('d', [0.5 * i for i in range(len(names))])
        js.velocity = array.array('d', [-0.25 * i for i in range(len(names))])
        self.js_pub.publish(js)
        self.task_pub.publish(make_batch('task_state', seq, {
            'extras': np.array([[1.0], [2.0]]), 'reward': np.zeros(N),
            'terminated': np.zeros(N), 'truncated': np.zeros(N)}, stamp_ns=stamp))


@pytest.fixture
def graph(context, private_topics):
    """Yield (perception node, synthetic lidar, executor), connected."""
    yield from _connected(context, private_topics, _params())


@pytest.fixture
def height_map_graph(context, private_topics):
    """Yield the same with ``bev.output: height_map`` on a 3 x 4 grid of 4 m pillars."""
    yield from _connected(context, private_topics, _params(**{
        'bev.output': 'height_map', 'bev.x_range': [-8.0, 8.0], 'bev.y_range': [-6.0, 6.0],
        'bev.pillar_size': 4.0, 'obs_dim': 2 * len(JOINTS) + E + 6 + 2 * 3 * 4}))


def _connected(context, private_topics, params):
    node = PerceptionNode(context=context, cli_args=private_topics.args,
                          parameter_overrides=params)
    lidar = Lidar(context, private_topics)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(lidar)
    assert spin_until(executor, lambda: (
        lidar.cloud_pub.get_subscription_count() > 0
        and (node.imu is None or lidar.imu_pub.get_subscription_count())
        and lidar.js_pub.get_subscription_count() and lidar.task_pub.get_subscription_count()
        and node.pub.get_subscription_count() > 0), 5.0), 'discovery timed out'
    try:
        yield node, lidar, executor
    finally:
        executor.shutdown()
        lidar.destroy_node()
        node.destroy_node()


def test_cloud_and_imu_reach_the_observation(graph):
    node, lidar, executor = graph
    stamp = 5 * 10**9
    clouds = [make_cloud(lidar_scan(3000, rings=8, seed=s), stamp + 2_000_000, f'env{s}/lidar')
              for s in range(N)]
    # IMU at +-4 ms around the step: gyro_z 0.1 and 0.3 interpolate to 0.2 (env 0).
    for env in range(N):
        lidar.imu(env, stamp - 4_000_000, 0.1 + env)
        lidar.imu(env, stamp + 4_000_000, 0.3 + env)
    lidar.step(stamp, seq=3)
    spin_until(executor, lambda: node.imu[1].stamps and len(node.imu[1].stamps) == 2, 5.0)
    assert lidar.received == []  # waits for the clouds
    for c in clouds:
        lidar.cloud_pub.publish(c)
    assert spin_until(executor, lambda: lidar.received, 10.0), 'no observation'
    batch = read_batch(lidar.received[0])
    assert batch.seq == 3 and batch.stamp_ns == stamp
    obs = batch.tensors['obs']
    assert obs.shape == (N, 2 * len(JOINTS) + E + 6 + F)
    # [q, qd, extras] exactly as the joint-only path builds it.
    np.testing.assert_array_equal(obs[:, :2], [[0.0, 0.5], [1.0, 1.5]])
    np.testing.assert_array_equal(obs[:, 2:4], [[0.0, -0.25], [-0.5, -0.75]])
    np.testing.assert_array_equal(obs[:, 4], [1.0, 2.0])
    # IMU [gyro, accel] interpolated to the step stamp.
    np.testing.assert_allclose(obs[:, 5:11], [[0, 0, 0.2, 0, 0, 9.81], [0, 0, 1.2, 0, 0, 9.81]],
                               rtol=1e-6)
    # Cloud features: the pipeline and encoder applied to each env's cloud.
    expected = node.pipeline.encode([node.pipeline.process(read_cloud(c)) for c in clouds])
    np.testing.assert_allclose(obs[:, 11:], expected, rtol=1e-5, atol=1e-6)
    assert not np.allclose(obs[0, 11:], obs[1, 11:])
    assert node.counters == {'published': 1, 'fresh': 1, 'invalid': 0, 'unmatched': 0,
                             'withheld': 0, 'substituted': 0}
    assert node.diagnostics['frame_latency_ms'] and node.sensor_counters()['pointcloud'][
        'accepted'] == 1


def _height_map_by_hand(points, x0, y0, size, h, w):
    occ = np.zeros((h, w))
    top = np.zeros((h, w))
    for x, y, z in points[:, :3].astype(np.float64):
        ix, iy = int(np.floor((x - x0) / size)), int(np.floor((y - y0) / size))
        if 0 <= ix < w and 0 <= iy < h:
            top[iy, ix] = z if not occ[iy, ix] else max(top[iy, ix], z)
            occ[iy, ix] = 1.0
    return np.concatenate([occ.ravel(), top.ravel()])


def test_height_map_output_is_the_bev_grid(height_map_graph):
    node, lidar, executor = height_map_graph
    stamp = 7 * 10**9
    clouds = [make_cloud(lidar_scan(3000, rings=8, seed=s), stamp, f'env{s}/lidar')
              for s in range(N)]
    for env in range(N):
        lidar.imu(env, stamp, 0.0)
    lidar.step(stamp, seq=1)
    for c in clouds:
        lidar.cloud_pub.publish(c)
    assert spin_until(executor, lambda: lidar.received, 10.0), 'no observation'
    obs = read_batch(lidar.received[0]).tensors['obs']
    assert obs.shape == (N, 2 * len(JOINTS) + E + 6 + 24)
    for env, c in enumerate(clouds):
        pts = node.pipeline.process(read_cloud(c))
        expected = _height_map_by_hand(pts, -8.0, -6.0, 4.0, 3, 4)
        np.testing.assert_allclose(obs[env, 11:], expected, rtol=1e-6, atol=1e-6)
        assert expected[:12].sum() > 0 and np.ptp(expected[12:]) > 0  # occupied, varied
    assert node.counters == {'published': 1, 'fresh': 1, 'invalid': 0, 'unmatched': 0,
                             'withheld': 0, 'substituted': 0}


def test_malformed_cloud_is_dropped_counted_and_logged_once(graph):
    node, lidar, executor = graph
    bad = make_cloud(lidar_scan(500, rings=4), 10**9, 'env0/lidar')
    bad.row_step = bad.row_step + 4  # data no longer row_step * height
    lidar.cloud_pub.publish(bad)
    lidar.cloud_pub.publish(bad)
    nan = lidar_scan(200, rings=4)
    nan['x'] = np.nan
    lidar.cloud_pub.publish(make_cloud(nan, 10**9, 'env1/lidar'))
    lidar.cloud_pub.publish(make_cloud(lidar_scan(200, rings=4), 10**9, 'env7/lidar'))
    assert spin_until(executor, lambda: node.counters['invalid'] == 4, 5.0)
    assert node.diagnostics['invalid'] == {'pointcloud/data_length': 2, 'pointcloud/empty': 1,
                                           'pointcloud/frame_id': 1}
    assert node.drops.logged == {'pointcloud/data_length': 1, 'pointcloud/empty': 1,
                                 'pointcloud/frame_id': 1}


@pytest.mark.parametrize('key,value,match', [
    ('pointcloud.stages', ['roi', 'blur'], 'pointcloud.stages'),
    ('pointcloud.voxel_size', -0.1, 'pointcloud.voxel_size'),
    ('pointcloud.roi_min', [0.0, 0.0, 5.0], 'roi_min'),
    ('bev.x_range', [1.0, -1.0], 'x_range'),
    ('bev.output', 'voxels', 'bev.output'),
    ('bev.output', 'height_map', 'obs_dim'),  # 2 * 40 * 40 columns, not F
    ('sync.policy', 'sometimes', 'sync.policy'),
    ('obs_dim', 99, 'obs_dim'),
])
def test_bad_parameters_name_the_key(context, key, value, match):
    with pytest.raises(ConfigError, match=match):
        PerceptionNode(context=context, parameter_overrides=_params(**{key: value}))


@pytest.mark.parametrize('bad', ['nan', 'frame'])
@pytest.mark.parametrize('substitute', [False, True])
def test_a_rejected_cloud_is_not_replaced_by_its_neighbour_unless_configured(
        context, private_topics, substitute, bad):
    # bad 'frame': env 0's cloud names an env that does not exist (`env99/lidar`): it
    # cannot be attributed, yet it was the cloud of this step's stamp.
    # slop (30 ms) reaches the previous step (20 ms): a neighbour could stand in.
    params = _params(**{'sensors.imu': False, 'obs_dim': 2 * len(JOINTS) + E + F,
                        'sync.slop_s': 0.03, 'sync.substitute_rejected': substitute})
    for node, lidar, executor in _connected(context, private_topics, params):
        def step(stamp, seq, bad_env=None):
            # The clouds first (as the bridge publishes them), then the step that needs them.
            def seen():
                return (node.cloud.counters['received'] + node.cloud.counters['rejected']
                        + node.diagnostics['invalid'].get('pointcloud/frame_id', 0))
            received = seen()
            for env in range(N):
                pts = lidar_scan(500, rings=4, seed=env)
                frame = f'env{env}/lidar'
                if env == bad_env and bad == 'nan':
                    pts['x'] = np.nan  # every point: the cloud is refused (`empty`)
                elif env == bad_env:
                    frame = 'env99/lidar'
                lidar.cloud_pub.publish(make_cloud(pts, stamp, frame))
            assert spin_until(executor, lambda: seen() > received, 5.0)
            lidar.step(stamp, seq)

        s1, s2 = 10**9, 10**9 + 20_000_000
        step(s1, 1)
        assert spin_until(executor, lambda: len(lidar.received) == 1, 10.0)
        step(s2, 2, bad_env=0)
        assert spin_until(executor, lambda: node.counters['invalid'] == 1, 5.0)
        if substitute:  # served by step 1's clouds, and the count says so
            assert spin_until(executor, lambda: len(lidar.received) == 2, 5.0)
            assert node.counters['substituted'] == 1 and node.counters['withheld'] == 0
            # Every published step is either fresh or substituted: step 1 alone was fresh.
            assert node.counters['fresh'] == node.counters['published'] - 1
            continue
        spin_until(executor, lambda: len(lidar.received) > 1, 0.5)
        assert len(lidar.received) == 1 and node.counters['withheld'] == 1
        # A re-sent step (the bridge re-publishes on its timeout) brings valid clouds.
        step(s2, 2)
        assert spin_until(executor, lambda: len(lidar.received) == 2, 10.0)
        assert read_batch(lidar.received[1]).seq == 2
        assert node.counters['substituted'] == 0 and node.counters['withheld'] == 1
        assert node.counters['fresh'] == node.counters['published']  # none stood in
        assert node.sensor_counters()['pointcloud']['rejected'] == 1
