# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The actuator as on the robot: PD at the motor, its torque limits, and the command delay.

One implementation, used by training (the bridge computes the joint torques with it at the
physics rate) and by the deploy path (the same gains and limits, read from the same model),
so the gains on the robot are the gains of training (DESIGN.md, "Legged robots").

A legged robot's joint driver closes a PD loop at the motor: the policy sends a position
target, the driver computes at its own rate, with the velocity target 0 as unitree_rl_gym
does (legged_gym ``LeggedRobot._compute_torques``, control_type ``'P'``; its Go2 config:
kp 20 N m/rad, kd 0.5 N m s/rad)::

    tau_pd = kp * (q_target - q) + kd * (0 - qd)                                (1)

The motor cannot deliver every torque. Its current limit caps it at all speeds::

    -tau_max <= tau <= tau_max                                                  (2)

and when it drives (torque in the direction of motion) its back-EMF leaves it less voltage
the faster it turns: full torque up to a knee speed, then a linear roll-off to zero at the
no-load speed (the usual DC-motor envelope; Isaac Lab's ``DCMotor`` is the special case
knee = 0)::

    tau_avail(|qd|) = tau_max * clip((qd_nl - |qd|) / (qd_nl - qd_knee), 0, 1)     (3)
    qd > 0:  -tau_max    <= tau <= tau_avail
    qd < 0:  -tau_avail  <= tau <= tau_max

Braking (torque against the motion) keeps the full tau_max. The limits of a robot are data
of its model (``MotorLimits.from_model``): tau_max is each motor actuator's ctrlrange, the
speeds are the model's custom numerics ``no_load_speed`` and ``knee_speed`` (go2.xml says
where its figures come from and which are assumptions).

The command reaches the motor late: the bus, the driver's period and the policy's own
computation add up, on a Go2, to some 0-20 ms, and an unmodelled delay is among deployers'
top failures. ``CommandDelay`` replays each env's targets a whole number of motor-rate ticks
late, that number drawn per episode uniformly from 0 .. round(max_delay_s / tick_s)::

    q_target_motor[t] = q_target_policy[t - k_env]                             (4)

NumPy float64, vectorised over ``[N envs, J joints]``, buffers allocated once. No ROS, no
MuJoCo import.
"""

from __future__ import annotations

import dataclasses

import numpy as np

#: unitree_rl_gym, legged_gym/envs/go2/go2_config.py (control.stiffness / damping).
DEFAULT_KP = 20.0
DEFAULT_KD = 0.5
#: The per-episode delay is drawn from 0 to this (s).
DEFAULT_MAX_DELAY_S = 0.020


@dataclasses.dataclass(frozen=True)
class MotorLimits:
    """Per joint ``[J]``: torque limit (N m), knee and no-load speeds (rad/s), eq. (2), (3)."""

    torque_limit: np.ndarray
    knee_speed: np.ndarray
    no_load_speed: np.ndarray

    def __post_init__(self):
        """Check shapes and that 0 <= knee < no-load, torque limit > 0, per joint."""
        arrays = [np.asarray(a, np.float64) for a in
                  (self.torque_limit, self.knee_speed, self.no_load_speed)]
        if len({a.shape for a in arrays}) != 1 or arrays[0].ndim != 1:
            raise ValueError('MotorLimits: torque_limit, knee_speed and no_load_speed must be '
                             f'[J] arrays of one length, got {[a.shape for a in arrays]}')
        tau, knee, nl = arrays
        if not (np.all(tau > 0) and np.all(knee >= 0) and np.all(knee < nl)):
            raise ValueError('MotorLimits: need torque_limit > 0 and 0 <= knee_speed < '
                             f'no_load_speed per joint, got {tau}, {knee}, {nl}')
        for name, a in zip(('torque_limit', 'knee_speed', 'no_load_speed'), arrays):
            a.flags.writeable = False
            object.__setattr__(self, name, a)

    @classmethod
    def from_model(cls, model) -> MotorLimits:
        """Read a MuJoCo model's motors, in actuator order (``mujoco.MjModel``, duck-typed)."""
        speeds = {}
        for name in ('knee_speed', 'no_load_speed'):
            try:
                speeds[name] = np.array(model.numeric(name).data, np.float64)
            except KeyError:
                raise ValueError(f'model has no <custom><numeric name="{name}">: the motors\' '
                                 'torque-speed curve is part of the robot model') from None
            if speeds[name].shape != (model.nu,):
                raise ValueError(f'numeric {name}: {speeds[name].size} values for '
                                 f'{model.nu} actuators')
        if not np.all(model.actuator_ctrllimited):
            raise ValueError('every motor needs a ctrlrange (its torque limit)')
        return cls(torque_limit=np.abs(model.actuator_ctrlrange).min(axis=1), **speeds)


class TorqueEnvelope:
    """
    What a motor delivers of a commanded torque at its speed, eq. (2)-(3), per ``[N, J]``.

    The clip alone: ``PdMotor`` applies it to its PD torque, a robot double driven on the
    effort interface to the torque it was sent (``unilab_bridge.legged_double``).
    """

    def __init__(self, num_envs: int, limits: MotorLimits):
        """Allocate ``[N, J]`` scratch once."""
        self.limits = limits
        self._span = limits.no_load_speed - limits.knee_speed
        shape = (num_envs, limits.torque_limit.shape[0])
        self._avail = np.empty(shape)
        self._lo = np.empty(shape)
        self._hi = np.empty(shape)

    def clip(self, tau: np.ndarray, qd: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """
        Return ``tau`` ``[N, J]`` clipped to the torque the motors deliver at speeds ``qd``.

        ``out`` may be ``tau`` itself. A non-finite input raises ValueError naming it (a NaN
        ``qd`` would pass the roll-off's comparisons unbounded).
        """
        for name, a in (('tau', tau), ('qd', qd)):
            if not np.isfinite(a).all():
                raise ValueError(f'TorqueEnvelope.clip: {name} has non-finite values')
        lim = self.limits
        # (3) tau_avail = tau_max * clip((qd_nl - |qd|) / (qd_nl - qd_knee), 0, 1)
        np.abs(qd, out=self._avail)
        np.subtract(lim.no_load_speed, self._avail, out=self._avail)
        self._avail /= self._span
        np.clip(self._avail, 0.0, 1.0, out=self._avail)
        self._avail *= lim.torque_limit
        # (2), (3): the roll-off bounds only the side that drives the motion.
        np.copyto(self._hi, np.broadcast_to(lim.torque_limit, self._hi.shape))
        np.copyto(self._hi, self._avail, where=qd > 0)
        np.copyto(self._lo, np.broadcast_to(-lim.torque_limit, self._lo.shape))
        np.negative(self._avail, out=self._avail)
        np.copyto(self._lo, self._avail, where=qd < 0)
        return np.clip(tau, self._lo, self._hi, out=out)


class PdMotor:
    """The joint torque a motor driver produces for position targets, eq. (1)-(3)."""

    def __init__(self, num_envs: int, limits: MotorLimits, kp=DEFAULT_KP, kd=DEFAULT_KD):
        """Set gains (scalars or ``[J]``) and allocate ``[N, J]`` scratch once."""
        self.limits = limits
        joints = limits.torque_limit.shape[0]
        self.kp = np.broadcast_to(np.asarray(kp, np.float64), (joints,)).copy()
        self.kd = np.broadcast_to(np.asarray(kd, np.float64), (joints,)).copy()
        self.envelope = TorqueEnvelope(num_envs, limits)
        self._tau = np.empty((num_envs, joints))
        self._damp = np.empty((num_envs, joints))

    def torque(self, q_target: np.ndarray, q: np.ndarray, qd: np.ndarray,
               out: np.ndarray | None = None) -> np.ndarray:
        """
        Return the delivered torque ``[N, J]`` for targets, positions and velocities.

        A non-finite input raises ValueError naming it: no NaN torque reaches a motor
        (a NaN ``qd`` would also pass the roll-off's comparisons unbounded).
        """
        for name, a in (('q_target', q_target), ('q', q), ('qd', qd)):
            if not np.isfinite(a).all():
                raise ValueError(f'PdMotor.torque: {name} has non-finite values '
                                 f'(rows {np.flatnonzero(~np.isfinite(a).all(axis=-1))})')
        tau = np.empty_like(self._tau) if out is None else out
        # (1) tau_pd = kp (q_target - q) - kd qd
        np.subtract(q_target, q, out=tau)
        tau *= self.kp
        np.multiply(self.kd, qd, out=self._damp)
        tau -= self._damp
        # (2), (3)
        return self.envelope.clip(tau, qd, out=tau)


class CommandDelay:
    """Each env's targets, a per-episode number of motor ticks late, eq. (4)."""

    def __init__(self, num_envs: int, num_joints: int, tick_s: float,
                 rng: np.random.Generator, max_delay_s: float = DEFAULT_MAX_DELAY_S):
        """Size the ring for ``max_delay_s`` at ``tick_s`` per motor tick; all delays 0."""
        if tick_s <= 0 or max_delay_s < 0:
            raise ValueError(f'CommandDelay: tick_s {tick_s} must be > 0, max_delay_s '
                             f'{max_delay_s} >= 0')
        self.max_ticks = int(round(max_delay_s / tick_s))
        self._rng = rng
        self._size = self.max_ticks + 1
        self._ring = np.zeros((self._size, num_envs, num_joints))
        self._flat = self._ring.reshape(self._size * num_envs, num_joints)
        self._rows = np.arange(num_envs)
        self._idx = np.empty(num_envs, np.intp)
        self._out = np.empty((num_envs, num_joints))
        self._head = 0
        #: [N] this episode's delay of each env, in motor ticks.
        self.ticks = np.zeros(num_envs, np.intp)

    def reset(self, envs, q_target: np.ndarray, ticks=None) -> None:
        """
        Start episodes of ``envs``: draw their delays (or take ``ticks``), fill their past.

        The past is ``q_target`` (``[len(envs), J]`` or ``[J]``, the pose the episode starts
        at), so a delayed env holds it until its first command arrives.
        """
        envs = np.atleast_1d(np.asarray(envs, np.intp))
        if ticks is None:
            ticks = self._rng.integers(0, self.max_ticks + 1, size=envs.shape[0])
        ticks = np.broadcast_to(np.asarray(ticks, np.intp), envs.shape)
        if np.any(ticks < 0) or np.any(ticks > self.max_ticks):
            raise ValueError(f'CommandDelay: ticks {ticks} outside 0..{self.max_ticks}')
        self.ticks[envs] = ticks
        self._ring[:, envs] = q_target

    def step(self, q_target: np.ndarray) -> np.ndarray:
        """
        Push this tick's targets ``[N, J]``; return those the motors act on now.

        The returned array is overwritten by the next call.
        """
        self._head = (self._head + 1) % self._size
        self._ring[self._head] = q_target
        # (4) slot of tick t - k per env, flattened over [slot, env]
        np.subtract(self._head, self.ticks, out=self._idx)
        self._idx %= self._size
        self._idx *= self._rows.shape[0]
        self._idx += self._rows
        return np.take(self._flat, self._idx, axis=0, out=self._out)
