# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
End to end in the training graph: bridge <- safety <- a scripted policy, over real topics.

The policy answers every step with random actions (some rows NaN, some far
outside the limits) and pauses once, long enough for the watchdog to publish
fallbacks. The bridge must step exactly once per safe command, ignore the
fallbacks (counting them) and never see a bad command; its counters must agree
with the safety node's.
"""

import math

import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from spec_helpers import node_parameters
from unilab_core.ros.tensor_msg import make_batch
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch
from unilab_safety.safety_node import SafetyNode
import yaml

tasks = pytest.importorskip('unilab_bridge.tasks')
bridge_node = pytest.importorskip('unilab_bridge.bridge_node')

N = 4
STEPS = 30
PAUSE_AT = 10


class ScriptedPolicy(Node):
    """Answer each new task_state seq with a random action; hold one answer back a while."""

    def __init__(self, context, names, action_dim):
        super().__init__('scripted_policy', context=context)
        qos = QoSProfile(depth=4)
        self.pub = self.create_publisher(TensorBatch, names.action, qos)
        self.create_subscription(TensorBatch, names.task_state, self._on_state, qos)
        self.rng = np.random.default_rng(0)
        self.action_dim = action_dim
        self.answered = set()
        self.pending = None
        self.paused_once = False
        self.stopped = False  # set by the test: no more answers, so nothing is in flight
        self.create_timer(0.15, self._release)

    def _on_state(self, msg):
        if msg.seq in self.answered or self.stopped:
            return
        if msg.seq == PAUSE_AT and not self.paused_once:
            self.paused_once = True
            self.pending = msg.seq  # like a PPO update: no action for a while
            return
        self._answer(msg.seq)

    def _release(self):
        if self.pending is not None:
            seq, self.pending = self.pending, None
            self._answer(seq)

    def _answer(self, seq):
        a = self.rng.normal(0.0, 2.0, (N, self.action_dim)).astype(np.float32)
        a[seq % N, seq % self.action_dim] = np.nan if seq % 3 else 1e30
        self.answered.add(seq)
        self.pub.publish(make_batch('action', seq, {'action': a}))


def test_bridge_applies_only_safe_commands(context, private_topics, tmp_path):
    task = tasks.make_task('arm6_reach', 1, seed=0)
    names, dt = list(task.joint_names), float(task.control_dt)
    clean = {j: {k: v for k, v in lim.items() if not (isinstance(v, float) and math.isnan(v))}
             for j, lim in task.joint_limits.items()}
    task.close()
    limits = tmp_path / 'limits.yaml'
    limits.write_text(yaml.safe_dump({'joint_limits': clean}))
    safety_params = {'joint_limits_file': str(limits), 'joint_names': names, 'dt': dt,
                     'num_envs': N, 'lockstep': True, 'watchdog_timeout_s': 0.02,
                     'mlockall': False, 'rt_priority': 0, 'diagnostics_period_s': 60.0}
    safety = SafetyNode(context=context, cli_args=private_topics.args,
                        parameter_overrides=node_parameters(**safety_params))
    bridge = bridge_node.BridgeNode(
        context=context, cli_args=private_topics.args,
        parameter_overrides=[Parameter('run.task', value='arm6_reach'),
                             Parameter('num_envs', value=N),
                             Parameter('bridge.state_timeout_s', value=5.0)])
    policy = ScriptedPolicy(context, private_topics, len(names))
    executor = SingleThreadedExecutor(context=context)
    for n in (safety, bridge, policy):
        executor.add_node(n)
    try:
        assert spin_until(executor, lambda: bridge.seq >= STEPS, 60.0), bridge.counters
        # Stop answering, then let the last command and any fallbacks in flight arrive
        # (the gate runs in its own process: a snapshot mid-step would race it).
        policy.stopped = True
        spin_until(executor, lambda: False, 0.3)
        # The watchdog keeps sending a fallback every 20 ms while no action arrives, from
        # the gate's own thread: stop the gate so the counts stop moving, then let the
        # bridge take in what is still in flight.
        safety.close()
        snap = {}

        def settled():
            snap['stats'], snap['counters'] = safety.stats(), dict(bridge.counters)
            # The command topic keeps the latest message: one the bridge's executor had
            # not taken before the next arrived is skipped, and counted as such.
            snap['skipped'] = bridge.command_sub.counters()['inproc_skipped']
            return (snap['counters'].get('fallback_commands', 0) + snap['skipped']
                    >= snap['stats']['published_fallback'])

        spin_until(executor, settled, 5.0)
        stats, counters = snap['stats'], snap['counters']
    finally:
        executor.shutdown()
        for n in (policy, bridge, safety):
            n.destroy_node()
    assert policy.paused_once
    assert counters['bad_commands'] == 0
    # Every step went through the gate, one safe command per step, nothing else applied.
    assert stats['published_command'] == stats['commands'] == stats['batches'] + stats[
        'resent_actions']
    assert counters['steps'] == bridge.seq
    assert counters['steps'] + counters['stale_commands'] == stats['published_command']
    assert stats['passed'] + stats['clamped'] + stats['rejected'] == stats['batches'] * N
    assert stats['rejected'] >= 1  # the NaN rows were held, not applied
    # The pause tripped the watchdog; the bridge saw each fallback and stepped on none.
    assert stats['published_fallback'] >= 1
    # Every fallback reached the bridge or was skipped (counted) for a newer message;
    # commands are never skipped (each step waits for its own).
    assert counters.get('fallback_commands', 0) + snap['skipped'] == stats['published_fallback']
