# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Safety node: the only path from a policy's action to the actuators.

Three parts, joined only by lock-free slots (in the inline mode the action
callback and the loop thread take turns on one lock instead):

- the ROS executor: the action callback decodes a batch from the configured
  action topic (nothing else) and hands it to the loop through a latest-value
  slot; the diagnostics timer, the e-stop reset service (std_srvs/Trigger,
  ``~/reset_estop``), the joint-state subscription (the measured positions:
  the gate's reference after resets) and, in lock-step simulation, the
  simulator's task state (the only source of episode starts)
  also run here;
- the real-time loop (rt.py): deadline-scheduled at ``rate_hz``, gates each
  new action once and runs the watchdog (loop.py). ``rt_mode: process`` runs
  it in its own pinned SCHED_FIFO process with its own GIL (rt_process.py,
  shared-memory seqlock slots in shm_slots.py); ``rt_mode: thread`` runs it as
  a thread of this process (thread_backend.py); ``rt_mode: inline`` gates each
  action in the action callback itself and leaves the watchdog to the loop
  thread (thread_backend.py); ``auto`` (the default) is ``process`` in
  lock-step simulation and ``inline`` on a robot;
- a publisher thread, woken through an eventfd, that turns the loop's output
  entries into TensorBatch messages on the safe-command topic (kind
  ``command`` answers an action, ``fallback`` / ``estop`` come from the
  watchdog; in the inline mode the action callback publishes its own answer).
  If the loop dies (its process, its thread, or a cycle that raised), this
  thread publishes an ``estop`` hold of the last safe command, and every later
  action is answered the same way.

A legged robot (``legged_interface`` set, legged_io.py): the gated targets go to the
legged supervisor instead of the controller; its own motor-rate thread publishes the
PD's torques (or the targets) on the controller's topic, and arm / disarm / reset_estop
also stand the robot up, lay it down and clear its latched fall stop.

Counters go to /diagnostics and to ``<run_dir>/safety_stats.json``.
"""

from __future__ import annotations

import json
import os
import pathlib
import select
import threading
import time

import numpy as np
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from unilab_core import topics
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError
from unilab_core.ros.diagnostics import NodeDiagnostics
from unilab_core.ros.joint_state_topic import JointStateInput
from unilab_core.ros.params import declare_params
from unilab_core.ros.tensor_msg import Batch, TensorMessageError
from unilab_core.ros.tensor_topic import close_endpoints, TensorSubscription
from unilab_core.stop import STOP_DEFERRED

from unilab_safety.build import build_loop
from unilab_safety.command_output import CommandOutput
from unilab_safety.legged_io import LeggedIO
from unilab_safety.limits import LimitsError
from unilab_safety.loop import ActionIn
from unilab_safety.params import SafetySpec
from unilab_safety.references import EpisodeStarts
from unilab_safety.rt import PeriodStats, RtLoop
from unilab_safety.rt_process import RtProcess
from unilab_safety.slots import LatestSlot, OutputRing
from unilab_safety.thread_backend import InlineBackend, ThreadBackend


#: how the start-up line names where the gate runs (``safety.rt_mode``)
RT_MODE_WORDS = {'process': 'in a real-time process', 'thread': 'in a real-time thread',
                 'inline': 'each action gated on arrival, the loop thread runs the watchdog'}

#: how long the action callback waits for the loop's answer and publishes it
#: itself (``_answer_inline``); the loop answers within one cycle of its wake-up
ANSWER_WAIT_S = 0.002


class SafetyNode(Node):
    """Gate raw actions into safe commands in a real-time loop."""

    def __init__(self, **kwargs):
        super().__init__('safety', **kwargs)
        self.spec = spec = declare_params(self, SafetySpec)
        s = spec.safety
        self.num_envs = spec.num_envs
        joint_names, rt_mode = list(spec.joint_names), s.rt_mode
        if rt_mode == 'auto':
            # Gated on arrival, no hand-over on the control path. A robot's watchdog
            # deadline is control periods; a lock-step simulation waits for the command and
            # nothing waits on the loop's ticks, so another process's round trip would cost
            # every step and buy nothing (docs/safety.md, `bench graph`).
            rt_mode = 'inline'
        self.stats_path = (pathlib.Path(spec.run_dir) / 'safety_stats.json'
                           if spec.run_dir else None)
        try:
            if rt_mode in ('thread', 'inline'):
                self.rt = (InlineBackend if rt_mode == 'inline' else ThreadBackend)(spec)
                self.gate = self.rt.gate
            else:
                # Validate everything here, so a bad value is a start-up ConfigError naming
                # the key; the RT process builds the same spec again. This copy of the
                # gate serves shape checks and the fallback shape only.
                self.gate = build_loop(spec, LatestSlot(),
                                       OutputRing(2, self.num_envs, len(joint_names))).gate
                RtLoop(lambda _: None, s.rate_hz, s.busy_wait_us)  # checks busy_wait_us
                self.rt = RtProcess(spec)
        except LimitsError as exc:
            raise ConfigError(f'safety: {exc}') from None
        except ValueError as exc:
            raise ConfigError(f'safety: {exc}') from None
        self.rt_mode = rt_mode
        self.joint_names = joint_names
        self.bad_messages = 0
        self.bad_joint_states = 0
        self.joint_states = 0  # joint-state messages handed to the loop
        self.actions_received = 0
        self._period_start = (0, 0)  # (received, superseded) at the last diagnostics
        self.overload_periods = 0
        self._early_start = (0, 0)  # (commands, early_actions) at the last diagnostics
        self.published = {'command': 0, 'fallback': 0, 'estop': 0}
        self.latency = PeriodStats(1 << 14)  # action received -> command published, ns
        self._logged: set[str] = set()
        qos = QoSProfile(depth=4)
        # Through the zero-copy transport; publish(TensorBatch) is thread-safe there.
        # The gated commands: the graph's tensor topic, or the robot controller's own type.
        self.pub = CommandOutput(self, spec, qos)
        self.legged = None
        if spec.legged_interface:
            try:
                self.legged = LeggedIO(self, spec, self._publish_legged, qos)
            except ValueError as exc:
                self.rt.stop()
                self.rt.close()
                raise ConfigError(f'safety: {exc}') from None
        # /diagnostics on this node's timer (safety.diagnostics_period_s), judged by
        # unilab_core.health like every node's.
        self.health = NodeDiagnostics(self, spec.health, self.health_counters,
                                      errors=self._health_errors, timer=False)
        # Actions through the zero-copy transport (or a plain TensorBatch publisher).
        # In one process the action is gated inside the policy's publish (no executor round).
        self.action_sub = TensorSubscription(self, topics.ACTION, self._on_action, qos=qos,
                                             on_error=self._bad_action, deliver='inline')
        # Output entries are taken by the publisher thread and by the
        # action callback (``_answer_inline``): one at a time, in order.
        self._out_lock = threading.Lock()
        self.create_service(Trigger, '~/reset_estop', self._on_reset)
        self.create_service(Trigger, '~/arm', lambda req, res: self._on_arm(res, True))
        self.create_service(Trigger, '~/disarm', lambda req, res: self._on_arm(res, False))
        # Steady clock: with use_sim_time a paused simulation still reports.
        self.create_timer(s.diagnostics_period_s, self._publish_diagnostics,
                          clock=Clock(clock_type=ClockType.STEADY_TIME))
        # The measured joint positions: the gate's reference at start and after resets,
        # fallbacks and e-stops (and the PID's input).
        # Through the transport from the bridge (no DDS in one process), or a driver's
        # sensor_msgs/JointState mapped by name (unilab_core.ros.joint_state_topic).
        self._js_input = JointStateInput(joint_names, self.num_envs)
        self.js_sub = TensorSubscription(
            self, topics.JOINT_STATES, self._on_joint_state, qos=qos, standard_type=JointState,
            from_standard=self._js_input.from_standard, on_error=self._bad_joint_state,
            deliver='inline')
        self.episode_starts = None
        if spec.lockstep:
            # Simulation: episode starts come from the simulator's own task state only.
            self.episode_starts = EpisodeStarts(self.num_envs, len(joint_names))
            # In one process the task state is taken inside the simulator's publish, before
            # the step's observation, action and gating run (the action arrives inline
            # too: an executor-delivered task state would come after the step's action).
            # Across processes an action that overtakes its task state waits for it
            # (``_parked``).
            self.task_sub = TensorSubscription(self, topics.TASK_STATE, self._on_task_state,
                                               qos=qos, on_error=self._bad_task_state,
                                               deliver='inline')
        # An action whose step's task state is still on its way: (seq, version, stamp_ns,
        # action, recv_ns), gated when that task state arrives.
        self._parked = None
        self.actions_waited = 0
        self._last_safe = None  # last command published (the hold if the RT process dies)
        self._dead = False
        self._closing = False
        try:
            granted = self.rt.start()
        except RuntimeError:
            self._closing = True
            self.rt.stop()
            self.rt.close()
            raise
        # Publisher thread, woken by the RT loop through an eventfd (a counter: the
        # write never blocks and takes no Python lock).
        self._pub_thread = threading.Thread(target=self._publish_loop, daemon=True,
                                            name='unilab_safety_pub')
        self._pub_thread.start()
        if self.legged is not None:
            motor = self.legged.start() or {}
            motor_text = ', '.join(f'{k}: {v}' for k, v in motor.items() if v is not None)
            self.get_logger().info(
                f'legged robot: {spec.legged_interface} at {spec.legged.motor_rate_hz:g} Hz '
                f'(kp {spec.legged.kp:g}, kd {spec.legged.kd:g}; motor loop {motor_text}); '
                'passive until ~/arm stands it up')
        self.get_logger().info(
            f'gating {len(joint_names)} joints ({spec.interface}) from '
            f'{self.resolve_topic_name(topics.ACTION)} to {self.pub.topic_name} '
            f'({spec.output.type}), loop at {s.rate_hz:g} Hz '
            f'({RT_MODE_WORDS[rt_mode]}); watchdog {s.watchdog_timeout_s:g} s -> '
            f'{s.watchdog_fallback}; limits {s.joint_limits_file}'
            + ('' if spec.armed else '; DISARMED until ~/arm is called'))
        answers = granted or {'rt_thread': 'refused: did not start'}
        granted_text = ', '.join(f'{k}: {v}' for k, v in answers.items()
                                 if not v.startswith('refused'))
        refused_text = ', '.join(f'{k}: {v}' for k, v in answers.items()
                                 if v.startswith('refused'))
        self.get_logger().info(f'real-time features: {granted_text or "none"}')
        if refused_text:
            # The loop runs anyway, with worse timing; diagnostics carry the same answers.
            self.get_logger().warning(f'real-time features refused: {refused_text}')

    # -- publisher thread -------------------------------------------------------------
    def _publish_loop(self) -> None:
        while True:
            self.rt.wait_output()
            if self._closing:
                return
            try:
                while self._publish_next() is not None:
                    pass
            except Exception:  # noqa: B902 - context shut down while closing
                # Ctrl-C: rclpy's handler invalidates the context before its shutdown
                # callbacks close this node; a publish in that window fails. A stop.
                if self._closing or not self.context.ok():
                    return
                raise
            if not self.rt.alive and not self._closing:
                self._on_loop_death()
                return

    def _publish_next(self):
        """Publish the loop's oldest output entry; return it (None when there is none)."""
        with self._out_lock:
            entry = self.rt.pop()
            if entry is None:
                return None
            # A stop signal (Ctrl-C) between the publish and its count would leave a
            # command sent but not counted: held to the end of the block.
            with STOP_DEFERRED:
                if self.legged is not None:
                    # A legged robot: the gated target goes to the supervisor, whose
                    # motor-rate loop is the only publisher on the controller's topic.
                    self.legged.target(entry.command)
                else:
                    self.pub.publish(entry.kind, entry.seq, entry.version, entry.stamp_ns,
                                     entry.command)
                self.published[entry.kind] += 1
                self._last_safe = (entry.seq, entry.version, entry.stamp_ns, entry.command)
            if entry.t_ns:
                self.latency.record(time.monotonic_ns() - entry.t_ns)
        return entry

    def _answer_inline(self, seq: int) -> None:
        """
        Wait for the loop's answer to action ``seq`` and publish it on this thread.

        The loop is woken at once and answers within one cycle; publishing from here
        instead of the publisher thread saves that thread's wake-up and, for a consumer
        in this process, the hand-over to the executor (the consumer's callback is then
        scheduled on this same thread). ``ANSWER_WAIT_S`` bounds the wait; whatever has
        not come by then is published by the publisher thread as before.
        """
        deadline = time.monotonic() + ANSWER_WAIT_S
        while self.rt.alive:
            entry = self._publish_next()
            if entry is not None:
                continue
            last = self._last_safe
            if last is not None and last[0] == seq:
                return  # answered (by this thread or the publisher thread)
            left = deadline - time.monotonic()
            if left <= 0:
                return
            # Sleep on the loop's output eventfd (GIL released; no spinning, which would
            # take the core the loop needs on a small machine). The publisher thread polls
            # it too: whichever thread reads the count, the other finds it taken.
            if select.select([self.rt.wake_out], [], [], left)[0]:
                try:
                    os.eventfd_read(self.rt.wake_out)
                except BlockingIOError:
                    pass

    def _on_loop_death(self) -> None:
        """Publish the e-stop hold once the loop is gone; later actions get it too."""
        self._dead = True
        self._log_once('loop', f'safety loop stopped: {self.rt.error}; publishing the '
                       'e-stop hold for every action')
        if self._last_safe is not None:
            seq, version, stamp_ns, _ = self._last_safe
            self._publish_dead_hold(seq, version, stamp_ns)

    def _publish_dead_hold(self, seq: int, version: int, stamp_ns: int) -> None:
        # Only an output of the gate is ever held: the last published command (position),
        # or zeros (velocity / effort: a stop). Nothing before the first command.
        if self.legged is not None:
            self.legged.sup.force_fault(time.monotonic_ns(), 'the safety loop stopped')
            return
        if self._last_safe is None:
            return
        command = self._last_safe[3]
        if self.gate.interface != 'position':
            command = np.zeros_like(command)
        try:
            self.pub.publish('estop', seq, version, stamp_ns, command)
        except Exception as exc:  # noqa: B902 - the context is going away (shutdown)
            self._log_once('dead_hold', f'could not publish the e-stop hold: {exc}')
            return
        self.published['estop'] += 1

    # -- ROS callbacks ----------------------------------------------------------------
    def _log_once(self, kind: str, text: str) -> None:
        if kind not in self._logged:
            self._logged.add(kind)
            self.get_logger().error(text)

    def _bad_action(self, exc: Exception) -> None:
        self.bad_messages += 1
        self._log_once('bad_message', f'rejected malformed action message: {exc}')

    def rehearse(self) -> None:
        """Warm the gate on the last action (a shadow gate, ``InlineBackend.rehearse``)."""
        rehearse = getattr(self.rt, 'rehearse', None)
        if rehearse is not None:
            rehearse()

    def _on_action(self, batch: Batch) -> None:
        recv_ns = time.monotonic_ns()
        self.actions_received += 1
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
        if self.episode_starts is not None and self.episode_starts.expects(batch.seq):
            # Lock-step: the simulator published step seq-1's task state, so step seq's is
            # on its way; gate this action once it is here (a re-sent step replaces it).
            self._parked = (batch.seq, batch.version, batch.stamp_ns, action, recv_ns)
            self.actions_waited += 1
            return
        self._gate(batch.seq, batch.version, batch.stamp_ns, action, recv_ns)

    def _gate(self, seq: int, version: int, stamp_ns: int, action: np.ndarray,
              recv_ns: int) -> None:
        # A `reset` tensor in the action is ignored: an action publisher cannot lift the
        # rate limit. Episode starts come from the simulator's task state (verified).
        reset_mask = None
        if self.episode_starts is not None:
            reset_mask, positions = self.episode_starts.for_step(seq)
            if positions is not None:
                self.rt.put_state(positions)
        # The gate accepts any row count; here a row is an env, so anything but
        # [num_envs, J] would publish a command the consumer refuses.
        shape_ok = action.shape == (self.num_envs, self.gate.n_joints)
        if not shape_ok:
            self._log_once('shape', f'rejected action batch: expected shape '
                           f'{[self.num_envs, self.gate.n_joints]}, got {list(action.shape)};'
                           ' holding')
        if self._dead:
            self._publish_dead_hold(seq, version, stamp_ns)
            return
        self.rt.put(ActionIn(seq, version, stamp_ns, action, reset_mask,
                             shape_ok, recv_ns))
        if self.rt.answers_inline:
            if not self.rt.alive:
                # This action's cycle raised (or the loop had died): answer it with the
                # e-stop hold now; the publisher thread reports the death.
                self._publish_dead_hold(seq, version, stamp_ns)
                return
            # Gated in put: publish the answer (if any: disarmed, stale) on this thread.
            while self._publish_next() is not None:
                pass
        else:
            self._answer_inline(seq)

    def _bad_joint_state(self, exc: Exception) -> None:
        self.bad_joint_states += 1
        self._log_once('joint_state', f'ignoring joint state: {exc}')

    def _on_joint_state(self, batch: Batch) -> None:
        try:
            fields = self._js_input.fields(batch)
            positions = fields['position']
        except (ValueError, KeyError) as exc:
            self._bad_joint_state(exc)
            return
        self.rt.put_state(positions)
        self.joint_states += 1
        if self.legged is not None:
            velocity = fields.get('velocity')
            self.legged.joint_state(positions[0], None if velocity is None else velocity[0])
        if self.episode_starts is not None:
            self.episode_starts.joint_state(batch.stamp_ns, positions)

    def _bad_task_state(self, exc: Exception) -> None:
        self.episode_starts.bad += 1
        self._log_once('task_state', f'ignoring task state: {exc}')
        # Unreadable, so its step is unknown: a waiting action is gated now, its starts
        # counted missing, rather than wait for a re-sent step.
        if self._parked is not None:
            self._release_parked(self._parked[0])

    def _on_task_state(self, batch: Batch) -> None:
        t = batch.tensors
        try:
            ok = self.episode_starts.task_state(batch.seq, batch.stamp_ns, t['terminated'],
                                                t['truncated'])
        except (KeyError, TensorMessageError) as exc:
            self._bad_task_state(exc)
            return
        if not ok:
            self._log_once('task_state', 'ignoring task state: terminated / truncated do '
                           f'not fit {self.num_envs} envs or are not finite')
        self._release_parked(batch.seq)

    def _release_parked(self, seq: int) -> None:
        """Gate the action that waited for step ``seq``'s task state (or an earlier one)."""
        parked = self._parked
        if parked is not None and parked[0] <= seq:
            self._parked = None
            self._gate(*parked)

    def _on_arm(self, response, armed: bool):
        """Let commands reach the actuators (arm) or stop them (disarm)."""
        if self.legged is not None:
            return self._on_arm_legged(response, armed)
        self.rt.set_armed(armed)
        deadline = time.monotonic() + max(0.5, 20 * self.rt.period_ns * 1e-9)
        while bool(self.rt.counters()['armed']) != armed and self.rt.alive \
                and time.monotonic() < deadline:
            time.sleep(self.rt.period_ns * 1e-9)
        response.success = bool(self.rt.counters()['armed']) == armed
        response.message = (('armed: commands reach the actuators, the first one limited '
                             'from the measured joint positions') if armed else
                            'disarmed: no command is sent') if response.success else \
            'the safety loop did not acknowledge'
        self.get_logger().warning(f'{"arm" if armed else "disarm"}: {response.message}')
        return response

    def _on_arm_legged(self, response, armed: bool):
        # Arm: the supervisor stands the robot up, then takes the gated policy targets;
        # disarm: it lays the robot down (the gate stops passing targets).
        ok, text = self.legged.arm(armed)
        if ok:
            self.rt.set_armed(armed)
        response.success, response.message = ok, text
        # (one call site per severity: rclpy's logger refuses a site that changes it)
        if ok:
            self.get_logger().warning(f'{"arm" if armed else "disarm"}: {text}')
        else:
            self.get_logger().error(f'{"arm" if armed else "disarm"} refused: {text}')
        return response

    def _on_reset(self, request, response):
        if self.legged is not None:
            ok, text = self.legged.reset()
            if not ok:
                response.success, response.message = False, text
                self.get_logger().error(f'reset_estop: {text}')
                return response
            self.rt.set_armed(False)  # moving again takes an explicit arm
        was = self.rt.estopped
        rid = self.rt.request_reset()
        deadline = time.monotonic() + max(0.5, 20 * self.rt.period_ns * 1e-9)
        while not self.rt.reset_done(rid) and self.rt.alive and time.monotonic() < deadline:
            time.sleep(self.rt.period_ns * 1e-9)
        response.success = self.rt.reset_done(rid)
        if not response.success:
            response.message = 'the safety loop did not acknowledge the reset'
        else:
            response.message = 'e-stop cleared' if was else 'e-stop was not latched'
            self.get_logger().warning(f'reset_estop: {response.message}')
        return response

    # -- diagnostics --------------------------------------------------------------------
    def stats(self) -> dict:
        """Return the counters and timing figures as plain data."""
        out = self.rt.counters()
        out['batches'] += self.bad_messages
        out['rejected'] += self.bad_messages * self.num_envs
        out['bad_messages'] = self.bad_messages
        out['bad_joint_states'] = self.bad_joint_states
        out['joint_states'] = self.joint_states
        out['actions_received'] = self.actions_received
        if self.episode_starts is not None:
            e = self.episode_starts
            out.update({'episode_starts_applied': e.verified,
                        'episode_starts_unverified': e.unverified,
                        'episode_starts_missing': e.missing, 'bad_task_states': e.bad,
                        'actions_waited_for_task_state': self.actions_waited})
        out.update({f'published_{k}': v for k, v in self.published.items()})
        out['deadline_misses'] = self.rt.deadline_misses
        out['loop_cycles'] = self.rt.cycles
        out['early_cycles'] = self.rt.early_cycles
        out['rate_hz'] = round(1e9 / self.rt.period_ns, 3)
        out.update(self.rt.period_summary())
        lat = self.latency.summary()
        out.update({k.replace('period_error', 'action_latency'): v for k, v in lat.items()})
        out['fallback_delay_max_ms'] = round(self.rt.fallback_delay_max_ns / 1e6, 3)
        for feature, answer in (self.rt.granted or {}).items():
            out[f'rt_{feature}'] = answer
        out['rt_mode'] = self.rt_mode
        if self.legged is not None:
            out.update(self.legged.stats())
        out['rt_loop'] = ('running' if self.rt.alive else 'stopped' if self.rt.error is None
                          else f'failed: {self.rt.error}')
        return out

    @staticmethod
    def health_counters(stats: dict) -> dict:
        """Return ``stats`` with the common counter names of ``unilab_core.health.SHARES``."""
        return {**stats, 'rows': stats['passed'] + stats['clamped'] + stats['rejected'],
                'outputs': stats['commands'] + stats['fallbacks'],
                'cycles': stats['loop_cycles'], 'stale': stats['stale_state_actions'],
                'dropped': stats['bad_messages'] + stats['bad_joint_states'],
                'messages': stats['actions_received'] + stats['joint_states']}

    def _health_errors(self) -> list[str]:
        errors = []
        if not self.rt.alive and self.rt.error is not None:
            errors.append(f'loop stopped: {self.rt.error}')
            self._log_once('loop', f'safety loop stopped: {self.rt.error}')
        if self.rt.counters()['estopped']:
            errors.append('E-STOP latched (call ~/reset_estop)')
        if self.legged is not None:
            errors += self.legged.errors()
        return errors

    def _overload(self, stats: dict) -> list[str]:
        # Overload: more than half of this period's actions were superseded in the slot
        # before the loop took them (a publisher faster than the loop; drop-oldest).
        received, superseded = self.actions_received, stats['superseded_actions']
        d_recv, d_sup = received - self._period_start[0], superseded - self._period_start[1]
        self._period_start = (received, superseded)
        if d_recv and d_sup > d_recv // 2:
            self.overload_periods += 1
            self._log_once('overload', f'action overload: {d_sup} of {d_recv} actions in '
                           'one diagnostics period were superseded before the loop took them')
            return [f'overload: {d_sup} of {d_recv} actions superseded (drop-oldest)']
        return []

    def _early(self, stats: dict) -> list[str]:
        # More than half of this period's commands came sooner than one control step after
        # the last (their limits scaled to the time, docs/safety.md): a publisher faster
        # than the control rate, or answers jittering beyond safety.jitter_allowance.
        commands, early = stats['commands'], stats['early_actions']
        d_cmd, d_early = commands - self._early_start[0], early - self._early_start[1]
        self._early_start = (commands, early)
        if d_cmd and d_early > d_cmd // 2:
            self._log_once('early', f'{d_early} of {d_cmd} actions in one diagnostics period '
                           'came sooner than one control step after the last (dt '
                           f'{self.spec.dt} s): their change limits were scaled down')
            return [f'early actions: {d_early} of {d_cmd} limited per time (faster than '
                    'the control rate)']
        return []

    def _missed_starts(self, stats: dict) -> list[str]:
        # Episode starts the gate could not apply (their step's task state came after the
        # action, or never): those rows started limited from the last episode's command.
        missing = stats.get('episode_starts_missing', 0)
        if missing:
            self._log_once('missing_starts', f'{missing} steps were gated before their task '
                           'state arrived: their episode starts were not applied')
            return [f'episode starts not applied: {missing} steps gated before their task state']
        return []

    def _publish_diagnostics(self) -> None:
        stats = self.stats()
        overload = self._overload(stats) + self._early(stats) + self._missed_starts(stats)
        stats['overload_periods'] = self.overload_periods
        self.health.publish(self.health_counters(stats), overload)
        self._write_stats(stats)

    def _write_stats(self, stats: dict) -> None:
        if self.stats_path is not None and self.stats_path.parent.is_dir():
            atomic_write_text(self.stats_path, json.dumps(stats, indent=2))

    def _stop_threads(self) -> None:
        # A node whose __init__ failed (ConfigError) has no threads to stop.
        if getattr(self, '_closing', True):
            return
        if getattr(self, '_pub_thread', None) is None:  # the loop failed to start
            self._closing = True
            self.rt.stop()
            self.rt.close()
            return
        self._closing = True
        if self.legged is not None:
            self.legged.stop()
        self.rt.stop()  # wakes the publisher thread (thread: eventfd; process: exit)
        self._pub_thread.join(2.0)
        self.rt.close()

    def close(self) -> None:
        """Stop the loop, leave the actuators commanded to stop, flush the counters."""
        was_running = not getattr(self, '_closing', True)
        self._stop_threads()
        if was_running:
            self._final_stop()
        self._write_stats(self.stats())

    def _final_stop(self) -> None:
        # A forward command controller keeps the last command it got: on a velocity or
        # effort interface the last word of a stopping gate is zeros (position: the last
        # command is already the hold). Not possible once the context is gone.
        if self.legged is not None:
            self._final_stop_legged()
            return
        if self.gate.interface == 'position' or self._last_safe is None:
            return
        seq, version, stamp_ns, command = self._last_safe
        try:
            if self.context.ok():
                self.pub.publish('fallback', seq, version, stamp_ns, np.zeros_like(command))
                self.published['fallback'] += 1
        except Exception as exc:  # noqa: B902 - the context is going away (shutdown)
            self._log_once('final_stop', f'could not publish the final stop: {exc}')

    def _final_stop_legged(self) -> None:
        # Effort: no torque (a held damping torque would push on a stopped robot);
        # position: the measured pose, which the driver's PD holds.
        command = self.legged.final_command()
        try:
            if command is not None and self.context.ok():
                self._publish_legged(command)
                self.published['fallback'] += 1
        except Exception as exc:  # noqa: B902 - the context is going away (shutdown)
            self._log_once('final_stop', f'could not publish the final stop: {exc}')

    def _publish_legged(self, command: np.ndarray) -> None:
        self.pub.publish('command', 0, 0, 0, command)

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
