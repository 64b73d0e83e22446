# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The legged double on a live ROS graph: a Go2 driver's topics."""

import json
import time
import xml.etree.ElementTree as ET

from double_helpers import Graph, overrides, profile_file
from geometry_msgs.msg import Vector3
from nav_msgs.msg import Odometry
import pytest
from rclpy.node import Node
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String
from unilab_bridge.legged_double_node import DESCRIPTION_QOS, LeggedDoubleNode
from unilab_core.robot_profile import load_profile

GO2 = load_profile(profile_file('go2_effort'))


@pytest.fixture
def graph(context):
    g = Graph(context)
    yield g
    g.close()


def start(graph, robot='go2_effort', **params):
    """Start a legged double and a probe node; return (double, probe)."""
    double = graph.add(LeggedDoubleNode(context=graph.context, parameter_overrides=overrides(
        profile=profile_file(robot), **params)))
    return double, graph.add(Node('probe', context=graph.context))


def listen(probe, topic, msg_type, qos=10):
    got = []
    probe.create_subscription(msg_type, topic, got.append, qos)
    return got


def test_driver_topics_commands_refusals_and_pushes(graph, tmp_path):
    stats = tmp_path / 'stats.json'
    double, probe = start(graph, stats_file=str(stats), latency_s=0.005)
    states = listen(probe, GO2.joint_states_topic, JointState)
    imu = listen(probe, GO2.imu_topic, Imu)
    odom = listen(probe, '/odom', Odometry)
    pub = probe.create_publisher(Float64MultiArray, GO2.command.topic, 10)
    push = probe.create_publisher(Vector3, '/legged_double/push', 10)
    assert graph.spin_until(lambda: len(states) >= 200 and len(imu) >= 50 and odom
                            and pub.get_subscription_count() > 0)
    # Unitree's names in the driver's order (FR, FL, RR, RL), all three fields.
    assert all(list(m.name) == GO2.controller_joints for m in states)
    assert all(len(m.position) == len(m.velocity) == len(m.effort) == 12 for m in states)
    assert imu[-1].header.frame_id == 'imu' and odom[-1].child_frame_id == 'base'
    # About 500 per simulated second, loosely: the broadcaster never outruns the physics.
    assert len(states) <= double.counters['ticks'] // 2 + 10
    # A torque on FR_hip only (driver order: first) reads back there after the latency.
    tau = [2.0] + [0.0] * 11
    pub.publish(Float64MultiArray(data=tau))
    assert graph.spin_until(lambda: states[-1].effort[0] == pytest.approx(2.0))
    assert max(abs(e) for e in states[-1].effort[1:]) == 0.0
    pub.publish(Float64MultiArray(data=[0.0] * 11))
    pub.publish(Float64MultiArray(data=[float('nan')] * 12))
    pub.publish(Float64MultiArray(data=[float('nan')] * 12))
    assert graph.spin_until(lambda: double.counters['refused_non_finite'] == 2)
    assert double.counters['refused_length'] == 1 and double.counters['commands'] == 1
    push.publish(Vector3(x=float('nan'), y=0.0, z=0.0))   # refused, never applied
    assert graph.spin_until(lambda: double.counters['refused_push'] == 1)
    push.publish(Vector3(x=0.5, y=0.0, z=0.0))
    assert graph.spin_until(lambda: double.double.pushes_applied == 1)
    double.close()
    out = json.loads(stats.read_text())
    assert out['commands'] == 1 and out['refused_length'] == 1 and out['pushes'] == 1
    assert out['latency_s'] == pytest.approx(0.005) and out['variant'] == 'nominal'


def test_robot_description_carries_the_drivers_gains(graph):
    _, probe = start(graph, robot='go2', kp=35.0, kd=0.8, start='stand')
    got = listen(probe, '/robot_description', String, DESCRIPTION_QOS)
    assert graph.spin_until(lambda: got)
    block = ET.fromstring(got[0].data).find('ros2_control')
    for joint in block.findall('joint'):
        assert joint.find('command_interface').get('name') == 'position'
        assert {x.get('name'): float(x.text) for x in joint.findall('param')} == \
            {'kp': 35.0, 'kd': 0.8}


def test_a_state_that_cannot_go_out_is_counted_and_the_physics_runs_on(graph):
    double, probe = start(graph)
    publish, ticks = double._publish, double.counters['ticks']

    def broken(_sim_time):
        raise RuntimeError('Failed to publish: cannot publish data')
    double._publish = broken   # what rclpy raises when DDS refuses a message
    assert graph.spin_until(lambda: double.counters['publish_errors'] >= 100)
    assert double.counters['ticks'] >= ticks + 100
    double._publish = publish
    states = listen(probe, GO2.joint_states_topic, JointState)
    assert graph.spin_until(lambda: len(states) >= 10)   # the thread is still stepping


def test_a_stall_of_the_double_longer_than_the_supervisor_bound_is_counted(graph):
    # A stale-input fall stop must be attributable: did the double go quiet, or did the
    # controller not take what arrived? The double counts its own gaps.
    double, probe = start(graph)
    states = listen(probe, GO2.joint_states_topic, JointState)
    assert graph.spin_until(lambda: len(states) >= 10)
    assert double.stats()['joint_state_gaps_past_timeout'] == 0
    step, stalled = double.double.step, []

    def stalling_step():
        if not stalled:
            stalled.append(True)
            time.sleep(GO2.legged.state_timeout_s + 0.03)   # the process held up once
        step()
    double.double.step = stalling_step
    n = len(states)
    assert graph.spin_until(lambda: len(states) >= n + 20)
    stats = double.stats()
    assert stats['joint_state_gaps_past_timeout'] == 1
    assert stats['joint_state_gap_max_ms'] >= (GO2.legged.state_timeout_s + 0.03) * 1e3
