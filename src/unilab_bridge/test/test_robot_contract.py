# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Real-mode topic contract: pure checks on fabricated graphs, and one live graph."""

from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from sensor_msgs.msg import Imu, JointState
from unilab_bridge.robot_contract import (check_contract, contract_ok, format_report,
                                          GraphSnapshot, robot_contract)
from unilab_bridge.robot_probe import probe_graph
from unilab_core import topics

JS, TS, CMD = topics.JOINT_STATES, topics.TASK_STATE, topics.SAFE_COMMAND
TB = 'unilab_interfaces/msg/TensorBatch'


def _robot_graph(**changes):
    """Return a snapshot of drivers that meet the contract at 50 Hz; ``changes`` edit it."""
    snap = GraphSnapshot(
        types={JS: ['sensor_msgs/msg/JointState'], TS: [TB], CMD: [TB]},
        publishers={JS: ['/arm_driver'], TS: ['/task_node'], CMD: ['/safety']},
        subscribers={CMD: ['/arm_driver']},
        rates_hz={JS: 50.0, TS: 49.0}, frames={JS: ['env0/shoulder', 'env0/elbow']},
        nodes=['/arm_driver', '/task_node', '/safety'], window_s=2.0)
    for key, value in changes.items():
        getattr(snap, key).update(value)
    return snap


def _failing(snap, **kw):
    results = check_contract(robot_contract(50.0, **kw), snap)
    return {r.item.key: r.problems for r in results if not r.met}, contract_ok(results)


def test_drivers_meeting_the_contract_pass_and_optional_sensors_are_only_listed():
    failing, ok = _failing(_robot_graph())
    assert ok
    assert set(failing) == {'imu', 'points', 'image'}  # absent, optional
    assert 'contract met' in format_report(check_contract(robot_contract(50.0),
                                                          _robot_graph()), _robot_graph())


def test_each_kind_of_violation_is_named():
    failing, ok = _failing(_robot_graph(
        publishers={TS: []},  # task state missing
        rates_hz={JS: 20.0},  # joint states too slow for a 50 Hz task
        frames={JS: ['shoulder']},  # no env<i>/ prefix
        subscribers={CMD: []}))  # nobody applies the safe command
    assert not ok
    assert failing['task_state'] == (f'no publisher on {TS}',)
    assert any('rate 20.0 Hz < 50.0 Hz' in p for p in failing['joint_states'])
    assert any("'shoulder'" in p for p in failing['joint_states'])
    assert failing['safe_command'] == (f'nothing subscribes to {CMD}',)


def test_wrong_type_and_silent_topic_fail():
    failing, ok = _failing(_robot_graph(types={JS: ['std_msgs/msg/Float64MultiArray']},
                                        rates_hz={JS: 0.0}))
    assert not ok
    assert any('expected sensor_msgs/msg/JointState' in p for p in failing['joint_states'])
    assert any('no message received' in p for p in failing['joint_states'])


def test_required_sensor_is_missing_when_asked_for():
    failing, ok = _failing(_robot_graph(), imu=True)
    assert not ok and 'imu' in failing


def test_probe_sees_a_live_driver_graph(context):
    """A fake driver publishes joint states and an IMU at 50 Hz; the probe measures them."""
    driver = Node('fake_driver', context=context)
    js_pub = driver.create_publisher(JointState, JS, 10)
    imu_pub = driver.create_publisher(Imu, topics.IMU, 10)

    def tick():
        js = JointState(name=['env0/j1', 'env0/j2'], position=[0.0, 0.1])
        js_pub.publish(js)
        imu = Imu()
        imu.header.frame_id = 'env0/imu'
        imu_pub.publish(imu)
    driver.create_timer(0.02, tick)
    probe = Node('unilab_check_robot', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(driver)
    executor.add_node(probe)
    try:
        # Contract at 20 Hz for a 50 Hz driver: a busy CI machine may delay timer ticks.
        items = robot_contract(20.0, imu=True)
        snap = probe_graph(probe, items, window_s=1.0, discovery_s=0.5,
                           spin=lambda t: executor.spin_once(timeout_sec=t))
    finally:
        executor.shutdown()
        probe.destroy_node()
        driver.destroy_node()
    results = {r.item.key: r for r in check_contract(items, snap)}
    assert results['joint_states'].met and results['imu'].met
    assert snap.frames[JS][:2] == ['env0/j1', 'env0/j2']
    assert 10.0 < snap.rates_hz[JS] < 75.0  # a 50 Hz timer, measured over ~1 s
    assert not results['task_state'].met and not results['safe_command'].met
    assert not contract_ok(list(results.values()))
