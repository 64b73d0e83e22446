# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Preallocated work arrays of a SafetyGate for one batch size."""

import numpy as np


class Buffers:
    """
    Every array SafetyGate.filter writes, sized [N, J] or [N] once per batch size.

    Allocating up front keeps the control loop free of per-call allocation; the
    per-row memory (``last``, ``has_last``) lives here too because it is only
    meaningful for the batch size it was recorded with. The bounds ``lo_hard``,
    ``hi_hard`` and ``step`` ([J] each) are stored broadcast to [N, J] because a
    ufunc that broadcasts a [J] operand allocates a scratch buffer on every call.
    """

    def __init__(self, n, j, lo_hard, hi_hard, step, acc=None, env_lo=None, env_hi=None):
        self.n = n

        def f():
            return np.zeros((n, j), dtype=np.float64)

        def m(*shape):
            return np.zeros(shape, dtype=bool)

        self.inp, self.cmd, self.ref, self.lo, self.hi, self.state, self.last, self.prev = (
            f(), f(), f(), f(), f(), f(), f(), f())
        self.fin, self.jclamp = m(n, j), m(n, j)
        self.row_ok, self.rejected, self.clamped = m(n), m(n), m(n)
        self.has_last, self.has_ref, self.no_ref, self.state_ok = m(n), m(n), m(n), m(n)
        self.has_prev = m(n)
        self.remeasure = m(n)  # rows whose next reference is the measured position
        self.comp = f()  # PID-compensated command before its re-clamp
        self.jcount = np.zeros(j, dtype=np.int64)
        self.jclamp_int = np.zeros((n, j), dtype=np.int64)
        self.lo_hard, self.hi_hard, self.step, self.acc = (
            None if v is None else np.ascontiguousarray(np.broadcast_to(v, (n, j)))
            for v in (lo_hard, hi_hard, step, acc))
        # The trained envelope (position interface; None = the driver's range only).
        self.env_lo, self.env_hi = (
            None if v is None else np.ascontiguousarray(np.broadcast_to(v, (n, j)))
            for v in (env_lo, env_hi))
        self.env_j = m(n, j)    # scratch: joints the envelope moved
        self.env_row = m(n)     # rows the envelope clamped in this call
        self.track_row = m(n)   # rows the tracking bound pulled in this call
        self.track_hold = m(n)  # rows held until the robot catches up (tracking)
        self.tool_row = m(n)    # rows the tool-speed limit scaled in this call
        self.scr = m(n)         # scratch row mask
        self.track_n = np.zeros(n, dtype=np.int64)  # consecutive cycles pulled, per row
        self.err = f()          # scratch: command minus measured
        self.acc_s = None if acc is None else f()  # the acceleration bound at this step's scale
        self.prev_scale = 1.0  # the time between ``prev`` and ``last`` in control steps
