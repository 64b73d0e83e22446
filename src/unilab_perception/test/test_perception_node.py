# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""PerceptionNode over real topics: JointState + task_state in, observation out."""

import array

from builtin_interfaces.msg import Time
import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from unilab_core.joint_names import batched_joint_names
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch
from unilab_perception.perception_node import PerceptionNode

JOINTS = ['shoulder', 'elbow', 'wrist']
N = 2
E = 2


class Probe(Node):
    """Test side: publishes joint and task state, records observations."""

    def __init__(self, context, names):
        super().__init__('perception_probe', context=context)
        qos = QoSProfile(depth=10)
        self.js_pub = self.create_publisher(JointState, names.joint_states, qos)
        self.task_pub = self.create_publisher(TensorBatch, names.task_state, qos)
        self.received = []
        self.create_subscription(TensorBatch, names.observation, self.received.append, qos)


@pytest.fixture
def graph(context, private_topics):
    """Yield (perception node, probe, executor), connected."""
    node = PerceptionNode(context=context, cli_args=private_topics.args, parameter_overrides=[
        Parameter('num_envs', value=N), Parameter('joint_names', value=JOINTS),
        Parameter('extras_dim', value=E), Parameter('obs_dim', value=2 * len(JOINTS) + E)])
    assert node.pub.topic_name == private_topics.observation
    probe = Probe(context, private_topics)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(probe)
    assert spin_until(executor, lambda: (
        probe.js_pub.get_subscription_count() > 0
        and probe.task_pub.get_subscription_count() > 0
        and node.pub.get_subscription_count() > 0), 5.0), 'discovery timed out'
    try:
        yield node, probe, executor
    finally:
        executor.shutdown()
        probe.destroy_node()
        node.destroy_node()


def _joint_state(stamp_ns, names, q, qd):
    msg = JointState()
    msg.header.stamp = Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
    msg.name = list(names)
    msg.position = array.array('d', q)
    msg.velocity = array.array('d', qd)
    return msg


def _layout(seed):
    """Return (shuffled names, q and qd per name, expected [N, J] q and qd)."""
    names = batched_joint_names(JOINTS, N)
    # Exactly representable in float32: 0.25 * (10 * env + joint).
    q_exp = np.array([[0.25 * (10 * i + k) for k in range(len(JOINTS))] for i in range(N)])
    qd_exp = -2.0 * q_exp - 0.5
    q_by = {n: q_exp.flat[i] for i, n in enumerate(names)}
    qd_by = {n: qd_exp.flat[i] for i, n in enumerate(names)}
    shuffled = [names[i] for i in np.random.default_rng(seed).permutation(len(names))]
    assert shuffled != names
    return shuffled, [q_by[n] for n in shuffled], [qd_by[n] for n in shuffled], q_exp, qd_exp


def _task_state(seq, stamp_ns, extras):
    tensors = {
        'extras': extras, 'reward': np.array([0.5, -1.0]),
        'terminated': np.array([0.0, 1.0]), 'truncated': np.zeros(N),
        'episode_return': np.array([np.nan, 3.5]), 'episode_length': np.array([0.0, 7.0]),
    }
    return make_batch('task_state', seq, tensors, stamp_ns=stamp_ns)


EXTRAS = np.array([[1.5, -2.0], [0.125, 4.0]], dtype=np.float32)


def test_observation_in_configured_joint_order(graph):
    node, probe, executor = graph
    names, q, qd, q_exp, qd_exp = _layout(seed=1)
    stamp = 3 * 10**9 + 40_000_000
    probe.js_pub.publish(_joint_state(stamp, names, q, qd))
    probe.task_pub.publish(_task_state(7, stamp, EXTRAS))
    assert spin_until(executor, lambda: probe.received, 5.0), 'no observation'
    batch = read_batch(probe.received[0])
    assert batch.kind == 'observation'
    assert batch.seq == 7 and batch.stamp_ns == stamp
    expected = np.concatenate([q_exp, qd_exp, EXTRAS], axis=1).astype(np.float32)
    np.testing.assert_array_equal(batch.tensors['obs'], expected)
    np.testing.assert_array_equal(batch.tensors['reward'], [0.5, -1.0])
    np.testing.assert_array_equal(batch.tensors['terminated'], [0.0, 1.0])
    np.testing.assert_array_equal(batch.tensors['episode_length'], [0.0, 7.0])
    np.testing.assert_array_equal(batch.tensors['episode_return'], [np.nan, 3.5])
    assert node.counters == {'published': 1, 'fresh': 1, 'invalid': 0, 'unmatched': 0,
                             'withheld': 0, 'substituted': 0}


def test_task_state_first_then_joint_state_also_matches(graph):
    node, probe, executor = graph
    names, q, qd, q_exp, qd_exp = _layout(seed=2)
    probe.task_pub.publish(_task_state(1, 20_000_000, EXTRAS))
    assert spin_until(executor, lambda: node._task, 5.0)
    probe.js_pub.publish(_joint_state(20_000_000, names, q, qd))
    assert spin_until(executor, lambda: probe.received, 5.0), 'no observation'
    obs = read_batch(probe.received[0]).tensors['obs']
    np.testing.assert_array_equal(obs[:, :len(JOINTS)], q_exp.astype(np.float32))


def test_missing_joint_is_dropped_and_node_recovers(graph):
    node, probe, executor = graph
    names, q, qd, q_exp, qd_exp = _layout(seed=3)
    bad = [i for i, n in enumerate(names) if n != 'env1/elbow']
    stamp = 10**9
    probe.task_pub.publish(_task_state(4, stamp, EXTRAS))
    probe.js_pub.publish(_joint_state(stamp, [names[i] for i in bad], [q[i] for i in bad],
                                      [qd[i] for i in bad]))
    assert spin_until(executor, lambda: node.counters['invalid'] == 1, 5.0)
    assert spin_until(executor, lambda: stamp in node._task, 5.0)
    spin_until(executor, lambda: probe.received, 0.3)
    assert probe.received == []
    assert node.counters['published'] == 0

    # The next good step goes through; the orphaned task state is pruned.
    stamp2 = stamp + 20_000_000
    probe.js_pub.publish(_joint_state(stamp2, names, q, qd))
    probe.task_pub.publish(_task_state(5, stamp2, EXTRAS))
    assert spin_until(executor, lambda: probe.received, 5.0), 'node did not recover'
    batch = read_batch(probe.received[0])
    assert batch.seq == 5
    expected = np.concatenate([q_exp, qd_exp, EXTRAS], axis=1).astype(np.float32)
    np.testing.assert_array_equal(batch.tensors['obs'], expected)
    assert node.counters == {'published': 1, 'fresh': 1, 'invalid': 1, 'unmatched': 1,
                             'withheld': 0, 'substituted': 0}


def test_non_finite_joint_state_is_dropped(graph):
    node, probe, executor = graph
    names, q, qd, _, _ = _layout(seed=4)
    qd[2] = float('nan')
    probe.js_pub.publish(_joint_state(10**9, names, q, qd))
    assert spin_until(executor, lambda: node.counters['invalid'] == 1, 5.0)
    assert not node._joint


@pytest.mark.parametrize('extras', [
    np.zeros((N, E + 1), np.float32),  # wrong width
    np.zeros((N + 1, E), np.float32),  # wrong env count
    np.zeros(N * E, np.float32),  # flat
])
def test_task_state_with_wrong_extras_shape_is_dropped(graph, extras):
    node, probe, executor = graph
    names, q, qd, _, _ = _layout(seed=5)
    stamp = 2 * 10**9
    probe.js_pub.publish(_joint_state(stamp, names, q, qd))
    probe.task_pub.publish(_task_state(9, stamp, extras))
    assert spin_until(executor, lambda: node.counters['invalid'] == 1, 5.0)
    assert spin_until(executor, lambda: stamp in node._joint, 5.0)
    spin_until(executor, lambda: probe.received, 0.3)
    assert probe.received == []
    assert not node._task


def test_task_state_without_extras_is_dropped(graph):
    node, probe, executor = graph
    msg = make_batch('task_state', 0, {'reward': np.zeros(N)}, stamp_ns=0)
    probe.task_pub.publish(msg)
    assert spin_until(executor, lambda: node.counters['invalid'] == 1, 5.0)
    assert not node._task
