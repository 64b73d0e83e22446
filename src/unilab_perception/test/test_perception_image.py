# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Camera images through ImagePipeline and PerceptionNode: stages, CNN features, bad input."""

import array

from builtin_interfaces.msg import Time
import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import qos_profile_sensor_data, QoSProfile
from sensor_msgs.msg import Image, JointState
from unilab_core.config import ConfigError
from unilab_core.joint_names import batched_joint_names
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch
from unilab_perception.image_ops import UndistortMap
from unilab_perception.ingest import InvalidMessage
from unilab_perception.params import EncoderSection, ImageSection
from unilab_perception.perception_node import PerceptionNode
from unilab_perception.pipeline import ImagePipeline

JOINTS = ['a']
N = 2
F = 6
W, H = 16, 12
TOPIC = '/test_image'


def _image_msg(pixels: np.ndarray, stamp: int, frame: str, encoding='rgb8') -> Image:
    msg = Image()
    msg.header.stamp = Time(sec=stamp // 10**9, nanosec=stamp % 10**9)
    msg.header.frame_id = frame
    msg.height, msg.width = pixels.shape[:2]
    msg.encoding = encoding
    msg.step = pixels.shape[1] * pixels.shape[2] * pixels.itemsize
    msg.data = pixels.tobytes()
    return msg


def _pixels(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (H, W, 3), dtype=np.uint8)


def test_pipeline_scales_crops_and_checks_the_image():
    p = ImagePipeline(ImageSection(width=W, height=H, roi=[2, 1, 8, 6], feature_dim=F),
                      EncoderSection(device='cpu'))
    img = _pixels(0)
    out = p.process(img)
    assert out.shape == (3, 6, 8) and out.dtype == np.float32
    np.testing.assert_allclose(out, img[1:7, 2:10].transpose(2, 0, 1) / 255.0, rtol=1e-6)
    feats = p.encode([out, p.process(_pixels(1))])
    assert feats.shape == (2, F) and not np.allclose(feats[0], feats[1])
    with pytest.raises(InvalidMessage, match='size'):
        p.process(np.zeros((H + 1, W, 3), np.uint8))
    with pytest.raises(InvalidMessage, match='channels'):
        p.process(np.zeros((H, W, 1), np.uint8))
    with pytest.raises(InvalidMessage, match='nonfinite'):
        p.process(np.full((H, W, 3), np.nan, np.float32))


def test_pipeline_undistorts_with_the_camera_model_before_cropping():
    k = [20.0, 0.0, W / 2, 0.0, 20.0, H / 2, 0.0, 0.0, 1.0]
    d = [0.1, -0.05, 0.0, 0.0, 0.0]
    p = ImagePipeline(ImageSection(width=W, height=H, roi=[2, 1, 8, 6], camera_k=k,
                                   camera_d=d, feature_dim=F), EncoderSection(device='cpu'))
    img = _pixels(2)
    ref = UndistortMap((W, H), np.reshape(k, (3, 3)), d, roi=(2, 1, 8, 6))(img) / 255.0
    np.testing.assert_allclose(p.process(img), ref.transpose(2, 0, 1), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize('kw,match', [
    ({'roi': [0, 0, W + 1, H]}, 'image.roi'),
    ({'roi': [1, 2, 3]}, 'image.roi'),
    ({'camera_k': [1.0, 2.0]}, 'camera_k'),
    ({'camera_d': [0.1]}, 'camera_d'),
])
def test_bad_image_section_names_the_key(kw, match):
    with pytest.raises(ValueError, match=match):
        ImageSection(width=W, height=H, **kw)


def _params(**extra):
    base = {'num_envs': N, 'joint_names': JOINTS, 'extras_dim': 1,
            'obs_dim': 2 * len(JOINTS) + 1 + F, 'sensors.image': True, 'image.topic': TOPIC,
            'image.width': W, 'image.height': H, 'image.feature_dim': F,
            'sync.slop_s': 0.01, 'encoder.device': 'cpu'}
    base.update(extra)
    return [Parameter(k, value=v) for k, v in base.items()]


class Camera(Node):
    """A synthetic camera driver plus the step's joint state and task state."""

    def __init__(self, context, names):
        super().__init__('synthetic_camera', context=context)
        self.image_pub = self.create_publisher(Image, TOPIC, qos_profile_sensor_data)
        qos = QoSProfile(depth=10)
        self.js_pub = self.create_publisher(JointState, names.joint_states, qos)
        self.task_pub = self.create_publisher(TensorBatch, names.task_state, qos)
        self.received = []
        self.create_subscription(TensorBatch, names.observation, self.received.append, qos)

    def step(self, stamp, seq):
        js = JointState()
        js.header.stamp = Time(sec=stamp // 10**9, nanosec=stamp % 10**9)
        js.name = batched_joint_names(JOINTS, N)
        js.position = array.array('d', [0.5, 1.5])
        js.velocity = array.array('d', [-1.0, -2.0])
        self.js_pub.publish(js)
        self.task_pub.publish(make_batch('task_state', seq, {
            'extras': np.array([[1.0], [2.0]]), 'reward': np.zeros(N),
            'terminated': np.zeros(N), 'truncated': np.zeros(N)}, stamp_ns=stamp))


@pytest.fixture
def graph(context, private_topics):
    """Yield (perception node, synthetic camera, executor), connected."""
    node = PerceptionNode(context=context, cli_args=private_topics.args,
                          parameter_overrides=_params())
    cam = Camera(context, private_topics)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(cam)
    assert spin_until(executor, lambda: (
        cam.image_pub.get_subscription_count() > 0 and cam.js_pub.get_subscription_count()
        and cam.task_pub.get_subscription_count() and node.pub.get_subscription_count() > 0),
        5.0), 'discovery timed out'
    try:
        yield node, cam, executor
    finally:
        executor.shutdown()
        cam.destroy_node()
        node.destroy_node()


def test_images_reach_the_observation(graph):
    node, cam, executor = graph
    stamp = 3 * 10**9
    images = [_pixels(10 + env) for env in range(N)]
    cam.step(stamp, seq=4)
    spin_until(executor, lambda: node._waiting, 5.0)
    assert cam.received == []  # waits for every env's image
    for env, img in enumerate(images):
        cam.image_pub.publish(_image_msg(img, stamp + 1_000_000, f'env{env}/camera'))
    assert spin_until(executor, lambda: cam.received, 10.0), 'no observation'
    batch = read_batch(cam.received[0])
    assert batch.seq == 4 and batch.stamp_ns == stamp
    obs = batch.tensors['obs']
    assert obs.shape == (N, 2 * len(JOINTS) + 1 + F)
    np.testing.assert_array_equal(obs[:, :3], [[0.5, -1.0, 1.0], [1.5, -2.0, 2.0]])
    p = node.image_pipeline
    expected = p.encode([p.process(img) for img in images])
    np.testing.assert_allclose(obs[:, 3:], expected, rtol=1e-5, atol=1e-6)
    assert node.counters == {'published': 1, 'fresh': 1, 'invalid': 0, 'unmatched': 0,
                             'withheld': 0, 'substituted': 0}
    assert node.sensor_counters()['image']['accepted'] == 1


def test_bad_images_are_dropped_counted_and_logged_once(graph):
    node, cam, executor = graph
    good = _pixels(0)
    cam.image_pub.publish(_image_msg(good[:, :W - 2].copy(), 10**9, 'env0/camera'))  # size
    cam.image_pub.publish(_image_msg(good[:, :W - 2].copy(), 10**9, 'env1/camera'))
    cam.image_pub.publish(_image_msg(good, 10**9, 'env5/camera'))  # no such env
    odd = _image_msg(good, 10**9, 'env0/camera')
    odd.encoding = 'yuv9000'
    cam.image_pub.publish(odd)
    assert spin_until(executor, lambda: node.counters['invalid'] == 4, 5.0)
    assert node.diagnostics['invalid'] == {'image/size': 2, 'image/frame_id': 1,
                                           'image/unknown_encoding': 1}
    assert node.drops.logged == {k: 1 for k in node.diagnostics['invalid']}
    # The node keeps working: a good pair still makes an observation.
    cam.step(2 * 10**9, seq=1)
    for env in range(N):
        cam.image_pub.publish(_image_msg(_pixels(env), 2 * 10**9, f'env{env}/camera'))
    assert spin_until(executor, lambda: cam.received, 10.0)


def test_bad_image_parameters_stop_the_node_naming_the_key(context):
    bad_roi = _params(**{'image.roi': [0, 0, 99, 99]})
    with pytest.raises(ConfigError, match='image.roi'):
        PerceptionNode(context=context, parameter_overrides=bad_roi)
    with pytest.raises(ConfigError, match='obs_dim'):
        PerceptionNode(context=context, parameter_overrides=_params(obs_dim=3))
