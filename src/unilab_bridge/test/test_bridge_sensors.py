# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""BridgeNode sensors over real topics: Imu and Velodyne-style PointCloud2, decoded by rclpy."""

import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Imu, PointCloud2, PointField
from unilab_bridge.bridge_node import BridgeNode
from unilab_core.config import ConfigError
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch

N = 2
HOME = [0.5, -1.0] * 4


class SensorProbe(Node):
    """Record /imu, /points and task states; publish safe commands."""

    def __init__(self, context, names):
        super().__init__('sensor_probe', context=context)
        qos = QoSProfile(depth=10)
        self.imu, self.points, self.states = [], [], []
        self.create_subscription(Imu, names.imu, self.imu.append, qos)
        self.create_subscription(PointCloud2, names.points, self.points.append, qos)
        self.create_subscription(TensorBatch, names.task_state,
                                 lambda m: self.states.append(read_batch(m)), qos)
        self.cmd_pub = self.create_publisher(TensorBatch, names.safe_command, qos)


def _params(**extra):
    base = {'run.task': 'quad_walk', 'num_envs': N, 'run.seed': 0,
            'bridge.state_timeout_s': 0.2, 'bridge.imu': True, 'bridge.lidar': True,
            'bridge.lidar_horizontal_samples': 90, 'disturbances.enabled': True}
    base.update(extra)
    return [Parameter(k, value=v) for k, v in base.items()]


def test_imu_and_points_per_env_with_velodyne_layout(context, private_topics):
    probe = SensorProbe(context, private_topics)
    node = BridgeNode(context=context, cli_args=private_topics.args,
                      parameter_overrides=_params())
    ex = SingleThreadedExecutor(context=context)
    ex.add_node(node)
    ex.add_node(probe)
    try:
        frames = lambda msgs: {m.header.frame_id for m in msgs}  # noqa: E731
        assert spin_until(ex, lambda: frames(probe.imu) >= {'env0/imu', 'env1/imu'} and
                          frames(probe.points) >= {'env0/lidar', 'env1/lidar'} and
                          probe.cmd_pub.get_subscription_count() > 0, 10.0)
        imu = probe.imu[-1]
        acc = [imu.linear_acceleration.x, imu.linear_acceleration.y, imu.linear_acceleration.z]
        assert 8.0 < np.linalg.norm(acc) < 12.0  # gravity plus injected noise
        assert imu.angular_velocity_covariance[0] > 0.0  # the injected noise's variance
        q = imu.orientation
        assert abs(q.w ** 2 + q.x ** 2 + q.y ** 2 + q.z ** 2 - 1.0) < 1e-6

        cloud = probe.points[-1]
        layout = [(f.name, f.offset, f.datatype, f.count) for f in cloud.fields]
        assert layout == [('x', 0, PointField.FLOAT32, 1), ('y', 4, PointField.FLOAT32, 1),
                          ('z', 8, PointField.FLOAT32, 1),
                          ('intensity', 12, PointField.FLOAT32, 1),
                          ('ring', 16, PointField.UINT16, 1), ('time', 18, PointField.FLOAT32, 1)]
        assert cloud.point_step == 22 and cloud.height == 1
        assert len(cloud.data) == cloud.width * cloud.point_step > 0
        dt = np.dtype({'names': ['x', 'y', 'z', 'intensity', 'ring', 'time'],
                       'formats': ['<f4'] * 4 + ['<u2', '<f4'],
                       'offsets': [0, 4, 8, 12, 16, 18], 'itemsize': 22})
        pts = np.frombuffer(bytes(cloud.data), dtype=dt)
        assert np.all(np.isfinite(pts['x'])) and pts['ring'].max() < 16

        # Lock-step still advances on the safe command, and sensors follow the new stamp.
        probe.cmd_pub.publish(make_batch('command', 0, {'command': np.tile(HOME, (N, 1))}))
        assert spin_until(ex, lambda: node.seq == 1 and any(
            m.header.stamp.nanosec == int(node.task.control_dt * 1e9) for m in probe.imu), 5.0)
    finally:
        ex.shutdown()
        probe.destroy_node()
        node.close()
        node.destroy_node()


def test_sensors_off_by_default_and_bad_disturbance_param(context, private_topics):
    node = BridgeNode(context=context, cli_args=private_topics.args, parameter_overrides=[
        Parameter('run.task', value='arm6_reach'), Parameter('num_envs', value=1)])
    try:
        assert node.imu_pub is None and node.points_pub is None and node.camera is None
        assert not hasattr(node.task, 'inner')  # disturbances off by default
    finally:
        node.close()
        node.destroy_node()
    with pytest.raises(ConfigError, match=r'disturbances\.network\.action_drop_prob'):
        BridgeNode(context=context, cli_args=private_topics.args, parameter_overrides=_params(
            **{'disturbances.network.action_drop_prob': -0.5}))
