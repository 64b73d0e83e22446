# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A few seconds of hostile traffic at a real safety node: count unsafe outputs (must be 0).

A publisher floods the node's topics with random actions (NaN, +-Inf, 1e300,
wrong shapes, dtypes, a forged ``reset`` tensor), random joint states (NaN,
outside the limits, wrong names, wrong lengths) and, in lock-step mode,
random task states (episode starts, malformed flags). Every command the node
publishes must be finite, inside the hard range and at most one step
(``max_velocity * dt``) from the previous command or from a joint position
that was measured (published) before it: the gate's contract, whatever the
traffic. The node must keep running and count what it refused.
"""

import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from spec_helpers import node_parameters
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch
from unilab_safety.safety_node import SafetyNode
import yaml

JOINTS = ['a', 'b']
N, DT = 2, 0.05
LIMITS = {'joint_limits': {
    'a': {'min_position': -1.0, 'max_position': 1.0, 'max_velocity': 2.0},
    'b': {'min_position': 0.0, 'max_position': 2.0, 'max_velocity': 1.0}}}
LO, HI = np.array([-1.0, 0.0]), np.array([1.0, 2.0])
STEP = np.array([2.0, 1.0]) * DT
DURATION_MESSAGES = 1500


class Hostile(Node):
    """Publishes random, often malformed traffic; records what the gate sends."""

    def __init__(self, context, names, seed):
        super().__init__('hostile', context=context)
        qos = QoSProfile(depth=50)
        self.rng = np.random.default_rng(seed)
        self.action_pub = self.create_publisher(TensorBatch, names.action, qos)
        self.task_pub = self.create_publisher(TensorBatch, names.task_state, qos)
        self.js_pub = self.create_publisher(JointState, names.joint_states, qos)
        self.out = []  # (kind, command) in arrival order
        self.measured = []  # every joint position published with valid names
        self.create_subscription(TensorBatch, names.safe_command, self._on_command, qos)
        self.seq = 0

    def _on_command(self, msg):
        b = read_batch(msg)
        self.out.append((b.kind, np.array(b.tensors['command'], np.float64),
                         len(self.measured)))

    def _values(self, shape):
        r = self.rng
        v = r.uniform(-3.0, 3.0, shape)
        mask = r.random(shape)
        v[mask < 0.05] = np.nan
        v[(mask >= 0.05) & (mask < 0.08)] = np.inf
        v[(mask >= 0.08) & (mask < 0.1)] = -1e300
        return v

    def step(self):
        r = self.rng
        kind = r.integers(0, 10)
        stamp = self.seq * 20_000_000
        if kind < 5:
            shape = (N, len(JOINTS)) if r.random() < 0.85 else tuple(r.integers(0, 4, 2))
            tensors = {'action': self._values(shape).astype(r.choice([np.float32,
                                                                      np.float64]))}
            if r.random() < 0.3:
                tensors['reset'] = np.ones(N, np.float32)  # forged: must change nothing
            self.action_pub.publish(make_batch('action', self.seq, tensors,
                                               stamp_ns=stamp))
            self.seq += int(r.integers(0, 2))  # sometimes the same step again
        elif kind < 8:
            msg = JointState()
            msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp, 10 ** 9)
            names = [f'env{i}/{j}' for i in range(N) for j in JOINTS]
            pos = self._values(N * len(JOINTS))
            if r.random() < 0.1:
                names = names[:-1]  # a joint missing: refused
            elif r.random() < 0.1:
                pos = pos[:-1]  # one value short: refused
            else:
                self.measured.append(pos.reshape(N, len(JOINTS)).copy())
            msg.name, msg.position = names, [float(x) for x in pos]
            self.js_pub.publish(msg)
        else:
            flags = (r.random(N) < 0.5).astype(np.float32)
            if r.random() < 0.1:
                flags = np.full(N + 1, np.nan, np.float32)  # malformed
            self.task_pub.publish(make_batch('task_state', self.seq, {
                'terminated': flags, 'truncated': np.zeros_like(flags)}, stamp_ns=stamp))


def _reachable(cmd, candidates):
    """Return rows of ``cmd`` within one step of none of the candidate references."""
    ok = np.zeros(N, bool)
    for c in candidates:
        c = np.clip(c, LO, HI)
        # The command topic carries float32: allow its rounding, nothing more.
        ok |= np.all(np.abs(cmd - c) <= STEP + 1e-6, axis=1)
    return ~ok


@pytest.mark.parametrize('lockstep', [False, True])
def test_no_unsafe_command_under_hostile_traffic(context, tmp_path, private_topics, lockstep):
    limits = tmp_path / 'limits.yaml'
    limits.write_text(yaml.safe_dump(LIMITS))
    node = SafetyNode(context=context, cli_args=private_topics.args,
                      parameter_overrides=node_parameters(
                          joint_limits_file=str(limits), joint_names=JOINTS, dt=DT,
                          num_envs=N, lockstep=lockstep, watchdog_timeout_s=0.03,
                          mlockall=False, rt_priority=0, diagnostics_period_s=60.0))
    hostile = Hostile(context, private_topics, seed=int(lockstep))
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(hostile)
    try:
        assert spin_until(executor, lambda: hostile.action_pub.get_subscription_count() > 0
                          and hostile.js_pub.get_subscription_count() > 0, 5.0)
        for _ in range(DURATION_MESSAGES):
            hostile.step()
            executor.spin_once(timeout_sec=0.0)
        spin_until(executor, lambda: False, 0.3)
        assert node.rt.alive  # the node kept running
        stats = node.stats()
    finally:
        executor.shutdown()
        hostile.destroy_node()
        node.destroy_node()
    unsafe = 0
    prev = None
    for kind, cmd, n_measured in hostile.out:
        assert kind in ('command', 'fallback', 'estop')
        if cmd.shape != (N, len(JOINTS)) or not np.all(np.isfinite(cmd)) \
                or np.any(cmd < LO - 1e-6) or np.any(cmd > HI + 1e-6):
            unsafe += N
            continue
        candidates = hostile.measured[:n_measured] + ([prev] if prev is not None else [])
        unsafe += int(_reachable(cmd, candidates).sum())
        prev = cmd
    assert unsafe == 0
    assert len(hostile.out) > 50  # the gate did answer, not merely stay silent
    assert stats['bad_joint_states'] > 0 and stats['rejected'] > 0  # refused and counted
