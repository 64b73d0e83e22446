# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""check-robot: a profile's standard topics, checked on fabricated graphs and a live one."""

from double_helpers import Graph, overrides, profile_file
from rclpy.node import Node
from unilab_bridge.robot_contract import (check_contract, contract_ok, format_report,
                                          GraphSnapshot, profile_contract)
from unilab_bridge.robot_double_node import RobotDoubleNode
from unilab_bridge.robot_probe import probe_graph
from unilab_core.robot_profile import load_profile

ARM = load_profile(profile_file('arm6'))
QUAD = load_profile(profile_file('quad8'))
UR5E = load_profile(profile_file('ur5e'))
JS, CMD = '/joint_states', '/forward_position_controller/commands'
F64 = 'std_msgs/msg/Float64MultiArray'


def _arm_graph(**changes):
    """Return a snapshot of an arm6 robot meeting its profile; ``changes`` edit it."""
    snap = GraphSnapshot(
        types={JS: ['sensor_msgs/msg/JointState'], CMD: [F64]},
        publishers={JS: ['/joint_state_broadcaster'], CMD: ['/deploy/safety']},
        subscribers={CMD: ['/forward_position_controller']},
        rates_hz={JS: 250.0}, names={JS: ['gripper'] + ARM.joint_names},
        nodes=['/joint_state_broadcaster', '/forward_position_controller'], window_s=2.0)
    for key, value in changes.items():
        getattr(snap, key).update(value)
    return snap


def _failing(snap, profile=ARM, namespace=''):
    results = check_contract(profile_contract(profile, namespace), snap)
    return {r.item.key: r.problems for r in results if not r.met}, contract_ok(results)


def test_a_robot_meeting_its_profile_passes_and_the_description_is_optional():
    failing, ok = _failing(_arm_graph())
    assert ok and set(failing) == {'robot_description'}
    report = format_report(check_contract(profile_contract(ARM), _arm_graph()), _arm_graph())
    assert report.splitlines()[-1] == 'robot ok'


def test_each_kind_of_problem_is_named():
    failing, ok = _failing(_arm_graph(
        rates_hz={JS: 100.0},  # a 250 Hz broadcaster measured at 100 Hz
        names={JS: ARM.joint_names[:-1]},  # a profile joint never appears
        subscribers={CMD: []}))  # no controller takes the commands
    assert not ok
    assert any('rate 100.0 Hz < 250.0 Hz' in p for p in failing['joint_states'])
    assert any("['wrist_3_joint']" in p for p in failing['joint_states'])
    assert failing['command'] == (f'nothing subscribes to {CMD}',)


def test_the_controller_type_and_sensors_follow_the_profile():
    traj = profile_contract(UR5E)
    cmd = next(i for i in traj if i.key == 'command')
    assert cmd.topic == '/scaled_joint_trajectory_controller/joint_trajectory'
    assert cmd.msg_type == 'trajectory_msgs/msg/JointTrajectory'
    failing, _ = _failing(_arm_graph(), profile=UR5E)
    assert 'command' in failing  # nothing on the trajectory topic
    quad = {i.key: i for i in profile_contract(QUAD, '/robot3')}
    assert quad['imu'].topic == '/robot3/imu/data' and quad['imu'].required
    assert quad['odom'].topic == '/robot3/odom' and quad['odom'].msg_type == \
        'nav_msgs/msg/Odometry'
    assert quad['joint_states'].topic == '/robot3/joint_states'
    assert 'imu' not in {i.key for i in profile_contract(ARM)}


def test_the_robot_double_passes_check_robot(context):
    """The live probe against the double: every required item met, the double noticed."""
    graph = Graph(context)
    try:
        graph.add(RobotDoubleNode(context=context, parameter_overrides=overrides(
            profile=profile_file('quad8'), robots=2)))
        probe = graph.add(Node('unilab_check_robot', context=context))
        items = profile_contract(QUAD, '/robot1')
        snap = probe_graph(probe, items, window_s=1.0, discovery_s=5.0,
                           spin=lambda t: graph.executor.spin_once(timeout_sec=t))
    finally:
        graph.close()
    results = check_contract(items, snap)
    by_key = {r.item.key: r for r in results}
    assert {'joint_states', 'command', 'imu', 'odom'} <= set(by_key)
    assert all(by_key[k].met for k in ('command', 'robot_description')), format_report(
        results, snap)
    assert set(QUAD.joint_names) <= set(snap.names['/robot1/joint_states'])
    assert not by_key['joint_states'].problems or all(
        p.startswith('rate') for p in by_key['joint_states'].problems)  # a busy machine
    assert 'robot double is running' in format_report(results, snap)


GO2_POS = load_profile(profile_file('go2'))
GO2 = load_profile(profile_file('go2_effort'))


def _go2_urdf(kp, kd, skip=()):
    """Return a URDF whose <ros2_control> block declares kp / kd for each Go2 joint."""
    joints = ''.join(
        f'<joint name="{n}"><command_interface name="position"/>'
        + (f'<param name="kp">{kp}</param><param name="kd">{kd}</param>' if n not in skip
           else '') + '</joint>' for n in GO2_POS.joint_names)
    return (f'<robot name="go2"><ros2_control name="go2" type="system">{joints}'
            '</ros2_control></robot>')


def _go2_graph(urdf):
    js, cmd, imu = '/joint_states', '/forward_position_controller/commands', '/imu/data'
    return GraphSnapshot(
        types={js: ['sensor_msgs/msg/JointState'], cmd: [F64], imu: ['sensor_msgs/msg/Imu'],
               '/robot_description': ['std_msgs/msg/String']},
        publishers={js: ['/driver'], imu: ['/driver'], '/robot_description': ['/driver']},
        subscribers={cmd: ['/forward_position_controller']},
        rates_hz={js: 500.0, imu: 500.0}, names={js: list(GO2_POS.controller_joints)},
        nodes=['/driver'], window_s=2.0, robot_description=urdf)


def _gain_problems(urdf, profile=GO2_POS):
    results = check_contract(profile_contract(profile), _go2_graph(urdf), profile)
    failing = {r.item.key: r.problems for r in results if not r.met}
    return failing, contract_ok(results)


def test_a_position_driver_with_the_training_gains_passes():
    failing, ok = _gain_problems(_go2_urdf(20.0, 0.5))
    assert ok and failing == {}


def test_check_robot_refuses_a_driver_with_other_gains_or_none_declared():
    failing, ok = _gain_problems(_go2_urdf(40.0, 0.5))
    assert not ok
    assert 'FL_hip_joint: driver kp 40, trained with 20' in failing['gains'][0]
    failing, ok = _gain_problems(_go2_urdf(20.0, 0.5, skip=('RR_calf_joint',)))
    assert not ok and any('RR_calf_joint: the driver declares no kp' in p
                          for p in failing['gains'])
    # Without a robot_description the gains cannot be confirmed: required, refused.
    failing, ok = _gain_problems('')
    assert not ok and 'cannot be checked' in failing['gains'][0]
    report = format_report(check_contract(profile_contract(GO2_POS), _go2_graph(
        _go2_urdf(40.0, 0.5)), GO2_POS), _go2_graph(''))
    assert 'WRONG   /robot_description gains' in report


def test_an_effort_driver_needs_no_declared_gains():
    # The gate runs the PD itself: the driver's own gains are not involved.
    graph = _go2_graph('')
    graph.types['/forward_effort_controller/commands'] = [F64]
    graph.subscribers['/forward_effort_controller/commands'] = ['/forward_effort_controller']
    results = check_contract(profile_contract(GO2), graph, GO2)
    assert contract_ok(results) and 'gains' not in {r.item.key for r in results}
