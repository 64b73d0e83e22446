# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Optional PID compensation of checked position commands (off unless configured).

A position-controlled joint that lags its target (friction, gravity, a soft
servo) ends short of the commanded position. The compensator adds a PID term
on the joint position error ``e = target - measured`` to the already checked
command, per row and joint (textbook parallel form, e.g. Astrom & Murray,
"Feedback Systems", 2nd ed., ch. 11):

    u = kp * e + ki * sum(e * dt) + kd * (e - e_prev) / dt
    command = target + u

with the integral clamped to ``+-i_max`` (anti-windup). The SafetyGate then
re-applies every clamp to the compensated command (change per step,
acceleration, hard range), so compensation can never push a command past a
limit. Rows without a measurement, rows the gate rejected and rows the
caller marks as reset lose their integral and derivative memory.
"""

from __future__ import annotations

import numpy as np


class PidCompensator:
    """Per-joint PID on position error for batches of ``[N, J]`` commands."""

    def __init__(self, kp, ki, kd, dt, i_max=None, n_joints=None):
        j = n_joints if n_joints is not None else len(np.atleast_1d(kp))

        def vec(v, name, allow_inf=False):
            a = np.broadcast_to(np.asarray(v, dtype=np.float64), (j,)).copy()
            if np.any(np.isnan(a)) or np.any(a < 0) or (not allow_inf and np.any(np.isinf(a))):
                raise ValueError(f'pid {name} must be finite and >= 0 per joint, got {v}')
            return a

        if dt is None or not dt > 0:
            raise ValueError(f'pid needs dt > 0, got {dt}')
        self.kp, self.ki, self.kd = vec(kp, 'kp'), vec(ki, 'ki'), vec(kd, 'kd')
        self.i_max = vec(np.inf if i_max is None else i_max, 'i_max', allow_inf=True)
        self.dt = float(dt)
        self.n_joints = j
        self._n = None

    def _size(self, n):
        if self._n != n:
            self._n = n
            self.integral = np.zeros((n, self.n_joints))
            self.prev_err = np.zeros((n, self.n_joints))
            self.has_prev = np.zeros(n, dtype=bool)
            self._e = np.zeros((n, self.n_joints))
            self._t = np.zeros((n, self.n_joints))
            self._u = np.zeros((n, self.n_joints))
            self._i_lo = np.ascontiguousarray(np.broadcast_to(-self.i_max, (n, self.n_joints)))
            self._i_hi = np.ascontiguousarray(np.broadcast_to(self.i_max, (n, self.n_joints)))

    def reset(self, rows=None):
        """Forget integral and derivative memory of all rows, or of a bool mask [N]."""
        if self._n is None:
            return
        if rows is None:
            self.integral.fill(0.0)
            self.has_prev.fill(False)
            return
        np.copyto(self.integral, 0.0, where=np.asarray(rows)[:, None])
        np.copyto(self.has_prev, False, where=np.asarray(rows))

    def apply(self, cmd, measured, active):
        """
        Add the PID term to ``cmd`` [N, J] in place for rows where ``active`` [N] is True.

        ``measured`` [N, J] is the joint position; rows with a non-finite
        measurement are left alone and reset. Return the number of rows changed.
        """
        n = cmd.shape[0]
        self._size(n)
        e, t, u = self._e, self._t, self._u
        ok = active & np.all(np.isfinite(measured), axis=1)
        np.subtract(cmd, measured, out=e)
        np.copyto(e, 0.0, where=~ok[:, None])
        # Integral with anti-windup clamp.
        np.multiply(e, self.dt, out=t)
        np.add(self.integral, t, out=self.integral)
        np.maximum(self.integral, self._i_lo, out=self.integral)
        np.minimum(self.integral, self._i_hi, out=self.integral)
        np.copyto(self.integral, 0.0, where=~ok[:, None])
        # Derivative of the error (zero on a row's first step).
        np.subtract(e, self.prev_err, out=t)
        t /= self.dt
        np.copyto(t, 0.0, where=~(self.has_prev & ok)[:, None])
        np.multiply(self.kp, e, out=u)
        u += self.ki * self.integral
        u += self.kd * t
        np.copyto(self.prev_err, e)
        np.copyto(self.has_prev, ok)
        np.add(cmd, u, out=cmd, where=ok[:, None])
        return int(np.count_nonzero(ok))
