# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Safety node: the only path from a policy's action to the actuators.

It listens to its configured action topic only, passes every batch through
the :class:`~unilab_safety.gate.SafetyGate` (joint limits in ros2_control's
vocabulary, NaN/Inf rejection with hold) and publishes the safe command that
the bridge or robot driver accepts. Counters go to /diagnostics and to
``<run_dir>/safety_stats.json``.
"""

from __future__ import annotations

import json
import pathlib

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from unilab_core import topics
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError
from unilab_core.ros.tensor_msg import make_batch, read_batch, TensorMessageError
from unilab_interfaces.msg import TensorBatch

from unilab_safety.gate import ActionShapeError, SafetyGate
from unilab_safety.limits import LimitsError, load_joint_limits


class SafetyNode(Node):
    """Gate raw actions into safe commands."""

    def __init__(self, **kwargs):
        super().__init__('safety', **kwargs)
        p = self.declare_parameter
        limits_file = p('joint_limits_file', '').value
        joint_names = list(p('joint_names', ['']).value)
        interface = p('interface', 'position').value
        dt = p('dt', 0.02).value
        self.num_envs = p('num_envs', 1).value
        allow_unlimited = p('allow_unlimited_joints', False).value
        max_delta = p('max_delta', 0.0).value
        fallback = p('fallback', 'hold').value
        period = p('diagnostics_period_s', 1.0).value
        run_dir = p('run_dir', '').value
        self.stats_path = pathlib.Path(run_dir) / 'safety_stats.json' if run_dir else None
        if not limits_file:
            raise ConfigError('safety: parameter `joint_limits_file` is required')
        try:
            limits = load_joint_limits(limits_file, joint_names, allow_unlimited=allow_unlimited)
        except LimitsError as exc:
            raise ConfigError(f'safety: {exc}') from None
        try:
            self.gate = SafetyGate(limits, interface, dt, max_delta=max_delta or None,
                                   fallback=fallback)
        except ValueError as exc:
            raise ConfigError(f'safety: {exc}') from None
        self.joint_names = joint_names
        self.batches = 0
        self.bad_messages = 0
        self._logged: set[str] = set()
        qos = QoSProfile(depth=4)
        self.pub = self.create_publisher(TensorBatch, topics.SAFE_COMMAND, qos)
        self.diag_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, 10)
        self.create_subscription(TensorBatch, topics.ACTION, self._on_action, qos)
        self.create_timer(period, self._publish_diagnostics)
        self.get_logger().info(
            f'gating {len(joint_names)} joints ({interface}) from {topics.ACTION} '
            f'to {topics.SAFE_COMMAND}; limits {limits_file}')

    def _log_once(self, kind: str, text: str) -> None:
        if kind not in self._logged:
            self._logged.add(kind)
            self.get_logger().error(text)

    def _on_action(self, msg: TensorBatch) -> None:
        self.batches += 1
        try:
            batch = read_batch(msg)
            action = batch.tensors['action']
        except (TensorMessageError, KeyError) as exc:
            # Without a readable seq we cannot answer this step; the bridge's
            # timeout re-sends the state and the policy answers again.
            self.bad_messages += 1
            self.gate.reject_batch(self.num_envs)
            self._log_once('bad_message', f'rejected malformed action message: {exc}')
            return
        reset = batch.tensors.get('reset')
        if reset is not None and reset.shape == (self.num_envs,) and reset.any():
            self.gate.reset(np.flatnonzero(reset))
        try:
            # The gate accepts any row count (and a flat [J]); here a row is an env, so
            # anything but [num_envs, J] would publish a command the bridge refuses
            # and reset every row's rate limit.
            expected = (self.num_envs, self.gate.n_joints)
            if action.shape != expected:
                raise ActionShapeError(f'expected action of shape {list(expected)}, '
                                       f'got {list(action.shape)}')
            command = self.gate.filter(action).command
        except ActionShapeError as exc:
            self.gate.reject_batch(self.num_envs)
            self._log_once('shape', f'rejected action batch: {exc}; holding')
            command = self.gate.hold_command(n_rows=self.num_envs)
        self.pub.publish(make_batch('command', batch.seq, {'command': command},
                                    version=batch.version, stamp_ns=batch.stamp_ns))

    def stats(self) -> dict:
        """Return the counters as plain data."""
        c = self.gate.counters
        out = {k: int(v) for k, v in c.items() if np.isscalar(v)}
        out.update(batches=self.batches, bad_messages=self.bad_messages)
        return out

    def _publish_diagnostics(self) -> None:
        stats = self.stats()
        status = DiagnosticStatus()
        status.name = 'unilab_safety: gate'
        status.hardware_id = 'unilab'
        rejected = stats.get('rejected', 0)
        status.level = DiagnosticStatus.WARN if rejected else DiagnosticStatus.OK
        status.message = f'{rejected} rejected rows' if rejected else 'ok'
        status.values = [KeyValue(key=k, value=str(v)) for k, v in stats.items()]
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [status]
        self.diag_pub.publish(arr)
        self._write_stats(stats)

    def _write_stats(self, stats: dict) -> None:
        if self.stats_path is not None and self.stats_path.parent.is_dir():
            atomic_write_text(self.stats_path, json.dumps(stats, indent=2))

    def close(self) -> None:
        """Flush the counters to the run directory."""
        self._write_stats(self.stats())


def main(args=None):
    """Run the safety node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(SafetyNode, args)


if __name__ == '__main__':
    main()
