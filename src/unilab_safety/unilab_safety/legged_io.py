# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The legged supervisor inside the safety node: its inputs, its motor-rate loop, its output.

- inputs: the measured joint positions and velocities (the safety node's joint-state
  subscription hands them over, mapped by name), the IMU's orientation
  (``sensor_msgs/Imu`` on ``imu_topic``; refused when not finite or not a unit quaternion,
  counted), the gate's outputs (the gated policy targets, ``target``);
- a deadline-scheduled thread (``rt.RtLoop``) at ``legged.motor_rate_hz`` runs
  ``LeggedSupervisor.tick`` on the wall clock and publishes each command through the
  node's ``CommandOutput`` (``forward_command``: ``Float64MultiArray`` in the controller's
  joint order), so the PD's torques reach an effort controller at the motor rate;
- operator calls: arm (stand up), disarm (lie down), reset (clear a latched fall stop);
- a stop signal (Ctrl-C, SIGTERM: ``unilab_core.stop``): the executor delivers no input
  after it, so the loop's next tick puts the robot in damping (``request_stop``) rather
  than latching a stale-input fault while the process closes.

The motors' limits come from the robot model (``MotorLimits.from_model``), each motor found
by its joint's name, so a model in another joint order maps right.
"""

from __future__ import annotations

import math
import sys
import time

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Imu

from unilab_core import stop
from unilab_safety.legged import LeggedSupervisor, Mode, motor_limits
from unilab_safety.params import SafetySpec
from unilab_safety.rt import RtLoop

#: ``arm_after_nodes``: how often the graph is looked at while waiting for them (s).
PEER_CHECK_S = 0.5
#: ``deploy --armed`` stands the robot up once its inputs have streamed this long (s).
AUTO_ARM_AFTER_S = 0.5


class LeggedIO:
    """Run a LeggedSupervisor for the safety node (module doc)."""

    def __init__(self, node: Node, spec: SafetySpec, publish, qos: QoSProfile):
        """Build the supervisor; ``publish(command [1, J])`` sends one command out."""
        self.spec = spec
        limits = motor_limits(spec.motor_model_file, list(spec.joint_names))
        self.sup = LeggedSupervisor(spec.legged, limits, spec.legged_interface)
        self._publish = publish
        self.published = 0
        self.imu_refused = 0
        self.publish_errors = 0
        self.auto_arm = bool(spec.armed)
        self.auto_armed = False
        self._streaming_since = None
        self._waiting_for = [n if n.startswith('/') else '/' + n for n in spec.arm_after_nodes]
        self._waiting_logged = False
        self._peers_checked = 0
        self._logger = node.get_logger()
        self._fault_logged = ''  # the latched fault last written to the log
        self._node = node
        self._switch_before: float | None = None  # the interval before start()
        self._stopping = False  # the process took a stop signal (``_tick``)
        node.create_subscription(Imu, spec.imu_topic, self._on_imu, qos)
        # A plain thread, not the gate loop's SCHED_FIFO: at that priority the loop measured
        # a shorter tail but the Go2 deploy system test latched stale joint states around a
        # knock-over in 2 of 3 suite runs on 2 cores (the double starved; docs/legged.md).
        rt = spec.safety
        self.loop = RtLoop(self._tick, spec.legged.motor_rate_hz, 0.0, 0, rt.cpu_affinity,
                           rt.mlockall, name='unilab_legged')

    def start(self):
        """Start the motor-rate loop; return its real-time answers."""
        switch_us = self.spec.safety.gil_switch_us
        if switch_us:
            # A thread of this process holding the GIL (the executor, busy with the nodes'
            # callbacks) keeps it for the switch interval after the loop wakes (CPython's
            # 5 ms is two and a half motor periods at 500 Hz); a shorter one interrupts the
            # executor's work, the gate's action path among it, that much more often.
            self._switch_before = sys.getswitchinterval()
            sys.setswitchinterval(switch_us * 1e-6)
        return {**self.loop.start(), 'gil_switch_us': switch_us or None}

    def stop(self) -> None:
        """Stop the motor-rate loop (nothing is published after this returns)."""
        self.loop.stop()
        if self._switch_before is not None:   # the process's own interval again
            sys.setswitchinterval(self._switch_before)
            self._switch_before = None

    # -- inputs -----------------------------------------------------------------------
    def joint_state(self, q: np.ndarray, qd: np.ndarray | None) -> None:
        """Take one robot's measured positions and velocities (velocities required)."""
        now = time.monotonic_ns()
        if qd is None:
            qd = np.full_like(q, np.nan)   # no velocities: a fault when active, said so
        self.sup.joint_state(q, qd, now)
        self._maybe_auto_arm(now)

    def _on_imu(self, msg: Imu) -> None:
        o = msg.orientation
        quat = np.array([o.x, o.y, o.z, o.w], np.float64)
        norm = float(np.linalg.norm(quat)) if np.isfinite(quat).all() else math.nan
        if not abs(norm - 1.0) <= 1e-3 or float(msg.orientation_covariance[0]) == -1.0:
            self.imu_refused += 1
            if self.imu_refused == 1:
                self._logger.error(f'legged: refusing IMU samples without a finite unit '
                                   f'orientation (norm {norm:.4g}); a fall cannot be seen '
                                   'without one')
            return
        self.sup.imu(quat, time.monotonic_ns())

    def target(self, command: np.ndarray) -> None:
        """Take the gate's output for the robot (row 0 of ``[1, J]``)."""
        self.sup.target(command[0])

    def _maybe_auto_arm(self, now: int) -> None:
        # `deploy --armed`: stand up once joint states and IMU have streamed for
        # AUTO_ARM_AFTER_S (a driver's first samples come in bursts), once; a robot found
        # tilted past the bound latches the fall stop.
        if not self.auto_arm or self.auto_armed or self.sup._imu is None:
            return
        if self._streaming_since is None:
            self._streaming_since = now
        if now - self._streaming_since >= AUTO_ARM_AFTER_S * 1e9 and self._peers_joined(now):
            ok, text = self.sup.request_arm(now, latch_tilt=True)
            self.auto_armed = True
            self._logger.warning(f'legged: armed at start: {text}')
            if not ok:
                self._logger.error('legged: armed at start was refused; call ~/arm')

    def _peers_joined(self, now: int) -> bool:
        """Return whether every ``arm_after_nodes`` node is up with its subscriptions."""
        if not self._waiting_for:
            return True
        if now - self._peers_checked < PEER_CHECK_S * 1e9:
            return False
        self._peers_checked = now
        up = {ns.rstrip('/') + '/' + n for n, ns in self._node.get_node_names_and_namespaces()}
        for full in list(self._waiting_for):
            ns, _, name = full.rpartition('/')
            try:
                joined = full in up and bool(self._node.get_subscriber_names_and_types_by_node(
                    name, ns or '/'))
            except Exception:  # rclpy: the node left between the two questions
                joined = False
            if joined:
                self._waiting_for.remove(full)
        if self._waiting_for and not self._waiting_logged:
            self._waiting_logged = True
            self._logger.info(f'legged: armed at start once {", ".join(self._waiting_for)} '
                              'joined the graph')
        return not self._waiting_for

    # -- operator calls ---------------------------------------------------------------
    def arm(self, armed: bool) -> tuple[bool, str]:
        """Stand up and hand over to the policy (armed) or lie down (disarmed)."""
        now = time.monotonic_ns()
        return self.sup.request_arm(now) if armed else self.sup.request_disarm(now)

    def reset(self) -> tuple[bool, str]:
        """Clear a latched fall stop (into passive) if every bound holds."""
        return self.sup.clear_fault(time.monotonic_ns())

    def final_command(self) -> np.ndarray | None:
        """Return the last word of a stopping node: no torque, or the measured pose."""
        js = self.sup._js
        if self.spec.legged_interface == 'effort':
            return np.zeros((1, self.sup.n_joints))
        if js is None or not np.isfinite(js[0]).all():
            return None
        return js[0][None].copy()

    # -- the motor-rate loop ----------------------------------------------------------
    def _tick(self, _deadline_ns: int) -> None:
        now = time.monotonic_ns()
        if stop.STOP_SIGNALS and not self._stopping:
            self._stopping = True
            if self.sup.request_stop(now, 'stop signal: the node is closing'):
                self._logger.warning('legged: stop signal: damping until the node closes')
        out = self.sup.tick(now)
        if out.command is None:
            return
        try:
            self._publish(out.command[None])
        except Exception as exc:  # noqa: B902 - context going away; never kill the loop
            self.publish_errors += 1
            if self.publish_errors == 1:
                self._logger.error(f'legged: could not publish a command: {exc}')
            return
        self.published += 1

    def stats(self) -> dict:
        """Return the supervisor's status and this loop's counters."""
        out = self.sup.status()
        summary = self.loop.stats.summary()
        out.update({'legged_published': self.published,
                    'legged_imu_refused': self.imu_refused,
                    'legged_publish_errors': self.publish_errors,
                    'legged_rate_hz': round(1e9 / self.loop.period_ns, 3),
                    'legged_loop_cycles': self.loop.cycles,
                    'legged_deadline_misses': self.loop.deadline_misses,
                    'legged_loop': 'running' if self.loop.alive else
                    f'stopped: {self.loop.error}'})
        out.update({f'legged_{k}': v for k, v in summary.items()})
        return out

    def errors(self) -> list[str]:
        """Return the health errors: a latched fall stop, a dead loop."""
        errors = []
        # A fall stop goes to the log too, once per latch: here, on the diagnostics path,
        # never on the motor-rate thread.
        fault = self.sup.fault
        if fault and fault != self._fault_logged:
            self._logger.error(f'legged: FALL STOP latched: {fault}')
        self._fault_logged = fault
        if self.sup.mode == Mode.FAULT:
            errors.append(f'FALL STOP latched: {self.sup.fault} (call ~/reset_estop, then '
                          '~/arm)')
        if not self.loop.alive and self.loop.error is not None:
            errors.append(f'legged motor loop stopped: {self.loop.error}')
        return errors
