# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""SafetyNode over real topics: action in, safe command and diagnostics out."""

import json
import os
import signal
import time

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from spec_helpers import node_parameters
from std_srvs.srv import Trigger
from unilab_core.config import ConfigError
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_core.ros.tensor_topic import TensorSubscription
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch
from unilab_safety.safety_node import SafetyNode

JOINTS = ['j0', 'j1', 'j2']
N = 2
DT = 0.1
LIMITS_YAML = """\
safety:
  ros__parameters:
    joint_limits:
      j0:
        has_position_limits: true
        min_position: -1.0
        max_position: 1.0
        has_velocity_limits: true
        max_velocity: 2.0
      j1:
        has_position_limits: true
        min_position: 0.5
        max_position: 2.0
        has_velocity_limits: true
        max_velocity: 1.0
      j2:
        has_position_limits: true
        min_position: -0.25
        max_position: 0.25
"""
LO = np.array([-1.0, 0.5, -0.25])
#: Measured joint positions inside the limits (the reference of a first command).
M = np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
HI = np.array([1.0, 2.0, 0.25])
STEP = np.array([2.0 * DT, 1.0 * DT, np.inf])  # max_velocity * dt


class Probe(Node):
    """Test side: publishes actions, records safe commands and diagnostics."""

    def __init__(self, context, names):
        super().__init__('safety_probe', context=context)
        qos = QoSProfile(depth=10)
        self.action_pub = self.create_publisher(TensorBatch, names.action, qos)
        self.commands = []
        self.diagnostics = []
        self.create_subscription(TensorBatch, names.safe_command, self.commands.append, qos)
        self.create_subscription(DiagnosticArray, names.diagnostics, self.diagnostics.append,
                                 10)
        self.js_pub = self.create_publisher(JointState, names.joint_states, qos)
        self.node = None  # the safety node under test (set by the fixture)
        self.answered_at = None  # monotonic time of the last answer

    def measured(self, executor, positions, stamp_ns=0):
        """Publish measured joint positions [N, J] and wait until the node took them."""
        msg = JointState()
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(stamp_ns), 10 ** 9)
        msg.name = [f'env{i}/{j}' for i in range(N) for j in JOINTS]
        msg.position = [float(v) for v in np.asarray(positions, np.float64).ravel()]
        before = self.node.joint_states
        assert spin_until(executor, lambda: self.js_pub.get_subscription_count() > 0, 5.0)
        self.js_pub.publish(msg)
        assert spin_until(executor, lambda: self.node.joint_states > before, 5.0), 'no state'

    def send(self, executor, seq, action, state=None, paced=True, **extra):
        """
        Publish (the measured ``state`` and) an action; return the command answering it.

        ``paced``: like a policy at the control rate, send at least one control step
        after the last answer (sooner, the gate scales its change limits down).
        """
        if state is not None:
            self.measured(executor, state)
        if paced and self.answered_at is not None:
            time.sleep(max(0.0, self.answered_at + DT - time.monotonic()))
        before = len(self.commands)
        tensors = {'action': action, **extra}
        self.action_pub.publish(make_batch('action', seq, tensors, version=3,
                                           stamp_ns=seq * 20_000_000))
        # The answer is the first output carrying this seq (watchdog outputs in between
        # carry the last one's).

        def answer():
            return next((b for b in map(read_batch, self.commands[before:]) if b.seq == seq),
                        None)
        assert spin_until(executor, lambda: answer() is not None, 5.0), 'no command'
        self.answered_at = time.monotonic()
        return answer()


def _params(limits_file, run_dir, **extra):
    values = {'joint_limits_file': str(limits_file), 'joint_names': JOINTS,
              'interface': 'position', 'dt': DT, 'num_envs': N, 'run_dir': str(run_dir),
              'diagnostics_period_s': 0.1, 'mlockall': False, 'rt_priority': 0,
              # Longer than the paced sends' control step (tests of the watchdog set theirs).
              'watchdog_timeout_s': 1.0,
              # The RT process unless a test names another mode (auto would pick inline:
              # these nodes are not in lock-step).
              'rt_mode': 'process', **extra}
    return node_parameters(**values)


@pytest.fixture
def limits_file(tmp_path):
    """Write the ros2_control joint_limits YAML and return its path."""
    path = tmp_path / 'joint_limits.yaml'
    path.write_text(LIMITS_YAML)
    return path


@pytest.fixture
def node_params():
    """Return extra node parameters for the ``graph`` fixture (tests override it)."""
    return {}


@pytest.fixture
def graph(context, limits_file, tmp_path, private_topics, node_params):
    """Yield (safety node, probe, executor), connected."""
    node = SafetyNode(context=context, cli_args=private_topics.args,
                      parameter_overrides=_params(limits_file, tmp_path, **node_params))
    assert node.pub.topic_name == private_topics.safe_command
    probe = Probe(context, private_topics)
    probe.node = node
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(probe)
    assert spin_until(executor, lambda: (
        probe.action_pub.get_subscription_count() > 0
        and node.pub.get_subscription_count() > 0), 5.0), 'discovery timed out'
    try:
        yield node, probe, executor
    finally:
        executor.shutdown()
        probe.destroy_node()
        node.destroy_node()


def test_out_of_limits_row_is_clamped_and_nan_row_held(graph):
    node, probe, executor = graph
    action = np.array([[5.0, -3.0, 0.1],
                       [0.0, np.nan, 0.0]], dtype=np.float32)
    batch = probe.send(executor, 11, action, state=M)
    assert batch.kind == 'command' and batch.seq == 11
    assert batch.version == 3 and batch.stamp_ns == 11 * 20_000_000
    command = batch.tensors['command']
    assert command.shape == (N, len(JOINTS))
    assert np.all(np.isfinite(command))
    # First batch: one step from the measured position (j2 has no velocity limit).
    np.testing.assert_allclose(command[0], [0.0 + STEP[0], 1.0 - STEP[1], 0.1], rtol=1e-6)
    # A rejected row without a last command holds at its measured position.
    np.testing.assert_array_equal(command[1], M[1].astype(np.float32))
    stats = node.stats()
    assert stats['clamped'] == 1 and stats['rejected'] == 1 and stats['passed'] == 0
    assert stats['batches'] == 1 and stats['bad_messages'] == 0


def test_transport_readers_get_the_gates_float64_command(graph):
    # The simulator steps with the command the gate computed and limits the next one from,
    # as the direct loop does: a float32 copy on the way (0.9 is no float32) made the
    # graph train differently from the loop. Plain ROS readers get the message's float32.
    node, probe, executor = graph
    exact = []
    sub = TensorSubscription(probe, node.pub.topic_name, exact.append)
    try:
        batch = probe.send(executor, 0, np.float32([[5.0, -3.0, 0.1], [0.0, 1.0, 0.0]]),
                           state=M)
        assert spin_until(executor, lambda: exact, 5.0)
    finally:
        sub.close()
    command = exact[0].tensors['command']
    assert exact[0].seq == 0 and command.dtype == np.float64
    # One step from the measured position in float64; j2 passes the action's own value.
    np.testing.assert_array_equal(command[0], [0.0 + STEP[0], 1.0 - STEP[1], np.float32(0.1)])
    np.testing.assert_array_equal(command[1], M[1])
    np.testing.assert_array_equal(batch.tensors['command'], command.astype(np.float32))


# Inline: the action's own thread gates it (rt_mode inline), the same contract.
@pytest.mark.parametrize('node_params', [{}, {'rt_mode': 'inline'}])
def test_second_batch_is_rate_limited_from_last_command(graph):
    node, probe, executor = graph
    start = np.float32([[0.0, 1.0, 0.0], [0.5, 1.5, -0.1]])
    first = probe.send(executor, 0, start, state=start)
    np.testing.assert_array_equal(first.tensors['command'],
                                  np.float32([[0.0, 1.0, 0.0], [0.5, 1.5, -0.1]]))
    target = np.float32([[1.0, 2.0, 0.2], [0.55, np.nan, 0.0]])
    second = probe.send(executor, 1, target)
    command = second.tensors['command']
    # Row 0: each joint moves at most max_velocity * dt toward the target (j2 has no rate
    # limit); row 1 holds its last safe command.
    np.testing.assert_allclose(command[0], [0.0 + STEP[0], 1.0 + STEP[1], 0.2], rtol=1e-6)
    np.testing.assert_array_equal(command[1], np.float32([0.5, 1.5, -0.1]))
    stats = node.stats()
    assert {k: stats[k] for k in ('passed', 'clamped', 'rejected', 'batches', 'bad_messages',
                                  'commands', 'published_command')} == {
        'passed': 2, 'clamped': 1, 'rejected': 1, 'batches': 2, 'bad_messages': 0,
        'commands': 2, 'published_command': 2}


def test_an_action_sooner_than_one_control_step_gets_a_smaller_step(graph):
    node, probe, executor = graph
    probe.send(executor, 0, np.float32(M), state=M)
    target = np.float32([[0.9, 1.9, 0.0], [0.9, 1.9, 0.0]])
    t0 = time.monotonic()
    command = probe.send(executor, 1, target, paced=False).tensors['command']
    elapsed = time.monotonic() - t0
    assert elapsed < DT / 2  # the answer came well within one control step
    moved = command - M
    # A publisher faster than the control rate cannot move a joint faster than its limit:
    # the step shrinks with the time since the last command (at most the full step).
    assert np.all(moved[:, :2] > 0) and np.all(moved[:, :2] < STEP[:2] * 0.5 + 1e-6)
    assert node.stats()['early_actions'] == 1
    # One control step later the full step is allowed again (from the last command).
    again = probe.send(executor, 2, target).tensors['command']
    np.testing.assert_allclose(again[:, :2] - command[:, :2], [STEP[:2]] * N, rtol=1e-5)
    assert node.stats()['early_actions'] == 1


def test_a_reset_in_the_action_cannot_lift_the_rate_limit(graph):
    node, probe, executor = graph
    probe.send(executor, 0, np.float32(M), state=M)
    target = np.float32([[0.9, 1.9, 0.0], [0.9, 1.9, 0.0]])
    # Only the simulator's task state may start an episode; an action's `reset` is ignored.
    command = probe.send(executor, 1, target, reset=np.float32([1.0, 1.0])).tensors['command']
    np.testing.assert_allclose(command, [[STEP[0], 1.0 + STEP[1], 0.0]] * N, rtol=1e-6)


@pytest.mark.parametrize('shape', [(N, 4), (N + 1, 3), (3,), (N, 3, 1)])
def test_wrong_shape_gets_a_hold_command_of_the_right_shape(graph, shape):
    node, probe, executor = graph
    good = np.float32([[0.25, 0.75, 0.0], [-0.5, 1.25, 0.125]])
    probe.send(executor, 0, good, state=good)
    batch = probe.send(executor, 1, np.full(shape, 0.1, np.float32))
    assert batch.seq == 1
    np.testing.assert_array_equal(batch.tensors['command'], good)
    stats = node.stats()
    assert stats['rejected'] == N and stats['passed'] == N and stats['batches'] == 2
    # The rows' state survives the refused batch: the next one is still rate-limited.
    nxt = probe.send(executor, 2, np.float32([[1.0, 0.75, 0.0], [-0.5, 1.25, 0.125]]))
    np.testing.assert_allclose(nxt.tensors['command'][0], [0.25 + STEP[0], 0.75, 0.0],
                               rtol=1e-6)


def test_wrong_shape_first_batch_holds_inside_the_limits(graph):
    node, probe, executor = graph
    batch = probe.send(executor, 0, np.zeros((N, 5), np.float32), state=M)
    command = batch.tensors['command']
    assert command.shape == (N, 3)
    np.testing.assert_array_equal(command, M.astype(np.float32))  # held where the joints are
    assert node.stats()['rejected'] == N


def test_malformed_message_is_counted_without_answer(graph):
    node, probe, executor = graph
    probe.action_pub.publish(make_batch('action', 0, {'not_action': np.zeros((N, 3))}))
    assert spin_until(executor, lambda: node.bad_messages == 1, 5.0)
    spin_until(executor, lambda: probe.commands, 0.3)
    assert probe.commands == []
    assert node.stats()['rejected'] == N


def test_diagnostics_carry_the_counters(graph, tmp_path):
    node, probe, executor = graph
    probe.send(executor, 0, np.float32([[5.0, 1.0, 0.0], [np.nan, 1.0, 0.0]]), state=M)
    probe.diagnostics.clear()

    def latest():
        (status,) = probe.diagnostics[-1].status
        return status, {kv.key: kv.value for kv in status.values}

    # The RT process gates the batch asynchronously: a diagnostics tick may come first.
    assert spin_until(executor, lambda: probe.diagnostics and latest()[1].get('batches') == '1',
                      10.0), 'no diagnostics counting the batch'
    status, values = latest()
    assert set(values) >= {'passed', 'clamped', 'rejected', 'batches', 'bad_messages'}
    assert values['clamped'] == '1' and values['rejected'] == '1'
    assert values['batches'] == '1'
    # One of two rows clamped, one rejected: both shares past health's thresholds.
    assert status.level == status.WARN and 'of action rows rejected' in status.message
    assert '50.0 % of action rows clamped (> 20 %' in status.message
    assert values['clamp_share'] == '0.5' and values['rows'] == '2'
    assert status.hardware_id == 'unilab' and 'transport_received' in values
    # The timer also refreshes the stats file in the run directory.
    assert json.loads((tmp_path / 'safety_stats.json').read_text())['rejected'] == 1


def test_a_publisher_faster_than_the_control_rate_is_a_diagnostics_warning(graph):
    node, probe, executor = graph
    probe.send(executor, 0, np.float32(M), state=M)
    for seq in range(1, 6):  # five actions back to back: far faster than one per 0.1 s
        probe.send(executor, seq, np.float32(M), paced=False)
    assert node.stats()['early_actions'] == 5

    def warned():
        # (How the six commands split over diagnostics periods is up to the timer.)
        return any('early actions:' in s.message and 'limited per time' in s.message
                   and s.level == s.WARN for d in probe.diagnostics for s in d.status)
    assert spin_until(executor, warned, 10.0), 'no early-actions warning'


@pytest.mark.parametrize('node_params', [{'rt_mode': 'inline'}])
def test_a_stop_signal_right_after_a_publish_still_counts_that_command(graph, monkeypatch):
    # Ctrl-C raises KeyboardInterrupt in the main thread between any two bytecodes: landing
    # right after the command's publish, it left the command sent but not counted (a
    # deploy's gate reported 500 commands, its robot had applied 501).
    from unilab_core import stop
    from unilab_core.ros import runtime
    node, probe, executor = graph
    sent = []
    publish = node.pub.publish

    def publish_then_stop(*args, **kwargs):
        publish(*args, **kwargs)
        sent.append(args[1])
        if len(sent) == 2:
            signal.raise_signal(signal.SIGINT)  # the handler runs as this returns
    monkeypatch.setattr(node.pub, 'publish', publish_then_stop)
    monkeypatch.setattr(stop, 'STOP_SIGNALS', [])
    monkeypatch.setattr(stop, '_DEFER', {'depth': 0, 'pending': False})
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    runtime._install_sigterm(sigint=True)
    try:
        probe.send(executor, 1, np.zeros((N, len(JOINTS)), np.float32), state=M)
        with pytest.raises(KeyboardInterrupt):
            probe.send(executor, 2, np.zeros((N, len(JOINTS)), np.float32))
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    stats = node.stats()
    assert sent == [1, 2]
    assert stats['published_command'] + stats['published_fallback'] == len(sent), stats
    assert node._last_safe[0] == 2


def test_close_writes_stats(context, limits_file, tmp_path):
    run_dir = tmp_path / 'run'
    run_dir.mkdir()
    # Thread mode: the test drives the loop's own gate directly (in process mode the
    # gate lives in the RT process; test_process_mode_close_writes_stats covers that).
    node = SafetyNode(context=context, parameter_overrides=_params(
        limits_file, run_dir, diagnostics_period_s=60.0, rt_mode='thread'))
    try:
        node.gate.filter(np.float32([[5.0, 1.0, 0.0], [0.0, 1.0, 0.0]]), state_position=M)
        node.close()
    finally:
        node.destroy_node()
    stats = json.loads((run_dir / 'safety_stats.json').read_text())
    assert {k: stats[k] for k in ('passed', 'clamped', 'rejected', 'batches',
                                  'bad_messages')} == {
        'passed': 1, 'clamped': 1, 'rejected': 0, 'batches': 0, 'bad_messages': 0}
    assert stats['rt_loop'] == 'stopped' and stats['loop_cycles'] > 0  # ran until close()
    assert {'rt_mlockall', 'rt_sched_fifo', 'rt_cpu_affinity', 'deadline_misses',
            'period_error_p99_us'} <= set(stats)


def _expect_config_error(context, params, *fragments):
    with pytest.raises(ConfigError) as info:
        SafetyNode(context=context, parameter_overrides=params)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_missing_limits_file_raises(context, tmp_path):
    missing = tmp_path / 'nope.yaml'
    _expect_config_error(context, _params(missing, tmp_path), str(missing), 'cannot read')


def test_empty_limits_file_parameter_raises(context, tmp_path):
    _expect_config_error(context, _params('', tmp_path), 'joint_limits_file')


def test_invalid_yaml_raises(context, tmp_path):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('joint_limits: [unclosed\n')
    _expect_config_error(context, _params(bad, tmp_path), str(bad), 'not valid YAML')


def test_joint_without_entry_raises(context, limits_file, tmp_path):
    params = _params(limits_file, tmp_path, joint_names=['j0', 'j1', 'gripper'])
    _expect_config_error(context, params, 'gripper', 'no entry')


def test_malformed_limit_value_raises(context, tmp_path):
    bad = tmp_path / 'bad_value.yaml'
    bad.write_text(LIMITS_YAML.replace('max_velocity: 1.0', 'max_velocity: fast'))
    _expect_config_error(context, _params(bad, tmp_path), 'j1', 'max_velocity')


@pytest.mark.parametrize('override, fragment', [
    ({'interface': 'torque'}, 'interface'),
    ({'dt': 0.0}, 'dt'),
    ({'fallback': 'zero'}, 'fallback'),
])
def test_invalid_gate_parameter_raises_config_error(context, limits_file, tmp_path, override,
                                                    fragment):
    _expect_config_error(context, _params(limits_file, tmp_path, **override), fragment)


def _kinds(probe):
    return [c.kind for c in probe.commands]


@pytest.mark.parametrize('node_params', [{'watchdog_timeout_s': 0.05},
                                         {'watchdog_timeout_s': 0.05, 'rt_mode': 'inline'}])
def test_watchdog_publishes_the_hold_fallback_when_actions_stop(graph):
    node, probe, executor = graph
    good = np.float32([[0.25, 0.75, 0.0], [-0.5, 1.25, 0.125]])
    probe.send(executor, 4, good, state=good)
    # The publisher stops here: the fallback must come (how fast is the loop's own
    # logical-time bound below, not a wall-clock threshold).
    assert spin_until(executor, lambda: 'fallback' in _kinds(probe), 10.0), 'no fallback'
    fb = read_batch(next(c for c in probe.commands if c.kind == 'fallback'))
    assert fb.seq == 4  # tagged with the last action's step, so a lock-step bridge ignores it
    np.testing.assert_array_equal(fb.tensors['command'], good)
    stats = node.stats()
    assert stats['fallbacks'] >= 1 and stats['stale_events'] == 1
    # First fallback at the first loop tick past the timeout: within timeout + one period,
    # plus the periods whose ticks the loop skipped (a tick woken late runs the latest
    # deadline; the inline mode's loop thread shares the node's GIL on a loaded machine).
    assert stats['fallback_delay_max_ms'] <= 50.0 + 1.0 * (1 + stats['deadline_misses'])
    assert stats['published_fallback'] >= 1


@pytest.mark.parametrize('node_params', [
    {'watchdog_timeout_s': 0.05, 'watchdog_fallback': 'estop'},
    {'watchdog_timeout_s': 0.05, 'watchdog_fallback': 'estop', 'rt_mode': 'inline'}])
def test_estop_latches_until_the_trigger_service_resets_it(graph, context):
    node, probe, executor = graph
    good = np.float32([[0.25, 0.75, 0.0], [-0.5, 1.25, 0.125]])
    probe.send(executor, 0, good, state=good)
    assert spin_until(executor, lambda: 'estop' in _kinds(probe), 10.0), 'no e-stop'
    assert node.stats()['estopped'] == 1
    # Fresh actions do not clear it: they are answered with the hold, kind 'estop'.
    answer = probe.send(executor, 1, np.float32([[0.3, 0.8, 0.0], [-0.4, 1.3, 0.1]]))
    assert answer.kind == 'estop' and answer.seq == 1
    np.testing.assert_array_equal(answer.tensors['command'], good)
    assert node.stats()['estopped'] == 1
    client = probe.create_client(Trigger, '/safety/reset_estop')
    assert client.wait_for_service(timeout_sec=5.0)
    future = client.call_async(Trigger.Request())
    assert spin_until(executor, future.done, 10.0)
    assert future.result().success and future.result().message == 'e-stop cleared'
    assert node.stats()['estopped'] == 0
    # After the reset the next command starts from a fresh measurement (a robot streams
    # them; the one from before the e-stop is too old to be a reference), so the action
    # follows its joint state at once (paced, it would come a control step later, past
    # this test's 50 ms watchdog timeout: that old, a state is no reference).
    answer = probe.send(executor, 2, np.float32([[0.3, 0.8, 0.0], [-0.4, 1.3, 0.1]]),
                        state=good, paced=False)
    assert answer.kind == 'command'
    stats = node.stats()
    assert stats['estop_events'] >= 1 and stats['estop_rows'] == N


@pytest.mark.parametrize('node_params', [{'rt_priority': 10, 'cpu_affinity': [4096]}])
def test_rt_features_are_reported_granted_or_refused(graph):
    node, probe, executor = graph
    stats = node.stats()
    assert stats['rt_cpu_affinity'].startswith('refused')  # no such CPU; the loop still runs
    assert stats['rt_sched_fifo'] == 'granted' or stats['rt_sched_fifo'].startswith('refused')
    assert stats['rt_mlockall'] == 'off'
    batch = probe.send(executor, 0, np.float32([[0.25, 0.75, 0.0], [-0.5, 1.25, 0.125]]),
                       state=M)
    assert batch.kind == 'command'
    probe.diagnostics.clear()
    assert spin_until(executor, lambda: probe.diagnostics, 5.0)
    values = {kv.key: kv.value for kv in probe.diagnostics[-1].status[0].values}
    assert {'period_error_p50_us', 'period_error_p99_us', 'period_error_p999_us',
            'period_error_max_us', 'deadline_misses', 'rt_sched_fifo', 'stale_events',
            'action_latency_p99_us'} <= set(values)


def test_limits_with_min_above_max_raise(context, tmp_path):
    bad = tmp_path / 'bad_range.yaml'
    bad.write_text(LIMITS_YAML.replace('min_position: 0.5', 'min_position: 3.0'))
    _expect_config_error(context, _params(bad, tmp_path), 'j1', 'min_position')


def test_unknown_limit_key_raises(context, tmp_path):
    bad = tmp_path / 'bad_key.yaml'
    bad.write_text(LIMITS_YAML.replace('max_velocity: 1.0', 'max_speed: 1.0'))
    _expect_config_error(context, _params(bad, tmp_path), 'j1', 'max_speed', 'unknown key')


def test_joint_without_any_limit_raises(context, tmp_path):
    bad = tmp_path / 'no_limits.yaml'
    bad.write_text(LIMITS_YAML.replace("""      j2:
        has_position_limits: true
        min_position: -0.25
        max_position: 0.25
""", """      j2: {}
"""))
    _expect_config_error(context, _params(bad, tmp_path), 'j2', 'no limits')


@pytest.mark.parametrize('override, fragment', [
    ({'watchdog_fallback': 'zero'}, 'watchdog_fallback'),
    ({'busy_wait_us': 5000.0}, 'busy_wait_us'),
    ({'workspace_box': [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]}, 'workspace_model_file'),
])
def test_invalid_loop_parameter_raises_config_error(context, limits_file, tmp_path, override,
                                                    fragment):
    _expect_config_error(context, _params(limits_file, tmp_path, **override), fragment)


@pytest.mark.parametrize('lockstep, mode', [(True, 'inline'), (False, 'inline')])
def test_auto_mode_is_inline_in_lockstep_and_on_a_robot(
        context, limits_file, tmp_path, lockstep, mode):
    node = SafetyNode(context=context, parameter_overrides=_params(
        limits_file, tmp_path, rt_mode='auto', lockstep=lockstep, diagnostics_period_s=60.0))
    try:
        assert node.rt_mode == mode and node.stats()['rt_mode'] == mode
        assert node.rt.answers_inline == (mode == 'inline')
        node.close()
    finally:
        node.destroy_node()


@pytest.mark.parametrize('node_params', [{'diagnostics_period_s': 60.0}])
def test_process_mode_close_writes_stats(graph, tmp_path):
    node, probe, executor = graph
    assert node.rt_mode == 'process' and node.stats()['rt_loop'] == 'running'
    probe.send(executor, 0, np.float32([[5.0, 1.0, 0.0], [0.0, 1.0, 0.0]]), state=M)
    node.close()
    stats = json.loads((tmp_path / 'safety_stats.json').read_text())
    assert {k: stats[k] for k in ('passed', 'clamped', 'rejected', 'batches', 'commands',
                                  'published_command')} == {
        'passed': 1, 'clamped': 1, 'rejected': 0, 'batches': 1, 'commands': 1,
        'published_command': 1}
    assert stats['rt_loop'] == 'stopped' and stats['loop_cycles'] > 0
    assert stats['rt_process'].startswith('pid ')


@pytest.mark.parametrize('node_params', [{'watchdog_timeout_s': 10.0}])
def test_rt_process_death_publishes_the_estop_hold(graph):
    node, probe, executor = graph
    good = np.float32([[0.25, 0.75, 0.0], [-0.5, 1.25, 0.125]])
    first = probe.send(executor, 0, good, state=good)
    assert first.kind == 'command'
    os.kill(node.rt.pid, signal.SIGKILL)
    assert spin_until(executor, lambda: 'estop' in _kinds(probe), 10.0), 'no e-stop'
    hold = read_batch(next(c for c in probe.commands if c.kind == 'estop'))
    np.testing.assert_array_equal(hold.tensors['command'], good)  # the last safe command
    # Later actions never reach the topic unchecked: each gets the same hold, kind 'estop'.
    answer = probe.send(executor, 1, np.float32([[0.9, 0.9, 0.9], [0.9, 0.9, 0.9]]))
    assert answer.kind == 'estop' and answer.seq == 1
    np.testing.assert_array_equal(answer.tensors['command'], good)
    stats = node.stats()
    assert stats['rt_loop'].startswith('failed') and 'code -9' in stats['rt_loop']
    probe.diagnostics.clear()
    assert spin_until(executor, lambda: probe.diagnostics, 5.0)
    status = probe.diagnostics[-1].status[0]
    assert status.level == status.ERROR and 'loop stopped' in status.message


def test_unknown_rt_mode_raises(context, limits_file, tmp_path):
    _expect_config_error(context, _params(limits_file, tmp_path, rt_mode='fiber'), 'rt_mode')


@pytest.mark.parametrize('node_params', [{'pid_kp': [1.0, 1.0, 1.0]}])
def test_pid_compensation_uses_the_measured_joint_states(graph):
    node, probe, executor = graph
    first = np.float32([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    probe.send(executor, 0, first, state=first)
    # env0's j0 lags by 0.05.
    probe.measured(executor, [[-0.05, 1.0, 0.0], [0.0, 1.0, 0.0]])
    answer = probe.send(executor, 1, first)
    # env0 j0: target 0.0, error 0.05, kp 1 -> 0.05 (within 0.2 per step); env1: no error.
    np.testing.assert_allclose(answer.tensors['command'], [[0.05, 1.0, 0.0], [0.0, 1.0, 0.0]],
                               atol=1e-7)
    assert node.stats()['pid_active_rows'] == 2 * N  # both batches had a measurement


# Thread mode: the loop thread's next cycle raises; inline: the next action's, on the
# executor's thread. Either ends the loop: the e-stop hold, never an unchecked command.
@pytest.mark.parametrize('node_params', [{'rt_mode': 'thread', 'watchdog_timeout_s': 10.0},
                                         {'rt_mode': 'inline', 'watchdog_timeout_s': 10.0}])
def test_loop_failure_publishes_the_estop_hold(graph):
    node, probe, executor = graph
    good = np.float32([[0.25, 0.75, 0.0], [-0.5, 1.25, 0.125]])
    probe.send(executor, 0, good, state=good)

    def boom(_):
        raise RuntimeError('bug in the loop')

    node.rt.loop.cycle = boom
    probe.action_pub.publish(make_batch('action', 1, {'action': good + 0.1}, version=3,
                                        stamp_ns=20_000_000))
    assert spin_until(executor, lambda: 'estop' in _kinds(probe), 10.0), 'no e-stop'
    np.testing.assert_array_equal(
        read_batch(next(c for c in probe.commands if c.kind == 'estop')).tensors['command'], good)
    assert 'bug in the loop' in node.stats()['rt_loop'] and not node.rt.alive
    if node.rt.answers_inline:
        # The action whose cycle raised is answered with the hold itself, at once.
        assert spin_until(executor, lambda: any(
            c.kind == 'estop' and read_batch(c).seq == 1 for c in probe.commands), 10.0)
    # Later actions are answered with the same hold, never gated.
    answer = probe.send(executor, 2, good + 0.2)
    assert answer.kind == 'estop'
    np.testing.assert_array_equal(answer.tensors['command'], good)


@pytest.mark.parametrize('node_params', [{'lockstep': True}])
def test_lockstep_episode_starts_come_from_the_simulators_task_state(graph, private_topics):
    node, probe, executor = graph
    task_pub = probe.create_publisher(TensorBatch, private_topics.task_state, 10)
    assert spin_until(executor, lambda: task_pub.get_subscription_count() > 0, 5.0)
    probe.send(executor, 0, np.float32(M), state=M)
    # Step 1: the simulator restarted env 1 at a new pose; its task state says so.
    pose = np.array([[0.0, 1.0, 0.0], [0.8, 1.8, 0.2]])
    probe.measured(executor, pose, stamp_ns=1 * 20_000_000)
    task_pub.publish(make_batch('task_state', 1, {
        'terminated': np.float32([0.0, 1.0]), 'truncated': np.float32([0.0, 0.0])},
        stamp_ns=1 * 20_000_000))
    assert spin_until(executor, lambda: 1 in node.episode_starts._starts, 5.0)
    target = np.float32([[0.9, 1.9, 0.0], [0.9, 1.9, 0.0]])
    command = probe.send(executor, 1, target).tensors['command']
    # env 0 continues from its last command; env 1 starts from its measured new pose.
    np.testing.assert_allclose(command, [[STEP[0], 1.0 + STEP[1], 0.0],
                                         [0.9, 1.8 + STEP[1], 0.0]], rtol=1e-6)
    stats = node.stats()
    assert stats['episode_starts_applied'] == 1 and stats['episode_starts_unverified'] == 0
    # A start reported for a step whose joint state never came cannot be verified.
    task_pub.publish(make_batch('task_state', 2, {
        'terminated': np.float32([1.0, 1.0]), 'truncated': np.float32([0.0, 0.0])},
        stamp_ns=999))
    assert spin_until(executor, lambda: 2 in node.episode_starts._starts, 5.0)
    probe.send(executor, 2, target)
    assert node.stats()['episode_starts_unverified'] == 1


@pytest.mark.parametrize('node_params', [{'lockstep': True}])
def test_an_action_that_overtakes_its_task_state_waits_for_it(graph, private_topics):
    # In a composed graph the action of step seq can reach the gate before the gate's own
    # task-state callback for that step (the observation and action are delivered inline):
    # the gate must still apply the step's episode starts, not gate the action blind.
    node, probe, executor = graph
    task_pub = probe.create_publisher(TensorBatch, private_topics.task_state, 10)
    assert spin_until(executor, lambda: task_pub.get_subscription_count() > 0, 5.0)
    calm = {'terminated': np.float32([0.0, 0.0]), 'truncated': np.float32([0.0, 0.0])}
    probe.measured(executor, np.full((2, 3), M), stamp_ns=0)
    task_pub.publish(make_batch('task_state', 0, calm, stamp_ns=0))
    assert spin_until(executor, lambda: 0 in node.episode_starts._starts, 5.0)
    probe.send(executor, 0, np.float32(M))
    # Step 1: env 1 restarted at a new pose; its action comes before its task state.
    pose = np.array([[0.0, 1.0, 0.0], [0.8, 1.8, 0.2]])
    probe.measured(executor, pose, stamp_ns=20_000_000)
    before = len(probe.commands)
    target = np.float32([[0.9, 1.9, 0.0], [0.9, 1.9, 0.0]])
    probe.action_pub.publish(make_batch('action', 1, {'action': target}, version=3,
                                        stamp_ns=20_000_000))
    assert spin_until(executor, lambda: node.actions_waited == 1, 5.0)
    assert not any(read_batch(c).seq == 1 for c in probe.commands[before:])  # waiting
    task_pub.publish(make_batch('task_state', 1, {
        'terminated': np.float32([0.0, 1.0]), 'truncated': np.float32([0.0, 0.0])},
        stamp_ns=20_000_000))

    def answer():
        return next((b for b in map(read_batch, probe.commands[before:]) if b.seq == 1), None)
    assert spin_until(executor, lambda: answer() is not None, 5.0), 'no command'
    # env 1 starts from its measured new pose, not from env 0's path.
    np.testing.assert_allclose(answer().tensors['command'][1], [0.9, 1.8 + STEP[1], 0.0],
                               rtol=1e-6)
    stats = node.stats()
    assert stats['episode_starts_applied'] == 1 and stats['episode_starts_missing'] == 0
    assert stats['actions_waited_for_task_state'] == 1


@pytest.mark.parametrize('rt_mode', ['process', 'thread'])
def test_a_context_shut_down_under_the_publisher_thread_is_a_clean_stop(
        fresh_context, limits_file, tmp_path, private_topics, rt_mode):
    # Ctrl-C: rclpy's signal handler invalidates the context first and only then runs
    # the shutdown callbacks that close the node; a publish in between fails ("publisher's
    # context is invalid"). That window, held open: a stop, never a dying thread's traceback.
    import threading
    import types
    node = SafetyNode(context=fresh_context, cli_args=private_topics.args,
                      parameter_overrides=_params(limits_file, tmp_path, rt_mode=rt_mode,
                                                  watchdog_timeout_s=0.02))
    probe = Probe(fresh_context, private_topics)
    probe.node = node
    executor = SingleThreadedExecutor(context=fresh_context)
    executor.add_node(node)
    executor.add_node(probe)
    errors, hook = [], threading.excepthook
    threading.excepthook = lambda args: errors.append(args.exc_value)
    real_context = node._context
    try:
        assert spin_until(executor, lambda: probe.action_pub.get_subscription_count() > 0, 5.0)
        probe.send(executor, 1, np.float32(M), state=M)

        def invalid(*_):
            raise RuntimeError("publisher's context is invalid")
        node.pub.publish = invalid  # the loop's holds (the policy fell silent) now fail
        node._context = types.SimpleNamespace(ok=lambda: False)
        node._pub_thread.join(5.0)
        assert not node._pub_thread.is_alive() and not node._closing
        assert errors == []
    finally:
        node._context = real_context
        threading.excepthook = hook
        executor.shutdown()
        probe.destroy_node()
        node.destroy_node()


@pytest.mark.parametrize('node_params', [{'interface': 'velocity'}])
def test_a_velocity_gate_that_stops_leaves_the_joints_commanded_to_zero(graph):
    # A forward command controller keeps the last velocity it got: a deployment that exits
    # (or is stopped) must not leave it moving.
    node, probe, executor = graph
    moving = np.float32([[0.5, 0.5, 0.5], [0.25, 0.25, 0.25]])
    answer = probe.send(executor, 0, moving, state=M)
    assert answer.kind == 'command' and np.abs(answer.tensors['command']).max() > 0
    before = len(probe.commands)
    node.close()
    assert spin_until(executor, lambda: len(probe.commands) > before, 5.0), 'no final stop'
    last = read_batch(probe.commands[-1])
    assert last.kind == 'fallback'
    np.testing.assert_array_equal(last.tensors['command'], 0.0)
