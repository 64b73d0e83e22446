# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Safety node: the only path from a policy's action to the actuators.

Three threads, joined only by lock-free slots (see slots.py):

- the ROS executor: the action callback decodes a batch from the configured
  action topic (nothing else) and puts it into a latest-value slot; the
  diagnostics timer and the e-stop reset service (std_srvs/Trigger,
  ``~/reset_estop``) also run here;
- the real-time loop (rt.py): a deadline-scheduled thread at ``rate_hz`` that
  gates each new action once and runs the watchdog (loop.py), writing the
  result into a preallocated output ring;
- a publisher thread, woken through an eventfd, that turns ring entries into
  TensorBatch messages on the safe-command topic (kind ``command`` answers an
  action, ``fallback`` / ``estop`` come from the watchdog).

Counters go to /diagnostics and to ``<run_dir>/safety_stats.json``.
"""

from __future__ import annotations

import json
import os
import pathlib
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import numpy as np
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from std_srvs.srv import Trigger
from unilab_core import topics
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError
from unilab_core.ros.tensor_msg import Batch, make_batch, TensorMessageError
from unilab_core.ros.transport_node import close_endpoints, TensorSubscription
from unilab_interfaces.msg import TensorBatch

from unilab_safety.gate import SafetyGate
from unilab_safety.limits import LimitsError, load_joint_limits
from unilab_safety.loop import ActionIn, SafetyLoop
from unilab_safety.rt import PeriodStats, RtLoop
from unilab_safety.slots import LatestSlot, OutputRing


class SafetyNode(Node):
    """Gate raw actions into safe commands in a real-time loop."""

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
        rate_hz = p('rate_hz', 1000.0).value
        watchdog_timeout_s = p('watchdog_timeout_s', 0.02).value
        watchdog_fallback = p('watchdog_fallback', 'hold').value
        rt_priority = p('rt_priority', 80).value
        cpus = p('cpu_affinity', Parameter.Type.INTEGER_ARRAY).value or []
        mlock = p('mlockall', True).value
        busy_wait_us = p('busy_wait_us', 0.0).value
        box = p('workspace_box', Parameter.Type.DOUBLE_ARRAY).value or []
        model_file = p('workspace_model_file', '').value
        lookahead_s = p('lookahead_s', 0.1).value
        # Lock-step simulation: the consumer steps on 'command' only, so fallbacks are
        # published but never applied (they must not become the rows' reference).
        lockstep = p('lockstep', False).value
        self.stats_path = pathlib.Path(run_dir) / 'safety_stats.json' if run_dir else None
        if not limits_file:
            raise ConfigError('safety: parameter `joint_limits_file` is required')
        try:
            limits = load_joint_limits(limits_file, joint_names, allow_unlimited=allow_unlimited)
        except LimitsError as exc:
            raise ConfigError(f'safety: {exc}') from None
        try:
            lookahead = None
            if len(box):
                if not model_file:
                    raise ValueError('parameter `workspace_box` needs `workspace_model_file` '
                                     '(the MJCF model for forward kinematics)')
                from unilab_safety.lookahead import WorkspaceLookahead
                lookahead = WorkspaceLookahead(model_file, joint_names, list(box), lookahead_s,
                                               dt, limits.pos_lo, limits.pos_hi)
            self.gate = SafetyGate(limits, interface, dt, max_delta=max_delta or None,
                                   fallback=fallback, lookahead=lookahead)
            self.slot = LatestSlot()
            self.ring = OutputRing(64, self.num_envs, len(joint_names))
            self.loop = SafetyLoop(self.gate, self.num_envs, self.slot, self.ring,
                                   watchdog_timeout_s, watchdog_fallback, lockstep)
            # Lock-step training waits for every answer: an action wakes the loop at
            # once instead of at the next tick (~1 ms at 1 kHz, on every control step).
            self._action_wake = os.eventfd(0, os.EFD_NONBLOCK) if lockstep else None
            self.rt = RtLoop(self._tick, rate_hz, busy_wait_us, rt_priority, cpus, mlock,
                             wake_fd=self._action_wake)
        except ValueError as exc:
            raise ConfigError(f'safety: {exc}') from None
        self.joint_names = joint_names
        self.bad_messages = 0
        self.published = {'command': 0, 'fallback': 0, 'estop': 0}
        self.latency = PeriodStats(1 << 14)  # action received -> command published, ns
        self._logged: set[str] = set()
        qos = QoSProfile(depth=4)
        self.pub = self.create_publisher(TensorBatch, topics.SAFE_COMMAND, qos)
        self.diag_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, 10)
        # Actions through the zero-copy transport (or a plain TensorBatch publisher).
        self.action_sub = TensorSubscription(self, topics.ACTION, self._on_action, qos=qos,
                                             on_error=self._bad_action)
        self.create_service(Trigger, '~/reset_estop', self._on_reset)
        self.create_timer(period, self._publish_diagnostics)
        # Publisher thread, woken by the RT loop through an eventfd (a counter: the
        # write never blocks and takes no Python lock).
        self._wake = os.eventfd(0)
        self._closing = False
        self._pub_thread = threading.Thread(target=self._publish_loop, daemon=True,
                                            name='unilab_safety_pub')
        self._pub_thread.start()
        granted = self.rt.start()
        self.get_logger().info(
            f'gating {len(joint_names)} joints ({interface}) from {topics.ACTION} '
            f'to {topics.SAFE_COMMAND} at {rate_hz:g} Hz; watchdog {watchdog_timeout_s:g} s '
            f'-> {watchdog_fallback}; limits {limits_file}')
        answers = granted or {'rt_thread': 'refused: did not start'}
        granted_text = ', '.join(f'{k}: {v}' for k, v in answers.items()
                                 if not v.startswith('refused'))
        refused_text = ', '.join(f'{k}: {v}' for k, v in answers.items()
                                 if v.startswith('refused'))
        self.get_logger().info(f'real-time features: {granted_text or "none"}')
        if refused_text:
            # The loop runs anyway, with worse timing; diagnostics carry the same answers.
            self.get_logger().warning(f'real-time features refused: {refused_text}')

    # -- RT side --------------------------------------------------------------------
    def _tick(self, deadline_ns: int) -> None:
        head = self.ring.head
        self.loop.cycle(deadline_ns)
        if self.ring.head != head:
            os.eventfd_write(self._wake, 1)

    # -- publisher thread -------------------------------------------------------------
    def _publish_loop(self) -> None:
        while True:
            os.eventfd_read(self._wake)
            if self._closing:
                return
            while (entry := self.ring.pop()) is not None:
                msg = make_batch(entry.kind, entry.seq, {'command': entry.command},
                                 version=entry.version, stamp_ns=entry.stamp_ns)
                try:
                    self.pub.publish(msg)
                except Exception:  # noqa: B902 - context shut down while closing
                    if self._closing:
                        return
                    raise
                self.published[entry.kind] += 1
                if entry.t_ns:
                    self.latency.record(time.monotonic_ns() - entry.t_ns)

    # -- ROS callbacks ----------------------------------------------------------------
    def _log_once(self, kind: str, text: str) -> None:
        if kind not in self._logged:
            self._logged.add(kind)
            self.get_logger().error(text)

    def _bad_action(self, exc: Exception) -> None:
        self.bad_messages += 1
        self._log_once('bad_message', f'rejected malformed action message: {exc}')

    def _on_action(self, batch: Batch) -> None:
        recv_ns = time.monotonic_ns()
        try:
            # A copy: the RT loop uses it after this callback, when a shared-memory view
            # would already be back with the writer.
            action = np.array(batch.tensors['action'])
        except (TensorMessageError, KeyError) as exc:
            # Without a readable seq we cannot answer this step; the bridge's
            # timeout re-sends the state and the policy answers again.
            # Counted as a batch of N rejected rows in stats(): the gate's own counters
            # belong to the loop thread, and two writers could lose an update.
            self.bad_messages += 1
            self._log_once('bad_message', f'rejected malformed action message: {exc}')
            return
        reset = batch.tensors.get('reset')
        reset_mask = None
        if reset is not None and reset.shape == (self.num_envs,) and reset.any():
            reset_mask = reset > 0.5
        # The gate accepts any row count; here a row is an env, so anything but
        # [num_envs, J] would publish a command the consumer refuses.
        shape_ok = action.shape == (self.num_envs, self.gate.n_joints)
        if not shape_ok:
            self._log_once('shape', f'rejected action batch: expected shape '
                           f'{[self.num_envs, self.gate.n_joints]}, got {list(action.shape)};'
                           ' holding')
        self.slot.put(ActionIn(batch.seq, batch.version, batch.stamp_ns, action, reset_mask,
                               shape_ok, recv_ns))
        if self._action_wake is not None:
            os.eventfd_write(self._action_wake, 1)

    def _on_reset(self, request, response):
        was = self.loop.estopped
        rid = self.loop.request_reset()
        deadline = time.monotonic() + max(0.5, 20 * self.rt.period_ns * 1e-9)
        while not self.loop.reset_done(rid) and self.rt.alive and time.monotonic() < deadline:
            time.sleep(self.rt.period_ns * 1e-9)
        response.success = self.loop.reset_done(rid)
        if not response.success:
            response.message = 'the safety loop did not acknowledge the reset'
        else:
            response.message = 'e-stop cleared' if was else 'e-stop was not latched'
            self.get_logger().warning(f'reset_estop: {response.message}')
        return response

    # -- diagnostics --------------------------------------------------------------------
    def stats(self) -> dict:
        """Return the counters and timing figures as plain data."""
        out = self.loop.counters()
        out['batches'] += self.bad_messages
        out['rejected'] += self.bad_messages * self.num_envs
        out['bad_messages'] = self.bad_messages
        out.update({f'published_{k}': v for k, v in self.published.items()})
        out['deadline_misses'] = self.rt.deadline_misses
        out['loop_cycles'] = self.rt.cycles
        out['early_cycles'] = self.rt.early_cycles
        out['rate_hz'] = round(1e9 / self.rt.period_ns, 3)
        out.update(self.rt.stats.summary())
        lat = self.latency.summary()
        out.update({k.replace('period_error', 'action_latency'): v for k, v in lat.items()})
        out['fallback_delay_max_ms'] = round(self.loop.fallback_delay_max_ns / 1e6, 3)
        for feature, answer in (self.rt.granted or {}).items():
            out[f'rt_{feature}'] = answer
        out['rt_loop'] = ('running' if self.rt.alive else 'stopped' if self.rt.error is None
                          else f'failed: {self.rt.error!r}')
        return out

    def _publish_diagnostics(self) -> None:
        stats = self.stats()
        status = DiagnosticStatus()
        status.name = 'unilab_safety: gate'
        status.hardware_id = 'unilab'
        problems = []
        if not self.rt.alive and self.rt.error is not None:
            problems.append(f'loop stopped: {self.rt.error!r}')
            self._log_once('loop', f'safety loop stopped: {self.rt.error!r}')
        if stats['estopped']:
            problems.append('E-STOP latched (call ~/reset_estop)')
        if stats['rejected']:
            problems.append(f"{stats['rejected']} rejected rows")
        if problems:
            status.level = DiagnosticStatus.ERROR if stats['estopped'] or not self.rt.alive \
                else DiagnosticStatus.WARN
            status.message = '; '.join(problems)
        else:
            status.level = DiagnosticStatus.OK
            status.message = 'ok'
        status.values = [KeyValue(key=k, value=str(v)) for k, v in stats.items()]
        arr = DiagnosticArray()
        arr.header.stamp = self.get_clock().now().to_msg()
        arr.status = [status]
        self.diag_pub.publish(arr)
        self._write_stats(stats)

    def _write_stats(self, stats: dict) -> None:
        if self.stats_path is not None and self.stats_path.parent.is_dir():
            atomic_write_text(self.stats_path, json.dumps(stats, indent=2))

    def _stop_threads(self) -> None:
        # A node whose __init__ failed (ConfigError) has no threads to stop.
        if getattr(self, '_closing', True):
            return
        self.rt.stop()
        self._closing = True
        os.eventfd_write(self._wake, 1)
        self._pub_thread.join(2.0)
        os.close(self._wake)

    def close(self) -> None:
        """Stop the loop and flush the counters to the run directory."""
        self._stop_threads()
        self._write_stats(self.stats())

    def destroy_node(self):
        """Stop the threads and the transport before the node's handles go away."""
        self._stop_threads()
        close_endpoints(self)
        return super().destroy_node()


def main(args=None):
    """Run the safety node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(SafetyNode, args)


if __name__ == '__main__':
    main()
