# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
One cycle of the safety loop, without threads or ROS (tests drive it with fake time).

Every cycle the loop takes the newest action batch from its input slot (once),
gates it and pushes the command into the output ring; with no fresh action it
runs the watchdog. After the watchdog timeout it emits the fallback (hold,
zero or e-stop) and repeats it every timeout while the silence lasts. E-stop
latches: actions are then answered with the hold command, kind ``estop``, until
``request_reset`` is called (the node's std_srvs/Trigger service).

An action re-sent for a step already answered (same ``seq`` and version: a
consumer re-published its state after a timeout and the policy answered
again) gets the same command again, not a second pass through the gate: the
consumer applies one command per step, so gating the copy would move the
rate-limit reference on to a command no actuator received.

References (the gate's contract, docs/safety.md): a row is limited from its
last command; at start, after an episode start the simulator reports (the
node takes it from the simulator's own task state, never from the action),
after an e-stop release and after an applied fallback it is limited from the
measured joint position (``state.latest()``). An action that finds a row with
neither waits for the joint state, at most the watchdog timeout, and is then
dropped and counted (``unreferenced_actions``); a fallback with nothing to
hold is not sent.

Output kinds: ``command`` (the answer to an action; the only kind a lock-step
simulator steps on), ``fallback`` (watchdog hold / zero) and ``estop``. In
``lockstep`` mode (simulation) fallbacks are not applied by the consumer, so
they do not become the rows' reference; on a robot (``lockstep`` false) the
driver applies them, so the next command is rate-limited from the measured
position after the fallback.

On a robot the gate's change limits are per control step of wall time: each
gated command earns ``elapsed / dt`` of step credit since the last one (kept
up to ``1 + jitter_allowance`` steps) and may use at most one step of it. An
action publisher faster than the control rate thus gets its limits scaled to
the time that passed (counted as ``early_actions``) and cannot move a joint
faster than its limits, while a policy whose answers jitter around ``dt``
makes up an early answer from a late one before it. In lock-step every
command is one simulated step.
Nothing here allocates arrays or logs; the counters are plain ints.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from unilab_safety.watchdog import Watchdog

WATCHDOG_FALLBACKS = ('hold', 'zero', 'estop')


class ActionIn(NamedTuple):
    """One action batch as the ROS callback hands it to the loop."""

    seq: int
    version: int
    stamp_ns: int
    action: np.ndarray  # [N, J] when shape_ok, anything otherwise
    reset: np.ndarray | None  # bool [N] or None
    shape_ok: bool
    recv_ns: int = 0  # monotonic time the callback received it (latency statistics)


class SafetyLoop:
    """Gate actions and run the watchdog, one ``cycle(now_ns)`` at a time."""

    def __init__(self, gate, num_envs, slot, ring, watchdog_timeout_s,
                 watchdog_fallback='hold', lockstep=False, state=None, state_timeout_s=0.0,
                 armed=True, jitter_allowance=0.25):
        if watchdog_fallback not in WATCHDOG_FALLBACKS:
            raise ValueError(f'watchdog_fallback must be one of {WATCHDOG_FALLBACKS}, got '
                             f'{watchdog_fallback!r}')
        if watchdog_fallback == 'zero' and gate.interface == 'position':
            raise ValueError("watchdog_fallback 'zero' would command position 0; use 'hold'")
        self.gate, self.n, self.slot, self.ring = gate, int(num_envs), slot, ring
        self.timeout_ns = int(round(watchdog_timeout_s * 1e9))
        # Fed with integer ns (exact in a float below 2**53 ns, ~104 days of uptime),
        # so the timeout comparison has no rounding.
        self.watchdog = Watchdog(self.timeout_ns)
        self.watchdog_fallback = watchdog_fallback
        # On a velocity or effort interface holding still is commanding zero: repeating the
        # last command would keep the joints moving (a forward command controller keeps it).
        self.stop_is_zero = gate.interface != 'position'
        self.lockstep = bool(lockstep)
        # Measured joint positions for the gate's optional PID (``latest()`` -> [N, J] or None).
        self.state = state
        self._scratch = np.zeros((self.n, gate.n_joints))
        # The last command answered to an action (seq, version): a re-sent action gets it
        # again instead of being gated a second time (see _on_action).
        self._answer = np.zeros((self.n, gate.n_joints))
        self._answered = None
        gate.size(self.n)  # allocate the gate's buffers before the loop runs
        self.batches = self.commands = self.fallbacks = self.resent = 0
        self.unreferenced = 0  # actions dropped: no reference for some row in time
        # Robot mode: when the last gated command was sent and the step credit left (the
        # change limits of the next one scale with the time since, see the module doc).
        if not 0.0 <= jitter_allowance <= 1.0:
            raise ValueError(f'jitter_allowance must be in [0, 1], got {jitter_allowance}')
        self._credit_max = 1.0 + float(jitter_allowance)
        self._step_ns = None if gate.dt is None else gate.dt * 1e9
        self._gated_ns = None  # None: the next command gets a full step
        self._credit = 0.0
        self.early_actions = 0  # actions gated sooner than one control step after the last
        # Joint states older than this make actions wait unanswered (the watchdog then
        # holds): they are both the reference and what the policy saw. 0 = not checked.
        self.state_timeout_ns = int(round(state_timeout_s * 1e9))
        self.stale_state_actions = 0
        # Not in lock-step (a robot), a measured position is a reference only while it is
        # younger than state_timeout_s, or, where that is not checked (0: a graph made for
        # simulation put in front of a robot), the watchdog timeout: a hold or a limit
        # taken from where the joints were seconds ago would move them back there.
        self.reference_age_ns = self.state_timeout_ns or self.timeout_ns
        self.stale_references = 0
        # Armed: commands may reach the actuators. Until then actions are counted only.
        self.armed = self.armed_request = bool(armed)
        self.unarmed_actions = 0
        self._waiting = None  # an action waiting for the measured joint positions
        self._waiting_since = 0
        self.estop_events = self.estop_rows = 0
        self.estopped = False
        self.last_seq = self.last_version = self.last_stamp_ns = 0
        self.last_action_ns = None
        self.last_fallback_ns = None
        # First fallback of a silence minus the last action's pick-up (loop time, ns).
        self.fallback_delay_ns = self.fallback_delay_max_ns = 0
        self._reset_requests = 0
        self._reset_done = 0

    # -- cross-thread requests (atomic int updates) ---------------------------------
    def request_reset(self):
        """Ask the loop to clear a latched e-stop at its next cycle; return the request id."""
        self._reset_requests += 1
        return self._reset_requests

    def reset_done(self, request_id):
        """Return True once the loop has handled request ``request_id``."""
        return self._reset_done >= request_id

    # -- the cycle ---------------------------------------------------------------------
    def _measured(self, now_ns=None):
        """
        Return the latest measured joint positions [N, J] to take as a reference.

        None before the first, and, off lock-step, when they are older than
        ``reference_age_ns`` at ``now_ns`` (counted in ``stale_references``).
        """
        measured = self.state.latest() if self.state is not None else None
        if measured is None or self.lockstep or now_ns is None:
            return measured
        if now_ns - self.state.stamp_ns > self.reference_age_ns:
            self.stale_references += 1
            return None
        return measured

    def cycle(self, now_ns):
        """Run one cycle at (logical) time ``now_ns``."""
        if self._reset_done != self._reset_requests:
            self._reset_done = self._reset_requests
            self.estopped = False
            # Until a fresh action arrives there is nothing to watch: no fallback burst.
            self.watchdog.reset()
            self.last_action_ns = None
            # After an e-stop the robot is wherever it stopped: the next command is
            # limited from its measured position, not from the last command.
            self.gate.reset()
            self._gated_ns = None
        if self.armed_request != self.armed:
            self.armed = self.armed_request
            if not self.armed:
                # Disarming: the last word to the actuators is a stop. A forward command
                # controller keeps its last command: a velocity or effort one would keep
                # the arm moving; a position one gets its hold (the last command).
                self._stop_once(now_ns)
            # Arming: nothing was sent while disarmed, so start from where the joints are.
            self.gate.reset()
            self.watchdog.reset()
            self.last_action_ns = None
            self._waiting = None
            self._gated_ns = None
        item = self.slot.take()
        if item is not None:
            self._waiting = None  # a newer action replaces one that waited
            if self._on_action(item, now_ns):
                return
            # Not taken (disarmed, stale joint states): the watchdog runs as in a silence.
        if self._waiting is not None:
            self._gate_action(self._waiting, now_ns)
            return
        if self.last_action_ns is None:
            return  # nothing to hold yet: the driver keeps its own state until then
        if not self.watchdog.expired(now_ns):
            return
        due = (self.last_fallback_ns is None or now_ns - self.last_fallback_ns >= self.timeout_ns)
        if not due:
            return
        if self.last_fallback_ns is None:
            self.fallback_delay_ns = delay = now_ns - self.last_action_ns
            if delay > self.fallback_delay_max_ns:
                self.fallback_delay_max_ns = delay
        self.last_fallback_ns = now_ns
        if self.watchdog_fallback == 'estop' and not self.estopped:
            self.estopped = True
            self.estop_events += 1
        kind = 'estop' if self.estopped else 'fallback'
        zero = self.watchdog_fallback == 'zero' or self.stop_is_zero
        if self.gate.fill_fallback(self._scratch, zero=zero, commit=not self.lockstep,
                                   state_position=self._measured(now_ns)):
            self.fallbacks += 1
            self._emit(kind, self._scratch)

    def _state_stale(self, now_ns):
        """Return True while the measured joint positions are too old to act on."""
        if not self.state_timeout_ns:
            return False
        if self.state is None or self.state.latest() is None:
            return True
        return now_ns - self.state.stamp_ns > self.state_timeout_ns

    def _stop_once(self, now_ns):
        """Emit one stop (zeros on velocity / effort, else the hold) if anything was sent."""
        if self.last_action_ns is None:
            return  # nothing was sent since arming: the driver keeps its own state
        if self.gate.fill_fallback(self._scratch, zero=self.stop_is_zero, commit=False,
                                   state_position=self._measured(now_ns)):
            self.fallbacks += 1
            self._emit('fallback', self._scratch)

    def _on_action(self, item, now_ns):
        """Take one action; return False when it is not taken (disarmed, stale state)."""
        if not self.armed:
            self.unarmed_actions += 1
            return False
        if self._state_stale(now_ns):
            # Stale joint states: the action is not answered, so the watchdog holds the
            # robot within its timeout, and keeps holding while they stay stale.
            self.stale_state_actions += 1
            return False
        self.watchdog.feed(now_ns)
        self.last_action_ns = now_ns
        self.last_fallback_ns = None
        if self._answered == (item.seq, item.version) and not self.estopped:
            # The same step again (a consumer's timeout made the policy answer twice).
            # Gating it again would move the reference on from a command the actuator
            # never got (the consumer applies one command per step): answer the same.
            self.resent += 1
            self.commands += 1
            self._emit('command', self._answer, item.recv_ns)
            return True
        self.last_seq, self.last_version = item.seq, item.version
        self.last_stamp_ns = item.stamp_ns
        gate = self.gate
        if self.estopped:
            self.estop_rows += self.n
            if gate.fill_fallback(self._scratch, zero=self.stop_is_zero,
                                  commit=not self.lockstep,
                                  state_position=self._measured(now_ns)):
                self._emit('estop', self._scratch, item.recv_ns)
            return True
        if item.reset is not None:
            # Episode starts the simulator reported (never the action publisher): these
            # rows are limited from their measured position from now on.
            gate.reset(item.reset)
        self._waiting_since = now_ns
        self._gate_action(item, now_ns)
        return True

    def _gate_action(self, item, now_ns):
        """Gate ``item`` once every row has a reference; else let it wait (bounded)."""
        gate = self.gate
        measured = self._measured(now_ns)
        if not gate.reference_ready(measured, n_rows=self.n):
            # No last command and no measured position for some row: nothing to limit a
            # command against. Wait for the joint state (normally microseconds away), up
            # to the watchdog timeout; then drop the action, counted.
            if now_ns - self._waiting_since > self.timeout_ns:
                self._waiting = None
                self.unreferenced += 1
            else:
                self._waiting = item
            return
        self._waiting = None
        self.batches += 1
        if item.shape_ok:
            share = None
            if not self.lockstep and self._gated_ns is not None and self._step_ns:
                credit = min(self._credit + (now_ns - self._gated_ns) / self._step_ns,
                             self._credit_max)
                share = min(credit, 1.0)
                if share < 1.0:
                    self.early_actions += 1
                self._credit = credit - share
            else:
                self._credit = 0.0  # a full step, nothing left over
            command = gate.filter(item.action, state_position=measured,
                                  measured=measured, step_share=share).command
            self._gated_ns = now_ns
        else:
            gate.reject_batch(self.n)
            # Answered as a 'command', so every consumer applies it: it becomes the
            # reference (a first hold without any last command must not be jumped from).
            gate.fill_fallback(self._scratch, zero=self.stop_is_zero, commit=True,
                               state_position=measured)
            command = self._scratch
        np.copyto(self._answer, command)
        self._answered = (item.seq, item.version)
        self.commands += 1  # counted before the push: a published entry is always counted
        self._emit('command', command, item.recv_ns)

    def _emit(self, kind, command, recv_ns=0):
        self.ring.push(kind, self.last_seq, self.last_version, self.last_stamp_ns, command,
                       recv_ns)

    def counters(self):
        """Return the counters of loop and gate as plain ints."""
        g = self.gate.counters
        return {
            'passed': g['passed'], 'clamped': g['clamped'], 'rejected': g['rejected'],
            'batches': self.batches, 'commands': self.commands, 'fallbacks': self.fallbacks,
            'stale_events': self.watchdog.stale_events, 'estop_events': self.estop_events,
            'estop_rows': self.estop_rows, 'estopped': int(self.estopped),
            'workspace_stops': self.gate.workspace_stops, 'pid_active_rows': self.gate.pid_rows,
            'superseded_actions': self.slot.superseded, 'output_overruns': self.ring.overruns,
            'resent_actions': self.resent, 'unreferenced_actions': self.unreferenced,
            'stale_state_actions': self.stale_state_actions,
            'stale_references': self.stale_references, 'armed': int(self.armed),
            'unarmed_actions': self.unarmed_actions, 'early_actions': self.early_actions,
            **self.gate.robot_counters,
        }
