# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The safety node on a legged robot: motor-rate torques by joint name, stand-up, fall stop."""

import math
import pathlib
import sys

import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from unilab_core import stop
from unilab_core.robot_profile import load_profile
from unilab_core.testing import spin_until
from unilab_safety.safety_node import SafetyNode

REPO = pathlib.Path(__file__).resolve().parents[3]
PROFILE = load_profile(REPO / 'config' / 'robots' / 'go2.yaml')
JOINTS = PROFILE.joint_names                  # the policy's order (URDF: FL, FR, RL, RR)
DRIVER = PROFILE.controller_joints            # Unitree's motor order (FR, FL, RR, RL)
LEG = PROFILE.legged
#: A distinct velocity per joint, by name, so a wrong mapping shows.
QD = {name: 0.1 * (k + 1) for k, name in enumerate(JOINTS)}


def _params(topics, **legged):
    cfg = LEG.model_copy(update=legged)
    values = {
        'joint_names': JOINTS, 'interface': 'position', 'dt': PROFILE.control_dt,
        'num_envs': 1, 'armed': False, 'state_timeout_s': 0.1,
        'output.type': 'forward_command', 'output.topic': topics['command'],
        'output.joints': DRIVER, 'legged_interface': 'effort',
        'imu_topic': topics['imu'], 'motor_model_file': PROFILE.model_file,
        'safety.joint_limits_file': PROFILE.joint_limits_file,
        'safety.rt_mode': 'inline', 'safety.mlockall': False, 'safety.rt_priority': 1,
        'safety.diagnostics_period_s': 0.2, 'safety.watchdog_timeout_s': 0.2,
        'safety.gil_switch_us': 250.0,
        **{f'legged.{k}': v for k, v in cfg.model_dump().items() if v != []}}
    return [Parameter(k, value=v) for k, v in values.items()]


class RobotSide(Node):
    """Plays the driver: joint states (driver order) and IMU at 200 Hz, records commands."""

    def __init__(self, context, topics):
        super().__init__('legged_probe', context=context)
        qos = QoSProfile(depth=50)
        self.js_pub = self.create_publisher(JointState, topics['joint_states'], qos)
        self.imu_pub = self.create_publisher(Imu, topics['imu'], qos)
        self.commands = []
        self.create_subscription(Float64MultiArray, topics['command'],
                                 lambda m: self.commands.append(np.array(m.data)), qos)
        self.positions = dict(zip(JOINTS, LEG.lie_pose))
        self.roll = 0.0
        self.timer = self.create_timer(0.005, self.publish_state)

    def publish_state(self):
        js = JointState(name=list(DRIVER))
        js.position = [float(self.positions[n]) for n in DRIVER]
        js.velocity = [float(QD[n]) for n in DRIVER]
        self.js_pub.publish(js)
        imu = Imu()
        imu.orientation.x, imu.orientation.w = math.sin(self.roll / 2), math.cos(self.roll / 2)
        self.imu_pub.publish(imu)


@pytest.fixture
def legged(context, private_topics):
    """Yield (safety node, robot side, executor, call(service) -> Trigger.Response)."""
    base = private_topics.safe_command.rsplit('/', 1)[0]
    topics = {'command': f'{base}/effort_commands', 'imu': f'{base}/imu',
              'joint_states': private_topics.joint_states}
    node = SafetyNode(context=context, cli_args=private_topics.args,
                      parameter_overrides=_params(topics, stand_time_s=0.5))
    robot = RobotSide(context, topics)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(robot)

    def call(name):
        client = robot.create_client(Trigger, f'/safety/{name}')
        assert client.wait_for_service(timeout_sec=5.0)
        future = client.call_async(Trigger.Request())
        assert spin_until(executor, future.done, 10.0)
        return future.result()
    try:
        yield node, robot, executor, call
    finally:
        executor.shutdown()
        robot.destroy_node()
        node.destroy_node()


def _mode(node):
    return node.legged.sup.mode.name


def test_passive_damping_torques_by_joint_name_at_the_motor_rate(legged):
    node, robot, executor, _ = legged
    assert spin_until(executor, lambda: len(robot.commands) >= 50, 10.0), 'no torques'
    # Passive: tau = -damping_kd * qd, in the driver's order, each joint by its name.
    expected = np.array([-LEG.damping_kd * QD[n] for n in DRIVER])
    np.testing.assert_allclose(robot.commands[-1], expected)
    assert _mode(node) == 'PASSIVE'
    stats = node.stats()
    assert stats['legged_mode'] == 'passive' and stats['legged_published'] >= 50
    assert stats['legged_rate_hz'] == pytest.approx(LEG.motor_rate_hz)
    # The loop thread shares the interpreter with the executor: a woken loop waits for the
    # GIL at most safety.gil_switch_us (set here: 250 us; 0, the default, keeps CPython's).
    assert sys.getswitchinterval() == pytest.approx(250e-6, abs=5e-6)
    # The gate's loop asks for SCHED_FIFO (priority 1 here); the motor loop stays a plain
    # thread (at that priority it starved a double on the same cores).
    assert node.get_parameter('safety.rt_priority').value == 1
    assert node.legged.loop.priority == 0
    # Stopped, the process gets its own switch interval back.
    before = node.legged._switch_before
    node.legged.stop()
    assert sys.getswitchinterval() == pytest.approx(before)


def test_arm_stands_up_then_a_tilt_latches_the_fall_stop_until_reset(legged):
    node, robot, executor, call = legged
    assert spin_until(executor, lambda: len(robot.commands) >= 5, 10.0)
    answer = call('arm')
    assert answer.success and 'standing up' in answer.message
    assert _mode(node) == 'STAND'
    n = len(robot.commands)
    # Standing up from the lying pose (0.5 s here): the PD pulls thighs and calves,
    # never past the motors' torque limits.
    assert spin_until(executor, lambda: len(robot.commands) > n and np.abs(
        robot.commands[-1]).max() > 2.0, 5.0), 'no stand-up torque'
    limit = np.array([45.43 if 'calf' in name else 23.7 for name in DRIVER])
    assert np.all(np.abs(np.array(robot.commands[n:])) <= limit + 1e-9)
    robot.positions = dict(zip(JOINTS, LEG.stand_pose))   # the robot stood up
    assert spin_until(executor, lambda: _mode(node) == 'POLICY', 5.0)
    # Tipped over: the fall stop latches into damping.
    robot.roll = 1.0
    assert spin_until(executor, lambda: _mode(node) == 'FAULT', 5.0), 'no fall stop'
    # What the robot has received lags the node by what DDS still holds for it (depth 50:
    # policy ticks from before the latch, on a busy machine): damping arrives, then stays.
    expected = np.array([-LEG.damping_kd * QD[n] for n in DRIVER])
    assert spin_until(executor, lambda: np.allclose(robot.commands[-1], expected), 5.0), \
        f'no damping torque after the fall stop: {robot.commands[-1]}'
    n = len(robot.commands)
    assert spin_until(executor, lambda: len(robot.commands) >= n + 5, 5.0)
    for command in robot.commands[n:]:
        np.testing.assert_allclose(command, expected)
    assert node.stats()['legged_faults_tilt'] == 1
    # Re-arming is refused while latched; reset refuses while still tilted.
    answer = call('arm')
    assert not answer.success and 'reset_estop' in answer.message
    answer = call('reset_estop')
    assert not answer.success and 'roll' in answer.message
    robot.roll = 0.0
    spin_until(executor, lambda: False, 0.05)   # fresh upright IMU samples
    answer = call('reset_estop')
    assert answer.success and _mode(node) == 'PASSIVE'
    assert call('arm').success and _mode(node) == 'STAND'


def test_stale_joint_states_are_a_fault_while_standing(legged):
    node, robot, executor, call = legged
    assert spin_until(executor, lambda: len(robot.commands) >= 5, 10.0)
    assert call('arm').success
    robot.timer.cancel()   # the driver goes quiet
    assert spin_until(executor, lambda: _mode(node) == 'FAULT', 5.0)
    stats = node.stats()
    assert stats['legged_faults_stale_joint_state'] + stats['legged_faults_stale_imu'] == 1
    assert 'FALL STOP latched' in ' '.join(node.legged.errors())


def test_a_stopping_node_leaves_an_effort_robot_without_torque(legged):
    node, robot, executor, call = legged
    assert spin_until(executor, lambda: len(robot.commands) >= 5, 10.0)
    assert call('arm').success
    n = len(robot.commands)
    assert spin_until(executor, lambda: len(robot.commands) >= n + 20 and np.abs(
        robot.commands[-1]).max() > 0.5, 5.0), 'no stand-up torque'
    node.close()   # Ctrl-C: the motor loop stops, the last word is no torque
    spin_until(executor, lambda: False, 0.5)   # every message in flight delivered
    np.testing.assert_array_equal(robot.commands[-1], np.zeros(12))
    assert not node.legged.loop.alive


def test_a_stop_signal_puts_a_standing_robot_in_damping_not_a_fall_stop(legged, monkeypatch):
    node, robot, executor, call = legged
    assert spin_until(executor, lambda: len(robot.commands) >= 5, 10.0)
    assert call('arm').success
    robot.positions = dict(zip(JOINTS, LEG.stand_pose))
    assert spin_until(executor, lambda: _mode(node) == 'POLICY', 5.0)
    # Ctrl-C: the handler records the signal; the executor delivers nothing after it.
    monkeypatch.setattr(stop, 'STOP_SIGNALS', [2])
    robot.timer.cancel()
    assert spin_until(executor, lambda: _mode(node) == 'PASSIVE', 5.0)
    spin_until(executor, lambda: False, 3 * 0.1)   # past state_timeout_s (0.1 s here)
    stats = node.stats()
    assert stats['legged_mode'] == 'passive' and stats['legged_faults'] == 0
    assert stats['legged_stops'] == 1
    assert stats['legged_last_transition'].startswith('policy -> passive: stop signal')
    # An effort robot whose joint states ended gets no torque, not a stale damping one.
    np.testing.assert_array_equal(robot.commands[-1], np.zeros(12))
