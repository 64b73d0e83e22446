# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A plain rclpy process, as a user's own tool would be, watching a training run.

Prints one JSON line: the node names it saw and how many messages it received on
the training graph's joint states, clock and action, and on the robot-facing
``/joint_states`` and ``/clock`` a driver and ``use_sim_time`` nodes read (which a
training graph must leave alone). Exits when it has seen everything or after a timeout.
"""

import json
import sys
import time

import rclpy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from unilab_interfaces.msg import TensorBatch

EXPECTED = {'bridge', 'perception', 'policy', 'trainer', 'safety'}


def main():
    timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    rclpy.init()
    node = rclpy.create_node('observer')
    got = {'joint_states': 0, 'clock': 0, 'action': 0, 'joint_names': 0,
           'robot_joint_states': 0, 'robot_clock': 0}

    def count(key):
        return lambda msg: got.__setitem__(key, got[key] + 1)

    def on_js(msg):
        got['joint_states'] += 1
        got['joint_names'] = len(msg.name)

    node.create_subscription(JointState, '/unilab/sim/joint_states', on_js, 10)
    node.create_subscription(Clock, '/unilab/sim/clock', count('clock'), 10)
    node.create_subscription(TensorBatch, '/unilab/action', count('action'), 10)
    node.create_subscription(JointState, '/joint_states', count('robot_joint_states'), 10)
    node.create_subscription(Clock, '/clock', count('robot_clock'), 10)
    deadline = time.monotonic() + timeout
    seen = set()
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
        seen = set(node.get_node_names()) & EXPECTED
        if seen == EXPECTED and min(got['joint_states'], got['clock'], got['action']) >= 20:
            break
    print(json.dumps({'nodes': sorted(seen), **got}), flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == '__main__':
    main()
