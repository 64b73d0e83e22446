# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""BridgeNode over real topics: lock-step state out, safe command in."""

import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from unilab_bridge.bridge_node import BridgeNode
from unilab_core.config import ConfigError
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch

N = 2
J = 6
E = 9
ARM6_JOINTS = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
               'wrist_2_joint', 'wrist_3_joint']


def _stamp_ns(t):
    return t.sec * 1_000_000_000 + t.nanosec


class Probe(Node):
    """Test side: records joint states, task states and clock; publishes safe commands."""

    def __init__(self, context, names):
        super().__init__('bridge_probe', context=context)
        qos = QoSProfile(depth=10)
        self.cmd_pub = self.create_publisher(TensorBatch, names.safe_command, qos)
        self.joint_states = []
        self.task_states = []
        self.clock = []
        self.create_subscription(JointState, names.joint_states, self.joint_states.append, qos)
        self.create_subscription(TensorBatch, names.task_state,
                                 lambda m: self.task_states.append(read_batch(m)), qos)
        self.create_subscription(Clock, names.clock, self.clock.append, 10)

    def state(self, seq):
        """Return the last task state received for ``seq`` (or None)."""
        found = [b for b in self.task_states if b.seq == seq]
        return found[-1] if found else None

    def joint_state(self, stamp_ns):
        """Return the last JointState received with ``stamp_ns`` (or None)."""
        found = [m for m in self.joint_states if _stamp_ns(m.header.stamp) == stamp_ns]
        return found[-1] if found else None

    def command(self, seq, command):
        """Publish a safe command for ``seq``."""
        self.cmd_pub.publish(make_batch('command', seq, {'command': command}))


@pytest.fixture
def graph(context, private_topics):
    """Yield (bridge node, probe, executor) once the probe has the state of seq 0."""
    probe = Probe(context, private_topics)
    node = BridgeNode(context=context, cli_args=private_topics.args, parameter_overrides=[
        Parameter('run.task', value='arm6_reach'), Parameter('num_envs', value=N),
        Parameter('run.seed', value=0), Parameter('bridge.state_timeout_s', value=0.2)])
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(probe)
    try:
        assert node.js_pub.topic_name == private_topics.joint_states
        # The state published in the constructor predates discovery; the timeout
        # re-sends it, which is the protocol's answer to a lost message.
        assert spin_until(executor, lambda: (
            probe.state(0) is not None and probe.joint_state(0) is not None
            and probe.cmd_pub.get_subscription_count() > 0), 5.0), 'no state for seq 0'
        yield node, probe, executor
    finally:
        executor.shutdown()
        probe.destroy_node()
        node.close()
        node.destroy_node()


def _hold(probe):
    """Return a finite command: the current joint positions as targets."""
    js = probe.joint_state(0)
    return np.asarray(js.position, dtype=np.float32).reshape(N, J)


def test_initial_state(graph):
    node, probe, executor = graph
    js = probe.joint_state(0)
    assert list(js.name) == [f'env{i}/{j}' for i in range(N) for j in ARM6_JOINTS]
    assert len(js.position) == len(js.velocity) == len(js.effort) == N * J
    assert np.all(np.isfinite(js.position))
    state = probe.state(0)
    assert state.kind == 'task_state' and state.stamp_ns == 0
    assert state.tensors['extras'].shape == (N, E)
    for key in ('reward', 'terminated', 'truncated', 'episode_return', 'episode_length'):
        assert state.tensors[key].shape == (N,), key
    assert node.seq == 0


def test_command_for_current_seq_advances_one_step(graph):
    node, probe, executor = graph
    dt_ns = int(round(node.task.control_dt * 1e9))
    probe.command(0, _hold(probe))
    assert spin_until(executor, lambda: probe.state(1) is not None, 5.0), 'no state for seq 1'
    assert spin_until(executor, lambda: probe.joint_state(dt_ns) is not None, 5.0)
    assert probe.state(1).stamp_ns == dt_ns
    assert probe.state(1).tensors['extras'].shape == (N, E)
    assert node.seq == 1 and node.counters['steps'] == 1
    assert spin_until(executor, lambda: probe.clock and _stamp_ns(probe.clock[-1].clock) == dt_ns,
                      5.0)

    probe.command(1, _hold(probe))
    assert spin_until(executor, lambda: probe.state(2) is not None, 5.0), 'no state for seq 2'
    assert probe.state(2).stamp_ns == 2 * dt_ns


def test_stale_command_is_ignored(graph):
    node, probe, executor = graph
    probe.command(0, _hold(probe))
    assert spin_until(executor, lambda: probe.state(1) is not None, 5.0)
    for stale in (0, 7):
        probe.command(stale, _hold(probe))
    assert spin_until(executor, lambda: node.counters['stale_commands'] == 2, 5.0)
    assert node.seq == 1 and node.counters['steps'] == 1
    assert node.counters['bad_commands'] == 0
    assert probe.state(2) is None


@pytest.mark.parametrize('bad', ['shape', 'nan', 'inf', 'flat', 'no_command'])
def test_bad_command_is_ignored_and_bridge_does_not_advance(graph, bad):
    node, probe, executor = graph
    command = _hold(probe)
    if bad == 'shape':
        msg = make_batch('command', 0, {'command': np.zeros((N, J - 1))})
    elif bad == 'flat':
        msg = make_batch('command', 0, {'command': command.reshape(-1)})
    elif bad == 'no_command':
        msg = make_batch('command', 0, {'action': command})
    else:
        command[1, 2] = np.nan if bad == 'nan' else np.inf
        msg = make_batch('command', 0, {'command': command})
    probe.cmd_pub.publish(msg)
    assert spin_until(executor, lambda: node.counters['bad_commands'] == 1, 5.0)
    spin_until(executor, lambda: probe.state(1) is not None, 0.3)
    assert probe.state(1) is None
    assert node.seq == 0 and node.counters['steps'] == 0
    # A good command afterwards still advances the bridge.
    probe.command(0, _hold(probe))
    assert spin_until(executor, lambda: probe.state(1) is not None, 5.0)


def test_state_is_republished_without_a_command(graph):
    node, probe, executor = graph
    before = len([b for b in probe.task_states if b.seq == 0])
    assert spin_until(executor, lambda: len(
        [b for b in probe.task_states if b.seq == 0]) > before, 5.0)
    assert node.counters['republished'] >= 1 and node.seq == 0


def test_unknown_task_raises_config_error(context):
    with pytest.raises(ConfigError) as info:
        BridgeNode(context=context, parameter_overrides=[
            Parameter('run.task', value='no_such_task'), Parameter('num_envs', value=1)])
    message = str(info.value)
    assert 'task' in message and 'no_such_task' in message and 'arm6_reach' in message


def test_required_camera_without_rendering_is_a_start_up_error(context, monkeypatch):
    import unilab_bridge.camera
    monkeypatch.setattr(unilab_bridge.camera, 'open_camera',
                        lambda sim, exposure_s=0.0: (None, 'EGL: no display'))
    params = [Parameter('run.task', value='arm6_reach'), Parameter('num_envs', value=1),
              Parameter('bridge.camera', value=True)]
    with pytest.raises(ConfigError, match='perception.image.*EGL: no display'):
        BridgeNode(context=context,
                   parameter_overrides=params + [Parameter('camera_required', value=True)])
    # Not required (a camera for recording only): the bridge runs without it.
    node = BridgeNode(context=context, parameter_overrides=params)
    try:
        assert node.camera is None
    finally:
        node.destroy_node()
