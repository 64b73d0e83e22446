# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The Go2 deployed on its double over DDS: stand-up, arm, policy, shove, fall stop, re-arm.

Separate processes as on a robot: the legged double (``unilab robot-sim --robot
go2``: its own 1 kHz simulation, the driver's PD with the declared gains) and
``unilab deploy`` (perception, policy, safety with the legged supervisor); this process is
the operator (services, ``/cmd_vel``, the double's push) and reads the double's ground
truth (``/odom``). The policy is a freshly initialised ``go2_walk`` network: its targets
stay near the default pose, so the robot stands; walking needs a trained policy and is
measured by ``unilab bench robot --robot go2_effort`` (docs/legged.md). What is checked here is
the supervisor on a robot: nothing but damping before arming, a stand-up from lying
within the torque limits, the policy blended in, a small shove survived, a big one caught
by the latched fall stop, arming refused until a reset.
"""

import json
import math
import pathlib
import threading
import time

from geometry_msgs.msg import Twist, Vector3
from nav_msgs.msg import Odometry
import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from test_deploy_system import _fresh_run, Process, WAIT_S
from unilab_bringup.paths import profile_path
from unilab_core.robot_profile import load_profile
import yaml

GO2 = load_profile(profile_path('go2'))


class Go2Operator:
    """Services, pushes and /cmd_vel out; ground truth, joint states and commands in."""

    def __init__(self):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('go2_test_operator', context=self.context)
        self.height = math.nan
        self.tilt = math.nan
        self.commands = []
        self.q = None
        self.node.create_subscription(Odometry, '/odom', self._on_odom, 10)
        self.node.create_subscription(JointState, GO2.joint_states_topic, self._on_js, 10)
        self.node.create_subscription(Float64MultiArray, GO2.command.topic,
                                      lambda m: self.commands.append(np.array(m.data)), 50)
        self.push_pub = self.node.create_publisher(Vector3, '/legged_double/push', 10)
        self.cmd_pub = self.node.create_publisher(Twist, GO2.task_inputs.cmd_vel_topic, 10)
        self.node.create_timer(0.1, lambda: self.cmd_pub.publish(Twist()))   # stand still
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def _on_odom(self, msg) -> None:
        o = msg.pose.pose.orientation
        self.height = msg.pose.pose.position.z
        self.tilt = math.acos(max(-1.0, min(1.0, 1 - 2 * (o.x * o.x + o.y * o.y))))

    def _on_js(self, msg) -> None:
        index = {n: i for i, n in enumerate(msg.name)}
        self.q = np.array([msg.position[index[n]] for n in GO2.controller_joints])

    def call(self, service: str) -> Trigger.Response:
        client = self.node.create_client(Trigger, f'/safety/{service}')
        assert client.wait_for_service(timeout_sec=WAIT_S), f'no /safety/{service}'
        return client.call(Trigger.Request(), timeout_sec=WAIT_S)

    def wait(self, what, timeout_s, *procs, why='', stats_dir=None):
        end = time.monotonic() + timeout_s
        while not what():
            for p in procs:
                assert p.poll() is None, f'a process exited:\n{p.output()[-3000:]}'
            if time.monotonic() >= end:
                # What the gate last wrote (mode, fault, counters) and both outputs.
                legged = {k: v for k, v in (_stats(stats_dir) if stats_dir else {}).items()
                          if k.startswith(('legged', 'stand', 'policy'))}
                raise AssertionError(f'timed out: {why}; height {self.height:.3f}, tilt '
                                     f'{self.tilt:.2f}; {len(self.commands)} commands; '
                                     f'gate: {legged}\n'
                                     + '\n'.join(p.output()[-3000:] for p in procs))
            time.sleep(0.02)

    def close(self) -> None:
        self.executor.shutdown()
        self._thread.join(timeout=5)
        self.node.destroy_node()
        self.context.try_shutdown()


def _stats(run_dir):
    path = run_dir / 'safety_stats.json'
    return json.loads(path.read_text()) if path.is_file() else {}


@pytest.mark.system
def test_go2_stands_up_takes_the_policy_and_latches_the_fall_stop(tmp_path):
    run = _fresh_run(tmp_path / 'run', 'go2_walk')
    op = Go2Operator()
    double = Process('robot-sim', '--robot', 'go2', '--variant', 'nominal')
    deploy_dir = tmp_path / 'd'
    deploy = Process('deploy', run, '--robot', 'go2', '--run-dir', deploy_dir)
    try:
        # Disarmed: the supervisor is passive; a position driver is sent the measured pose.
        # The double's ground truth (/odom) comes on its own topic, matched on its own time.
        op.wait(lambda: len(op.commands) >= 20 and op.q is not None
                and math.isfinite(op.height), WAIT_S, double, deploy,
                why='passive commands and the double\'s /odom')
        assert np.allclose(op.commands[-1], op.q, atol=0.05)
        lying = op.height
        assert lying < 0.2
        # Arm: stand up from lying, then the policy (a fresh network: near the default pose).
        reply = op.call('arm')
        assert reply.success, reply.message
        op.wait(lambda: op.height > 0.2, 20.0, double, deploy, why='stand-up',
                stats_dir=deploy_dir)
        op.wait(lambda: _stats(deploy_dir).get('legged_mode') == 'policy', 20.0, double,
                deploy, why='policy mode', stats_dir=deploy_dir)
        time.sleep(1.0)
        assert op.height > 0.2 and op.tilt < 0.3
        # A small shove: still standing, still the policy.
        op.push_pub.publish(Vector3(x=0.3, y=0.0, z=0.0))
        time.sleep(1.5)
        assert op.tilt < 0.5, f'a 0.3 m/s shove tipped the robot ({op.tilt:.2f} rad)'
        # A big one knocks it over: the fall stop latches into damping.
        op.push_pub.publish(Vector3(x=0.0, y=3.5, z=0.0))
        op.wait(lambda: _stats(deploy_dir).get('legged_mode') == 'fault', 10.0, double,
                deploy, why='fall stop')
        stats = _stats(deploy_dir)
        assert stats['legged_faults_tilt'] == 1, stats['legged_fault']
        op.wait(lambda: 'legged: FALL STOP latched: ' in deploy.output(), 10.0, double, deploy,
                why='the fall stop in the log')
        time.sleep(0.5)
        assert np.allclose(op.commands[-1], op.q, atol=0.05)   # damping: the measured pose
        # Re-arming needs an explicit reset; a reset while lying on its side is refused.
        reply = op.call('arm')
        assert not reply.success and 'reset_estop' in reply.message
        reply = op.call('reset_estop')
        assert not reply.success and 'fall stop stays latched' in reply.message
    finally:
        deploy.stop()
        double.stop()
        op.close()
    assert 'Traceback' not in deploy.output() + double.output()
    final = _stats(deploy_dir)
    assert final['legged_stand_ups'] == 1 and final['legged_arms_refused'] >= 1
    # Every target sent was finite and inside the profile's joint limits, by joint name.
    limits = yaml.safe_load(pathlib.Path(GO2.joint_limits_file).read_text())['joint_limits']
    lo = np.array([limits[n]['min_position'] for n in GO2.controller_joints])
    hi = np.array([limits[n]['max_position'] for n in GO2.controller_joints])
    sent = np.array(op.commands)
    assert np.isfinite(sent).all() and np.all(sent >= lo) and np.all(sent <= hi)
