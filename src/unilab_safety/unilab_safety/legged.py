# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The legged supervisor: what a legged robot's motors get, tick by tick, behind the gate.

An arm can be handed the policy's first command: it stands where it is. A legged robot
cannot: it lies on the floor when its driver starts, it must be stood up before a walking
policy means anything, handed over to the policy gently, laid down again when the operator
is done, and dropped into damping the moment it falls. Projects that deploy legged
policies (rl_sar, unitree_rl_lab's deploy, Isaac ROS's safety controller, ros2_control
demos' ONNX policy) run the same state machine; here it sits behind the safety gate, so the
policy's targets it uses are already gated (finite, in the trained range, rate-limited).

Modes (docs/legged.md)::

    PASSIVE --arm--> STAND --(stand_time_s)--> POLICY --disarm--> LIE --(lie_time_s)--> PASSIVE
       ^                                         |                  |
       |                                         +------arm---------+  (LIE --arm--> STAND)
       +--reset (conditions clear)-- FAULT <--any bound, from STAND / POLICY / LIE

- PASSIVE: damping only, ``tau = -damping_kd * qd`` (at start, after lie-down, after a
  cleared fault);
- STAND: the target moves from the measured pose at arming to ``stand_pose`` in
  ``stand_time_s`` (linear in time), through the PD at the motor, whose torque limits bound
  it (a stand-up never asks for more than the motors give);
- POLICY: the gated policy target, blended in from ``stand_pose`` over ``blend_steps``
  policy steps, ``target = stand + a (policy - stand)``, ``a = min(k / blend_steps, 1)``,
  k the policy targets received since the stand-up ended; before the first one, the stand
  pose is held;
- LIE: from the last target to ``lie_pose`` in ``lie_time_s``, then PASSIVE;
- FAULT (latched): damping, as PASSIVE, entered from STAND, POLICY or LIE when roll or
  pitch pass ``max_tilt_rad``, a joint is faster than ``max_joint_velocity``, the joint
  states or the IMU are older than ``state_timeout_s`` (or not finite), or a joint's torque
  stays at its limit for ``saturation_time_s``. Arming is refused while it is latched;
  ``clear_fault`` (the safety node's ``~/reset_estop``) clears it only when every condition
  holds again, into PASSIVE: moving again takes an explicit arm.
- stopping (``request_stop``: the process took a stop signal, its inputs end here):
  STAND, POLICY or LIE -> PASSIVE, not a fault; a latched fault stays latched.

Damping needs a measured velocity: once the joint states are older than
``state_timeout_s`` (the driver gone, the node stopping), the ``effort`` interface gets no
torque rather than damping on a stale velocity.

Output per tick (``motor_rate_hz``): for the ``effort`` interface the PD's torque
``unilab_core.actuator.PdMotor`` (the training's kp, kd, torque limits and torque-speed
curve: one implementation for training and the robot); for the ``position`` interface (a
driver that runs the PD with the same gains) the target itself, and in PASSIVE / FAULT the
measured position, so that the driver's PD reduces to its damping ``-kd qd``.

No ROS import; ``tick`` runs on the motor-rate thread, the other methods on the executor,
under one lock.
"""

from __future__ import annotations

import enum
import math
import threading
from typing import NamedTuple

import numpy as np
from unilab_core.actuator import MotorLimits, PdMotor
from unilab_core.robot_profile import LeggedSection


class Mode(enum.IntEnum):
    """The supervisor's modes, as published on /diagnostics (``legged_mode``)."""

    PASSIVE = 0
    STAND = 1
    POLICY = 2
    LIE = 3
    FAULT = 4


#: Why a fault latched (each counted, ``legged_faults_<kind>``).
FAULT_KINDS = ('tilt', 'joint_velocity', 'stale_joint_state', 'stale_imu', 'saturation')
_ACTIVE = (Mode.STAND, Mode.POLICY, Mode.LIE)


class TickOut(NamedTuple):
    """One motor tick's output; ``command`` is None when nothing may be sent."""

    mode: Mode
    command: np.ndarray | None   # [J] torques (effort) or positions (position)
    torque: np.ndarray | None    # [J] the PD's torque (effort: sent; position: estimated)


def tilt(quat_xyzw) -> tuple[float, float]:
    """
    Return (roll, pitch) in rad of an orientation, from the gravity direction in the body.

    ``g_b = R^T (0, 0, -1)``; roll = atan2(-g_y, -g_z), pitch = atan2(g_x, |(g_y, g_z)|):
    upright (0, 0), on its side roll +-pi/2, upside down roll pi.
    """
    x, y, z, w = (float(v) for v in quat_xyzw)
    # R^T e_z is R's third row: (2(xz - wy), 2(yz + wx), 1 - 2(x^2 + y^2)).
    gx = -2.0 * (x * z - w * y)
    gy = -2.0 * (y * z + w * x)
    gz = -(1.0 - 2.0 * (x * x + y * y))
    return math.atan2(-gy, -gz), math.atan2(gx, math.hypot(gy, gz))


def motor_limits(model_file: str, joint_names: list[str]) -> MotorLimits:
    """Return the motor limits of ``joint_names`` from an MJCF model, found by joint name."""
    import mujoco
    model = mujoco.MjModel.from_xml_path(model_file)
    full = MotorLimits.from_model(model)
    by_joint = {model.joint(int(model.actuator_trnid[a, 0])).name: a
                for a in range(model.nu)}
    missing = [n for n in joint_names if n not in by_joint]
    if missing:
        raise ValueError(f'{model_file}: no motor drives joint(s) {missing}')
    idx = [by_joint[n] for n in joint_names]
    return MotorLimits(torque_limit=full.torque_limit[idx], knee_speed=full.knee_speed[idx],
                       no_load_speed=full.no_load_speed[idx])


class LeggedSupervisor:
    """The mode machine and the motor-rate command of one legged robot (module doc)."""

    def __init__(self, cfg: LeggedSection, limits: MotorLimits, interface: str):
        """Check the poses against the joints and set up the PD; starts PASSIVE."""
        if interface not in ('effort', 'position'):
            raise ValueError(f'a legged robot takes `effort` or `position`, got {interface!r}')
        j = limits.torque_limit.shape[0]
        self.cfg = cfg
        self.interface = interface
        self.n_joints = j
        self.stand_pose = self._per_joint('stand_pose', cfg.stand_pose, j)
        self.lie_pose = self._per_joint('lie_pose', cfg.lie_pose, j)
        vmax = cfg.max_joint_velocity or limits.no_load_speed
        self.max_velocity = np.broadcast_to(np.asarray(vmax, np.float64), (j,)).copy()
        self.limits = limits
        self.pd = PdMotor(1, limits, kp=cfg.kp, kd=cfg.kd)
        self.tick_ns = int(round(1e9 / cfg.motor_rate_hz))
        self.timeout_ns = int(round(cfg.state_timeout_s * 1e9))
        self._lock = threading.Lock()
        self.mode = Mode.PASSIVE
        self.fault = ''            # the latched fault's text ('' = none)
        self._js = None            # (q [J], qd [J], t_ns)
        self._imu = None           # (roll, pitch, t_ns)
        self._policy = None        # the latest gated target [J]
        self._policy_count = 0     # targets received since POLICY began
        self._from = None          # STAND / LIE: the pose the ramp starts at
        self._t0 = 0
        self._last_target = None   # the last target commanded (STAND, POLICY, LIE)
        self._sat_since = np.full(j, -1, np.int64)  # per joint: saturated since (ns), -1 no
        self._tau = np.zeros((1, j))
        self.counters = {'ticks': 0, 'ticks_silent': 0, 'ticks_stale_damping': 0,
                         'arms': 0, 'arms_refused': 0, 'disarms': 0, 'stops': 0,
                         'stand_ups': 0, 'lie_downs': 0, 'policy_targets': 0,
                         'saturated_ticks': 0, 'policy_ticks': 0, 'policy_saturated_ticks': 0,
                         'stand_ticks': 0, 'stand_saturated_ticks': 0,
                         'faults': 0, 'fault_clears': 0,
                         'fault_clears_refused': 0,
                         **{f'faults_{k}': 0 for k in FAULT_KINDS}}
        #: (t_ns, from, to, reason) of the last transitions (diagnostics, tests).
        self.transitions: list[tuple[int, str, str, str]] = []
        self.fault_t_ns = 0        # when the latched fault was detected
        #: ms from the arrival of the first IMU sample past the tilt bound to the latch
        self.tilt_stop_ms = None
        #: the largest |PD torque| / torque limit any stand-up asked for (unclipped)
        self.stand_peak = 0.0
        self._tilt_seen_ns = None

    @staticmethod
    def _per_joint(name, values, j):
        a = np.asarray(values, np.float64)
        if a.shape != (j,):
            raise ValueError(f'legged.{name} needs {j} values, got {a.shape[0] if a.ndim else 0}')
        return a

    # -- inputs (executor thread) ----------------------------------------------------
    def joint_state(self, q, qd, t_ns: int) -> None:
        """Take the measured joint positions and velocities (rad, rad/s), received at t_ns."""
        self._js = (np.array(q, np.float64), np.array(qd, np.float64), int(t_ns))

    def imu(self, quat_xyzw, t_ns: int) -> None:
        """Take the IMU's orientation (x, y, z, w), received at t_ns."""
        roll, pitch = tilt(quat_xyzw)
        self._imu = (roll, pitch, int(t_ns))
        beyond = not (abs(roll) <= self.cfg.max_tilt_rad and abs(pitch) <= self.cfg.max_tilt_rad)
        if not beyond:
            self._tilt_seen_ns = None
        elif self._tilt_seen_ns is None:
            self._tilt_seen_ns = int(t_ns)

    def target(self, q_target) -> None:
        """Take a gated policy target [J] (used in POLICY only; counted there for blending)."""
        q_target = np.array(q_target, np.float64).reshape(-1)
        if q_target.shape != (self.n_joints,) or not np.isfinite(q_target).all():
            return  # the gate never sends these; nothing unchecked reaches a motor
        with self._lock:
            self._policy = q_target
            if self.mode == Mode.POLICY:
                self._policy_count += 1
                self.counters['policy_targets'] += 1

    # -- operator requests (executor thread) -------------------------------------------
    def request_arm(self, now_ns: int, latch_tilt: bool = False) -> tuple[bool, str]:
        """
        Stand up (then the policy); refused while a fault is latched or inputs are bad.

        ``latch_tilt``: a robot tilted past the bound latches the fall stop instead of a
        plain refusal (an arm standing order, ``deploy --armed``, met a fallen robot: the
        operator must look, reset and arm).
        """
        with self._lock:
            if self.mode == Mode.FAULT:
                self.counters['arms_refused'] += 1
                return False, (f'fall stop latched ({self.fault}): call ~/reset_estop, then '
                               'arm')
            if self.mode in (Mode.STAND, Mode.POLICY):
                return True, f'already {self.mode.name.lower()}'
            problem = self._check(now_ns)
            if problem is not None:
                self.counters['arms_refused'] += 1
                if latch_tilt and problem[0] == 'tilt':
                    self._latch(now_ns, *problem)
                    return False, f'fall stop latched: {problem[1]}'
                return False, f'not standing up: {problem[1]}'
            start = self._last_target if self.mode == Mode.LIE else self._js[0]
            self._begin(Mode.STAND, now_ns, 'arm', start)
            self.counters['arms'] += 1
            self.counters['stand_ups'] += 1
            return True, (f'standing up over {self.cfg.stand_time_s:g} s, then the policy '
                          f'blended in over {self.cfg.blend_steps} steps')

    def request_disarm(self, now_ns: int) -> tuple[bool, str]:
        """Lie down, then damping (from STAND or POLICY); otherwise nothing changes."""
        with self._lock:
            if self.mode not in (Mode.STAND, Mode.POLICY):
                return True, f'{self.mode.name.lower()}: nothing to lay down'
            self._begin(Mode.LIE, now_ns, 'disarm', self._last_target)
            self.counters['disarms'] += 1
            self.counters['lie_downs'] += 1
            return True, f'lying down over {self.cfg.lie_time_s:g} s, then damping'

    def clear_fault(self, now_ns: int) -> tuple[bool, str]:
        """Clear a latched fault into PASSIVE if every condition holds now."""
        with self._lock:
            if self.mode != Mode.FAULT:
                return True, 'no fall stop latched'
            problem = self._check(now_ns)
            if problem is not None:
                self.counters['fault_clears_refused'] += 1
                return False, f'fall stop stays latched: {problem[1]}'
            was = self.fault
            self.fault = ''
            self._transition(now_ns, Mode.PASSIVE, 'reset')
            self.counters['fault_clears'] += 1
            return True, f'fall stop cleared ({was}); passive, arm to stand up'

    def request_stop(self, now_ns: int, reason: str) -> bool:
        """
        Go to damping, without a fault, as the node stops; return whether the mode moved.

        Its inputs end as its executor stops, well before its motor loop does: without this
        the loop latched a stale-input fault on every ordinary stop that took longer than
        ``state_timeout_s`` (an operator's Ctrl-C reported as a fall stop).
        """
        with self._lock:
            if self.mode not in _ACTIVE:
                return False
            self._transition(now_ns, Mode.PASSIVE, reason)
            self.counters['stops'] += 1
            return True

    def force_fault(self, now_ns: int, text: str) -> None:
        """Latch a fault from outside (the gate's loop died): damping until cleared."""
        with self._lock:
            self._latch(now_ns, None, text)

    # -- the motor-rate tick -------------------------------------------------------------
    def tick(self, now_ns: int) -> TickOut:
        """Run one motor tick at ``now_ns``: check the bounds, move the mode, command."""
        with self._lock:
            self.counters['ticks'] += 1
            if self.mode in _ACTIVE:
                problem = self._check(now_ns)
                if problem is not None:
                    self._latch(now_ns, *problem)
            if self.mode in (Mode.PASSIVE, Mode.FAULT):
                return self._damping(now_ns)
            target = self._active_target(now_ns)
            if self.mode == Mode.PASSIVE:      # the lie-down just ended
                return self._damping(now_ns)
            self._last_target = target
            q, qd, _ = self._js
            tau = self.pd.torque(target[None], q[None], qd[None], out=self._tau)[0]
            self._saturation(now_ns, target, q, qd)
            if self.mode == Mode.FAULT:        # saturated too long: damping from this tick
                return self._damping(now_ns)
            cmd = tau.copy() if self.interface == 'effort' else target.copy()
            return TickOut(self.mode, cmd, tau.copy())

    def _active_target(self, now_ns: int) -> np.ndarray:
        cfg = self.cfg
        if self.mode == Mode.STAND:
            s = min((now_ns - self._t0) / (cfg.stand_time_s * 1e9), 1.0)
            target = self._from + s * (self.stand_pose - self._from)
            if s >= 1.0:
                self._transition(now_ns, Mode.POLICY, 'stood up')
                self._policy_count = 0
            return target
        if self.mode == Mode.LIE:
            s = min((now_ns - self._t0) / (cfg.lie_time_s * 1e9), 1.0)
            target = self._from + s * (self.lie_pose - self._from)
            if s >= 1.0:
                self._transition(now_ns, Mode.PASSIVE, 'lay down')
            return target
        # POLICY: blended in from the stand pose over blend_steps policy steps
        if self._policy is None or self._policy_count == 0:
            return self.stand_pose.copy()
        a = min(self._policy_count / cfg.blend_steps, 1.0)
        return self.stand_pose + a * (self._policy - self.stand_pose)

    def _damping(self, now_ns: int) -> TickOut:
        js = self._js
        if js is None or not (np.isfinite(js[0]).all() and np.isfinite(js[1]).all()):
            # Nothing measured (or garbage): effort 0 is no torque at all; a position
            # driver cannot be told anything safe without a measured position.
            self.counters['ticks_silent'] += self.interface == 'position'
            cmd = np.zeros(self.n_joints) if self.interface == 'effort' else None
            return TickOut(self.mode, cmd, np.zeros(self.n_joints))
        q, qd, t_ns = js
        if self.interface == 'effort' and now_ns - t_ns > self.timeout_ns:
            # A stale velocity would be held as a constant torque: none at all instead.
            self.counters['ticks_stale_damping'] += 1
            return TickOut(self.mode, np.zeros(self.n_joints), np.zeros(self.n_joints))
        lim = self.limits.torque_limit
        tau = np.clip(-self.cfg.damping_kd * qd, -lim, lim)
        cmd = tau if self.interface == 'effort' else q.copy()
        return TickOut(self.mode, cmd, tau)

    def _saturation(self, now_ns, target, q, qd) -> None:
        # The PD's unclipped torque at or past what the motor gives, per joint, for how long.
        raw = self.cfg.kp * (target - q) - self.cfg.kd * qd
        if self.mode == Mode.STAND:
            # What the stand-up asks of the motors, before any clipping (<= 1: within them).
            self.stand_peak = max(self.stand_peak,
                                  float(np.max(np.abs(raw) / self.limits.torque_limit)))
        sat = np.abs(raw) > np.abs(self._tau[0]) + 1e-9
        if self.mode in (Mode.POLICY, Mode.STAND):
            key = self.mode.name.lower()
            self.counters[f'{key}_ticks'] += 1
            self.counters[f'{key}_saturated_ticks'] += bool(sat.any())
        if sat.any():
            self.counters['saturated_ticks'] += 1
        self._sat_since[~sat] = -1
        self._sat_since[sat & (self._sat_since < 0)] = now_ns
        since = self._sat_since[sat]
        if since.size and now_ns - since.min() >= self.cfg.saturation_time_s * 1e9:
            k = int(np.flatnonzero(sat & (self._sat_since == since.min()))[0])
            self._latch(now_ns, 'saturation', f'joint {k} torque at its limit for '
                        f'{self.cfg.saturation_time_s:g} s')

    # -- checks and transitions (under the lock) -----------------------------------------
    def _check(self, now_ns: int) -> tuple[str, str] | None:
        """Return (kind, text) of the first bound that does not hold now, else None."""
        js, imu, cfg = self._js, self._imu, self.cfg
        if js is None:
            return 'stale_joint_state', 'no joint state yet'
        age = now_ns - js[2]
        if age > self.timeout_ns:
            return 'stale_joint_state', f'joint states {age / 1e6:.1f} ms old'
        if not (np.isfinite(js[0]).all() and np.isfinite(js[1]).all()):
            return 'stale_joint_state', 'joint states not finite'
        if imu is None:
            return 'stale_imu', 'no IMU sample yet'
        age = now_ns - imu[2]
        if age > self.timeout_ns:
            return 'stale_imu', f'IMU {age / 1e6:.1f} ms old'
        roll, pitch = imu[0], imu[1]
        if not (abs(roll) <= cfg.max_tilt_rad and abs(pitch) <= cfg.max_tilt_rad):
            return 'tilt', (f'roll {roll:+.2f} / pitch {pitch:+.2f} rad beyond '
                            f'{cfg.max_tilt_rad:g}')
        fast = np.abs(js[1]) > self.max_velocity
        if fast.any():
            k = int(np.flatnonzero(fast)[0])
            return 'joint_velocity', (f'joint {k} at {js[1][k]:+.1f} rad/s beyond '
                                      f'{self.max_velocity[k]:g}')
        return None

    def _latch(self, now_ns: int, kind: str | None, text: str) -> None:
        if self.mode == Mode.FAULT:
            return
        self.fault = text
        self.fault_t_ns = now_ns
        self.counters['faults'] += 1
        if kind is not None:
            self.counters[f'faults_{kind}'] += 1
        if kind == 'tilt' and self._tilt_seen_ns is not None:
            self.tilt_stop_ms = (now_ns - self._tilt_seen_ns) / 1e6
        self._sat_since[:] = -1
        self._transition(now_ns, Mode.FAULT, text)

    def _begin(self, mode: Mode, now_ns: int, reason: str, start) -> None:
        self._from = np.array(start, np.float64)
        self._t0 = now_ns
        self._sat_since[:] = -1
        self._transition(now_ns, mode, reason)

    def _transition(self, now_ns: int, mode: Mode, reason: str) -> None:
        self.transitions.append((now_ns, self.mode.name, mode.name, reason))
        del self.transitions[:-32]
        self.mode = mode

    def status(self) -> dict:
        """Return the mode, the latched fault and the counters (``legged_`` prefixed)."""
        with self._lock:
            out = {f'legged_{k}': v for k, v in self.counters.items()}
            out['legged_mode'] = self.mode.name.lower()
            out['legged_fault'] = self.fault
            out['legged_stand_peak_torque_ratio'] = round(self.stand_peak, 4)
            if self.tilt_stop_ms is not None:
                out['legged_tilt_stop_ms'] = round(self.tilt_stop_ms, 3)
            if self.transitions:
                t = self.transitions[-1]
                out['legged_last_transition'] = f'{t[1].lower()} -> {t[2].lower()}: {t[3]}'
            return out
