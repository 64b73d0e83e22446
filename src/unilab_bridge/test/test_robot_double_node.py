# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The robot double on a live ROS graph: a ros2_control robot's standard topics."""

import json
import xml.etree.ElementTree as ET

from builtin_interfaces.msg import Duration
from double_helpers import Graph, overrides, profile_file
from nav_msgs.msg import Odometry
import numpy as np
import pytest
from rclpy.node import Node
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
from unilab_bridge.robot_double_node import DESCRIPTION_QOS, RobotDoubleNode
from unilab_core.robot_profile import load_profile

ARM = load_profile(profile_file('arm6'))
UR5E = load_profile(profile_file('ur5e'))


@pytest.fixture
def graph(context):
    g = Graph(context)
    yield g
    g.close()


def start(graph, robot='arm6', **params):
    """Start a robot double and a probe node; return (double, probe)."""
    double = graph.add(RobotDoubleNode(context=graph.context, parameter_overrides=overrides(
        profile=profile_file(robot), **params)))
    probe = graph.add(Node('probe', context=graph.context))
    return double, probe


def latest(probe, topic, msg_type=JointState, qos=10):
    """Subscribe ``topic``; return the list the messages are appended to."""
    got = []
    probe.create_subscription(msg_type, topic, got.append, qos)
    return got


def test_joint_states_carry_the_profile_names_and_the_description_is_latched(graph, tmp_path):
    stats = tmp_path / 'stats.json'
    double, probe = start(graph, stats_file=str(stats))
    states = latest(probe, '/joint_states')
    assert graph.spin_until(lambda: len(states) >= 100)
    assert all(list(m.name) == ARM.joint_names for m in states)
    assert all(len(m.position) == len(m.velocity) == len(m.effort) == 6 for m in states)
    stamps = [m.header.stamp.sec + m.header.stamp.nanosec * 1e-9 for m in states]
    assert stamps[0] > 0 and all(b >= a for a, b in zip(stamps, stamps[1:]))
    # The broadcaster never runs faster than the profile's rate (in simulated time).
    s = double.stats()
    assert 0 < s['joint_state_rate_hz'] <= ARM.joint_state_rate_hz * 1.01
    assert s['steps'] > 0 and s['commands'] == 0
    # A late subscriber still gets the URDF (transient local, like robot_state_publisher's).
    descriptions = latest(probe, '/robot_description', String, DESCRIPTION_QOS)
    assert graph.spin_until(lambda: descriptions)
    urdf = ET.fromstring(descriptions[0].data)
    moving = {j.get('name') for j in urdf.iter('joint') if j.get('type') != 'fixed'}
    assert moving == set(ARM.joint_names)
    double.close()
    assert json.loads(stats.read_text())['joint_states'] >= s['joint_states']


def test_forward_command_is_held_and_bad_commands_are_refused_and_counted(graph):
    double, probe = start(graph, time_scale=4.0)
    states = latest(probe, '/joint_states')
    pub = probe.create_publisher(Float64MultiArray, ARM.command.topic, 10)
    assert graph.spin_until(lambda: states and pub.get_subscription_count() > 0)
    goal = [0.5, 0.2, -0.3, 0.1, 0.2, -0.1]
    pub.publish(Float64MultiArray(data=goal))

    def near(q, tol=0.03):
        return states and np.abs(np.array(states[-1].position) - q).max() < tol
    assert graph.spin_until(lambda: near(goal))
    for _ in range(3):
        pub.publish(Float64MultiArray(data=[0.0] * 5))
        pub.publish(Float64MultiArray(data=[float('nan')] * 6))
    assert graph.spin_until(lambda: double.counters['refused_non_finite'] == 3)
    graph.spin_for(0.3)
    assert double.counters['refused_length'] == 3 and double.counters['commands'] == 1
    assert near(goal)  # still holding the last good command


def test_joint_trajectory_controller_reaches_the_point_in_any_joint_order(graph):
    double, probe = start(graph, robot='ur5e', time_scale=4.0)
    states = latest(probe, '/joint_states')
    pub = probe.create_publisher(JointTrajectory, UR5E.command.topic, 10)
    assert graph.spin_until(lambda: states and pub.get_subscription_count() > 0)
    goal = dict(zip(UR5E.joint_names, [0.3, -0.4, 0.5, 0.2, -0.2, 0.1]))
    names = list(reversed(UR5E.joint_names))
    msg = JointTrajectory(joint_names=names, points=[JointTrajectoryPoint(
        positions=[goal[n] for n in names], time_from_start=Duration(sec=0, nanosec=250_000_000))])
    pub.publish(msg)
    want = np.array([goal[n] for n in UR5E.joint_names])
    assert graph.spin_until(lambda: np.abs(np.array(states[-1].position) - want).max() < 0.03)
    bad = JointTrajectory(joint_names=['elbow', *names[1:]], points=msg.points)
    pub.publish(bad)
    assert graph.spin_until(lambda: double.counters['refused_joint_names'] == 1)
    assert double.counters['commands'] == 1
    # Stamped with a time long past (its point was due 0.25 s after it): dropped, as
    # joint_trajectory_controller drops a trajectory that ends in the past; stamped now:
    # taken.
    stale = JointTrajectory(joint_names=names, points=msg.points)
    now = probe.get_clock().now().nanoseconds
    stale.header.stamp.sec, stale.header.stamp.nanosec = divmod(now - 10**9, 10**9)
    pub.publish(stale)
    assert graph.spin_until(lambda: double.counters['refused_time'] == 1)
    fresh = JointTrajectory(joint_names=names, points=msg.points)
    fresh.header.stamp = probe.get_clock().now().to_msg()
    pub.publish(fresh)
    assert graph.spin_until(lambda: double.counters['commands'] == 2)
    assert double.counters['refused_time'] == 1


def test_a_fleet_has_one_namespace_per_robot(graph):
    double, probe = start(graph, robots=2, time_scale=4.0)
    s0, s1 = latest(probe, '/robot0/joint_states'), latest(probe, '/robot1/joint_states')
    pub1 = probe.create_publisher(Float64MultiArray, '/robot1' + ARM.command.topic, 10)
    assert graph.spin_until(lambda: s0 and s1 and pub1.get_subscription_count() > 0)
    topics = dict(probe.get_topic_names_and_types())
    for k in (0, 1):
        assert topics[f'/robot{k}/joint_states'] == ['sensor_msgs/msg/JointState']
        assert topics[f'/robot{k}{ARM.command.topic}'] == ['std_msgs/msg/Float64MultiArray']
        assert topics[f'/robot{k}/robot_description'] == ['std_msgs/msg/String']
    assert '/joint_states' not in topics
    start0 = np.array(s0[-1].position)
    goal = [-0.5, 0.3, 0.3, 0.0, 0.0, 0.0]
    pub1.publish(Float64MultiArray(data=goal))
    assert graph.spin_until(lambda: np.abs(np.array(s1[-1].position) - goal).max() < 0.03)
    assert np.abs(np.array(s0[-1].position) - start0).max() < 0.05  # robot 0 holds still


def test_the_quadruped_publishes_imu_and_odometry(graph):
    double, probe = start(graph, robot='quad8', time_scale=2.0)
    imu = latest(probe, '/imu/data', Imu)
    odom = latest(probe, '/odom', Odometry)
    assert graph.spin_until(lambda: len(imu) >= 5 and len(odom) >= 5)
    assert imu[-1].header.frame_id == 'imu'
    # At rest the accelerometer reads the reaction to gravity (+9.81 up, the trunk level).
    assert imu[-1].linear_acceleration.z == pytest.approx(9.81, abs=1.5)
    o = odom[-1]
    assert o.header.frame_id == 'odom' and o.child_frame_id == 'trunk'
    assert 0.2 < o.pose.pose.position.z < 0.45
