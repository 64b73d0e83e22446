# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A plain rclpy process that records the stamps of a running graph's topics.

Prints one JSON line: the stamps (ns) of the training graph's clock and joint states
(``/unilab/sim/clock``, ``/unilab/sim/joint_states``) and the action
tensor topic, and every /diagnostics status (node, level, hardware id,
message, stamp). Exits when every expected node has reported twice and each
topic has a few messages, or after a timeout.
"""

import json
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
import rclpy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from unilab_interfaces.msg import TensorBatch

EXPECTED = {'/bridge', '/perception', '/policy', '/trainer', '/safety'}


def _ns(stamp) -> int:
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def main():
    timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    rclpy.init()
    node = rclpy.create_node('clock_observer')
    got = {'clock': [], 'joint_states': [], 'action': [], 'diagnostics': []}
    node.create_subscription(Clock, '/unilab/sim/clock',
                             lambda m: got['clock'].append(_ns(m.clock)), 100)
    node.create_subscription(JointState, '/unilab/sim/joint_states',
                             lambda m: got['joint_states'].append(_ns(m.header.stamp)), 10)
    node.create_subscription(
        TensorBatch, '/unilab/action',
        lambda m: got['action'].append(m.stamp_sec * 1_000_000_000 + m.stamp_nanosec), 10)

    def on_diag(msg):
        for s in msg.status:
            got['diagnostics'].append({
                'name': s.name, 'level': int.from_bytes(s.level, 'little'),
                'hardware_id': s.hardware_id, 'message': s.message,
                'stamp': _ns(msg.header.stamp), 'keys': [kv.key for kv in s.values]})

    node.create_subscription(DiagnosticArray, '/diagnostics', on_diag, 50)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.1)
        names = [d['name'] for d in got['diagnostics']]
        if all(names.count(n) >= 2 for n in EXPECTED) and len(got['joint_states']) >= 3 \
                and len(got['action']) >= 3:
            break
    print(json.dumps(got), flush=True)
    node.destroy_node()
    rclpy.shutdown()


if __name__ == '__main__':
    main()
