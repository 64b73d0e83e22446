# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The safety gate every batch of actions passes before it reaches an actuator.

Per row (one env / robot) of an [N, J] batch the gate rejects rows holding NaN or
Inf (they get the hold command), limits the change from the row's reference
(position: vel_max * dt, velocity: acc_max * dt, any interface: max_delta), for
the position interface also the change of that change (acc_max * dt^2, once a
row has two outputs), stops rows whose predicted motion would leave the
workspace (optional look-ahead, see lookahead.py) and then clamps to the hard
range of the interface, which always wins.

The change limits are per control step ``dt``. A command given a
``step_share`` below 1 (on a robot the loop passes the time since the last
command over dt, see loop.py: an action publisher faster than the control
rate) gets them scaled to it (slew ``vel_max * share * dt``; the acceleration
limit is the velocity change ``acc_max * share * dt`` with velocities taken
per share), so no publishing rate moves a joint faster than its limits.

Robot-only rules (position interface; the deploy graph turns them on, the
training graph does not, see build.py and docs/safety.md "On a robot"):

- trained envelope: the position range is the intersection of the driver's
  limits and the joint range the policy saw in training (plus a margin). It
  is soft towards the reference: a command may not leave the envelope further
  than its reference already is, so a robot that starts outside it moves back
  in at the change limits instead of jumping to its edge (``envelope_clamps``);
- tracking bound: a command is pulled to within ``tracking_error`` of the
  measured position (a trajectory controller aborts beyond its path
  tolerance, about 0.2 rad on a UR), counted in ``tracking_clamps``; a row
  pulled for more than ``tracking_hold_cycles`` cycles in a row, or without a
  finite measured position, is held at its last command until that command is
  within half the bound of the measured position (``tracking_holds``);
- tool speed: the step is scaled towards the reference until the tool moves
  at most ``max_speed * dt`` (tool_speed.py, ``tool_speed_clamps``).

The reference is the row's last output; a row without one (at start, after
``reset``: an episode start, an e-stop release, a fallback) takes the measured
joint position (``state_position``, clamped to the hard range) for the position
interface, and zero for velocity and effort. A position row with neither is
never guessed at: ``filter`` refuses the whole batch (``NoReferenceError``)
and changes nothing, so the first command after any reset is limited from
where the joint really is.
"""

from typing import NamedTuple

import numpy as np

from unilab_safety.gate_buffers import Buffers

INTERFACES = ('position', 'velocity', 'effort')
FALLBACKS = ('hold', 'zero')


class ActionShapeError(ValueError):
    """An action batch (or state) has the wrong shape or dtype; the whole batch is refused."""


class NoReferenceError(ActionShapeError):
    """A position row has neither a last command nor a finite measured position."""


def intersect_envelope(limits, interface, envelope):
    """
    Return ``(lo, hi)`` [J]: the driver's position range narrowed to ``envelope`` = (lo, hi).

    Raises ValueError for another interface, a malformed envelope, or a joint whose
    trained range does not overlap the driver's (naming it).
    """
    if interface != 'position':
        raise ValueError('the trained envelope needs the position interface')
    j = len(limits)
    try:
        lo, hi = (np.broadcast_to(np.asarray(v, dtype=np.float64), (j,)) for v in envelope)
    except ValueError as exc:
        raise ValueError(f'the trained envelope needs {j} values per bound: {exc}') from None
    if np.any(np.isnan(lo)) or np.any(np.isnan(hi)) or not np.all(lo <= hi):
        raise ValueError(f'the trained envelope needs lo <= hi, got {lo.tolist()}, '
                         f'{hi.tolist()}')
    e_lo, e_hi = np.maximum(limits.pos_lo, lo), np.minimum(limits.pos_hi, hi)
    empty = [n for n, a, b in zip(limits.joint_names, e_lo, e_hi) if a > b]
    if empty:
        raise ValueError(f'the trained envelope of joint(s) {empty} lies outside the '
                         'driver\'s position limits')
    return e_lo, e_hi


class GateResult(NamedTuple):
    """
    Output of SafetyGate.filter.

    The arrays are the gate's own buffers, overwritten by the next call with the
    same batch size: copy them if you keep them.
    """

    command: np.ndarray
    clamped_mask: np.ndarray
    rejected_mask: np.ndarray


class SafetyGate:
    """
    Clamp, rate-limit and sanitise [N, J] command batches against a LimitSet.

    ``fallback`` picks the output of rejected rows: 'hold' (the row's last safe
    command, see hold_command) or 'zero' (velocity and effort interfaces only,
    a stop that deliberately ignores the acceleration limit).
    """

    def __init__(self, limits, interface, dt, max_delta=None, fallback='hold', lookahead=None,
                 pid=None, envelope=None, tracking_error=None, tracking_hold_cycles=0,
                 tool_speed=None):
        if interface not in INTERFACES:
            raise ValueError(f'interface must be one of {INTERFACES}, got {interface!r}')
        if fallback not in FALLBACKS:
            raise ValueError(f'fallback must be one of {FALLBACKS}, got {fallback!r}')
        if fallback == 'zero' and interface == 'position':
            raise ValueError("fallback 'zero' would command position 0; use 'hold'")
        if dt is not None and not dt > 0:
            raise ValueError(f'dt must be > 0 or None, got {dt}')
        self.limits = limits
        self.interface = interface
        self.dt = dt
        self.fallback = fallback
        self.n_joints = j = len(limits)
        if interface == 'position':
            self._lo, self._hi, rate = limits.pos_lo, limits.pos_hi, limits.vel_max
        elif interface == 'velocity':
            self._lo, self._hi, rate = -limits.vel_max, limits.vel_max, limits.acc_max
        else:
            self._lo, self._hi, rate = -limits.eff_max, limits.eff_max, None
        step = np.full(j, np.inf)
        if rate is not None and dt is not None:
            step = rate * dt
        if max_delta is not None:
            md = np.broadcast_to(np.asarray(max_delta, dtype=np.float64), (j,))
            if not np.all(md > 0):
                raise ValueError(f'max_delta must be > 0, got {max_delta}')
            step = np.minimum(step, md)
        # None skips the change limit entirely when no joint has one.
        self._step = step if np.any(np.isfinite(step)) else None
        # Position interface: the per-step velocity (last - previous output) may
        # change by at most acc_max * dt^2 per step (finite differences).
        self._acc = None
        if interface == 'position' and dt is not None and np.any(np.isfinite(limits.acc_max)):
            self._acc = limits.acc_max * dt * dt
        if lookahead is not None and interface != 'position':
            raise ValueError('the workspace look-ahead needs the position interface')
        self.lookahead = lookahead
        if pid is not None and (interface != 'position' or pid.n_joints != j):
            raise ValueError('pid compensation needs the position interface and one gain per '
                             'joint')
        self.pid = pid
        self._env_lo = self._env_hi = None
        if envelope is not None:
            self._env_lo, self._env_hi = intersect_envelope(limits, interface, envelope)
        if (tracking_error is not None or tool_speed is not None) and interface != 'position':
            raise ValueError('the tracking bound and the tool-speed limit need the position '
                             'interface')
        if tracking_error is not None and not (0 < tracking_error < np.inf):
            raise ValueError(f'tracking_error must be > 0 rad, got {tracking_error}')
        if int(tracking_hold_cycles) < 0:
            raise ValueError(f'tracking_hold_cycles must be >= 0, got {tracking_hold_cycles}')
        self.tracking_error = tracking_error
        self.tracking_hold_cycles = int(tracking_hold_cycles)
        self.tool_speed = tool_speed
        self.envelope_clamps = 0   # rows the trained envelope clamped
        self.tracking_clamps = 0   # rows pulled to within the tracking bound
        self.tracking_holds = 0    # rows held because the robot did not follow
        self.tool_speed_clamps = 0  # rows whose step the tool-speed limit scaled down
        self.pid_rows = 0  # rows compensated (a row counts once per batch)
        self.workspace_stops = 0
        self._buf = None
        self.passed = self.clamped = self.rejected = 0
        self.joint_clamps = np.zeros(j, dtype=np.int64)

    @property
    def envelope(self):
        """Return ``(lo, hi)`` [J] of the enforced trained envelope, or None."""
        return None if self._env_lo is None else (self._env_lo.copy(), self._env_hi.copy())

    @property
    def robot_counters(self):
        """Return the counters of the robot-only rules (envelope, tracking, tool speed)."""
        return {'envelope_clamps': self.envelope_clamps,
                'tracking_clamps': self.tracking_clamps,
                'tracking_holds': self.tracking_holds,
                'tool_speed_clamps': self.tool_speed_clamps}

    @property
    def unbounded_joints(self):
        """Names of joints whose command this interface leaves unbounded (worth a warning)."""
        free = np.isinf(self._lo) | np.isinf(self._hi)
        return [n for n, f in zip(self.limits.joint_names, free) if f]

    @property
    def counters(self):
        """Return a snapshot of the counters; passed + clamped + rejected == rows seen."""
        return {'passed': self.passed, 'clamped': self.clamped, 'rejected': self.rejected,
                'joint_clamps': self.joint_clamps.tolist()}

    def reject_batch(self, n_rows):
        """Count a batch of ``n_rows`` refused before filtering (e.g. ActionShapeError)."""
        self.rejected += int(n_rows)

    def reset(self, rows=None):
        """Forget the last safe command of all rows or of ``rows`` (indices or bool mask)."""
        b = self._buf
        if b is None:
            return
        if rows is None:
            b.has_last[:] = False
        elif isinstance(rows, np.ndarray) and rows.dtype == bool and rows.shape == (b.n,):
            np.copyto(b.has_last, False, where=rows)  # no index array: allocation-free
        else:
            b.has_last[rows] = False
        np.logical_and(b.has_prev, b.has_last, out=b.has_prev)
        # A reset row starts its tracking over (no hold, no count of pulled cycles).
        np.logical_not(b.has_last, out=b.scr)
        np.copyto(b.track_n, 0, where=b.scr)
        np.copyto(b.track_hold, False, where=b.scr)
        if self.pid is not None:
            self.pid.reset(None if rows is None else np.logical_not(b.has_last))

    def fill_fallback(self, out, zero=False, commit=False, state_position=None) -> bool:
        """
        Write the fallback command of every row of the last batch size into ``out`` [N, J].

        ``zero`` gives zeros (velocity / effort stop), else the hold command:
        each row's last output, or its measured position (``state_position``)
        before it has one. Returns False, writing nothing, when a position row
        has neither (there is nothing safe to hold). ``commit`` records that the
        actuator really got it: it becomes the rows' last output, and the next
        action is limited from the measured position where one is given then
        (the robot may not be exactly where the hold put it). No allocation.
        """
        b = self._buf
        # The hold is the last output itself, even where the next action will be
        # limited from the measured position (remeasure): a hold never moves.
        self._fill_ref(b, self._load_state(b, state_position), remeasure=False)
        if not zero and not b.has_ref.all():
            return False
        if zero:
            out.fill(0.0)
        else:
            np.copyto(out, b.ref)
        if commit:
            # A hold is a deliberate stop (no acceleration limit on it or on the step
            # after it); the next step starts from the measured position.
            np.copyto(b.last, out)
            b.has_last[:] = True
            b.has_prev[:] = False
            b.remeasure[:] = True
        return True

    def hold_command(self, state_position=None, n_rows=None):
        """
        Return (a copy of) what rejected rows would get now, shape [N, J].

        N is ``n_rows`` if given, else the last batch size, else taken from
        ``state_position``, else 1. A new N starts the per-row state over.
        """
        if n_rows is not None:
            n = int(n_rows)
        elif self._buf is not None:
            n = self._buf.n
        else:
            n = 1 if state_position is None or np.ndim(state_position) < 2 else len(state_position)
        b = self._buffers(n)
        self._fill_ref(b, self._load_state(b, state_position))
        if self.fallback == 'zero':
            return np.zeros_like(b.ref)
        if not b.has_ref.all():
            raise NoReferenceError('no hold command: a position row has neither a last '
                                   'command nor a finite measured position')
        return b.ref.copy()

    def size(self, n_rows: int) -> None:
        """Allocate the buffers for batches of ``n_rows`` (a new size starts the rows over)."""
        self._buffers(int(n_rows))

    def reference_ready(self, state_position=None, n_rows=None) -> bool:
        """Return whether every row has a reference (last command or finite measured state)."""
        if self.interface != 'position':
            return True
        n = n_rows if n_rows is not None else (self._buf.n if self._buf is not None else None)
        if n is None:
            return False
        b = self._buffers(n)
        if b.has_last.all():
            return True  # every row has its last command (the state cannot take it away)
        self._fill_ref(b, self._load_state(b, state_position))
        return bool(b.has_ref.all())

    def filter(self, action, state_position=None, measured=None, step_share=None):
        """
        Return the safe GateResult for ``action`` ([N, J] or [J]); never modify the input.

        ``state_position`` ([N, J] or [J]) is the measured joint position: the
        reference and hold of position rows without a last command (rows
        holding NaN/Inf are ignored). A position row with neither raises
        NoReferenceError before anything changes.
        ``measured`` ([N, J]) is the measured joint position for the optional PID
        compensation (ignored without a PID; no compensation when None).
        ``step_share`` is the share of one control step this command may use
        (robot: the time since the last command over ``dt``, see the loop); the
        change limits shrink with it (see the module doc). None (lock-step
        simulation: one command per simulated step) means one full step.
        """
        a = self._check(action)
        b = self._buffers(a.shape[0])
        # The floor keeps the scale positive (an infinite step limit times 0 is NaN);
        # a millionth of a step per action is no motion at any real publishing rate.
        scale = 1.0 if step_share is None else min(1.0, max(float(step_share), 1e-6))
        has_state = self._load_state(b, state_position)
        self._fill_ref(b, has_state)
        if not b.has_ref.all():
            raise NoReferenceError(
                f'{int(np.count_nonzero(~b.has_ref))} position row(s) have no reference: no '
                'last command and no finite measured joint position (state_position)')
        np.copyto(b.inp, a, casting='unsafe')
        np.isfinite(b.inp, out=b.fin)
        np.all(b.fin, axis=1, out=b.row_ok)
        np.logical_not(b.row_ok, out=b.rejected)
        np.copyto(b.cmd, b.inp)
        b.env_row.fill(False)
        self._clamp(b, scale)
        pid = self.pid is not None and measured is not None
        if pid:
            m = np.asarray(measured)
            if m.shape != b.cmd.shape:
                raise ActionShapeError(f'expected measured positions of shape '
                                       f'{list(b.cmd.shape)}, got {list(m.shape)}')
            # A limit that acted before compensation is a clamp; the PID term is not.
            np.not_equal(b.cmd, b.inp, out=b.jclamp)
            self.pid_rows += self.pid.apply(b.cmd, m, b.row_ok)
            np.copyto(b.comp, b.cmd)
            # Compensate the checked command, then clamp again: PID never passes a limit.
            self._clamp(b, scale)
        if self.tool_speed is not None:
            # Scaled towards the reference only: every box limit above still holds. Before
            # the tracking bound: scaling a pulled-back command towards the last command
            # would undo the pull, and a robot that lags would never be caught up with.
            self.tool_speed_clamps += self.tool_speed.limit(b.cmd, b.ref, b.row_ok, scale,
                                                            b.tool_row)
        if self.tracking_error is not None:
            self._track(b, has_state)
        if self.lookahead is not None:
            # Rows whose predicted motion leaves the workspace are stopped (held at ref).
            self.workspace_stops += self.lookahead.stop_rows(b.cmd, b.ref, b.row_ok, b.prev,
                                                             b.has_prev, b.has_ref)
        if pid:
            np.not_equal(b.cmd, b.comp, out=b.fin)  # limits that acted after compensation
            np.logical_or(b.jclamp, b.fin, out=b.jclamp)
        else:
            np.not_equal(b.cmd, b.inp, out=b.jclamp)
        np.copyto(b.jclamp, False, where=b.rejected[:, None])  # NaN != NaN is no clamp
        np.any(b.jclamp, axis=1, out=b.clamped)
        # The position this step starts from (the last command, or the measured one after
        # a reset or an applied fallback): the next step's acceleration limit uses it.
        np.copyto(b.prev, b.ref)
        if self.fallback == 'zero':
            b.ref.fill(0.0)
        np.copyto(b.cmd, b.ref, where=b.rejected[:, None])
        np.copyto(b.has_prev, b.has_last)
        b.prev_scale = scale  # the time (in steps) between prev and this command
        np.copyto(b.last, b.cmd)
        b.has_last[:] = True
        b.remeasure[:] = False
        self._count(b)
        return GateResult(b.cmd, b.clamped, b.rejected)

    def _clamp(self, b, scale=1.0):
        """
        Apply the change, acceleration and hard-range limits to ``b.cmd`` in place.

        ``scale`` is the time since the last command in control steps (0, 1]: the
        change limit is ``step * scale``; the acceleration limit keeps the
        velocity (change per time) within ``acc_max * elapsed`` of the last one.
        At scale 1 (every lock-step command) both are the per-step limits exactly.
        """
        if self._step is not None:
            np.multiply(b.step, scale, out=b.hi)
            np.subtract(b.ref, b.hi, out=b.lo)
            np.add(b.ref, b.hi, out=b.hi)
            np.logical_not(b.has_ref, out=b.no_ref)
            np.copyto(b.lo, -np.inf, where=b.no_ref[:, None])
            np.copyto(b.hi, np.inf, where=b.no_ref[:, None])
            np.maximum(b.cmd, b.lo, out=b.cmd)
            np.minimum(b.cmd, b.hi, out=b.cmd)
        if self._acc is not None:
            # v_prev = (last - prev) / prev_scale steps; the new change over ``scale``
            # steps must stay within (v_prev +- acc*dt^2*scale) * scale.
            np.subtract(b.ref, b.prev, out=b.lo)
            np.multiply(b.lo, scale / b.prev_scale, out=b.lo)
            np.multiply(b.acc, scale * scale, out=b.acc_s)
            np.add(b.lo, b.acc_s, out=b.hi)
            np.subtract(b.lo, b.acc_s, out=b.lo)
            np.add(b.lo, b.ref, out=b.lo)
            np.add(b.hi, b.ref, out=b.hi)
            np.logical_not(b.has_prev, out=b.no_ref)
            np.copyto(b.lo, -np.inf, where=b.no_ref[:, None])
            np.copyto(b.hi, np.inf, where=b.no_ref[:, None])
            np.maximum(b.cmd, b.lo, out=b.cmd)
            np.minimum(b.cmd, b.hi, out=b.cmd)
        if b.env_lo is not None:
            # The trained envelope, soft towards the reference: a command may not leave it
            # further than its reference already is (no jump to its edge from outside).
            np.minimum(b.env_lo, b.ref, out=b.lo)
            np.maximum(b.env_hi, b.ref, out=b.hi)
            np.copyto(b.err, b.cmd)
            np.maximum(b.cmd, b.lo, out=b.cmd)
            np.minimum(b.cmd, b.hi, out=b.cmd)
            # Counted where it acted beyond the driver's range (err: what that gives).
            np.maximum(b.err, b.lo_hard, out=b.err)
            np.minimum(b.err, b.hi_hard, out=b.err)
            np.not_equal(b.cmd, b.err, out=b.env_j)
            np.any(b.env_j, axis=1, out=b.scr)
            np.logical_or(b.env_row, b.scr, out=b.env_row)
        # The hard range goes last so that it wins over the change limit. (np.clip
        # would allocate a temporary per call; maximum/minimum with out= do not.)
        np.maximum(b.cmd, b.lo_hard, out=b.cmd)
        np.minimum(b.cmd, b.hi_hard, out=b.cmd)

    def _track(self, b, has_state):
        """
        Pull each row's command to within the tracking bound of the measured position.

        A trajectory controller aborts when its command leads the measured position by
        more than its path tolerance; commands led by up to 0.78 rad on a far goal. Rows
        pulled for more than ``tracking_hold_cycles`` cycles in a row (the robot does not
        follow: a slowed pendant, a protective stop), and rows without a finite measured
        position, are held at their last command (kept within the bound of a measured
        position) until it is within half the bound of the measured position. The
        driver's hard range still wins.
        """
        bound = self.tracking_error
        if has_state:
            np.copyto(b.scr, b.state_ok)
        else:
            b.scr.fill(False)
        np.subtract(b.state, bound, out=b.lo)
        np.add(b.state, bound, out=b.hi)
        np.copyto(b.err, b.cmd)
        np.maximum(b.cmd, b.lo, out=b.cmd)
        np.minimum(b.cmd, b.hi, out=b.cmd)
        np.logical_not(b.scr, out=b.no_ref)  # rows without a measured position
        np.copyto(b.cmd, b.err, where=b.no_ref[:, None])
        np.not_equal(b.cmd, b.err, out=b.env_j)
        np.any(b.env_j, axis=1, out=b.track_row)
        np.logical_and(b.track_row, b.row_ok, out=b.track_row)
        # Consecutive cycles pulled, per row.
        np.add(b.track_n, 1, out=b.track_n, where=b.track_row)
        np.logical_not(b.track_row, out=b.tool_row)  # scratch
        np.copyto(b.track_n, 0, where=b.tool_row)
        if self.tracking_hold_cycles:
            # Release rows whose last command the robot caught up with.
            np.subtract(b.ref, b.state, out=b.err)
            np.abs(b.err, out=b.err)
            np.less_equal(b.err, 0.5 * bound, out=b.env_j)
            np.all(b.env_j, axis=1, out=b.tool_row)
            np.logical_and(b.tool_row, b.scr, out=b.tool_row)
            np.logical_not(b.tool_row, out=b.tool_row)
            np.logical_and(b.track_hold, b.tool_row, out=b.track_hold)
            # Hold rows pulled for too long (their count starts over).
            np.greater(b.track_n, self.tracking_hold_cycles, out=b.tool_row)
            np.logical_or(b.track_hold, b.tool_row, out=b.track_hold)
            np.copyto(b.track_n, 0, where=b.tool_row)
        np.logical_or(b.track_hold, b.no_ref, out=b.tool_row)
        np.logical_and(b.tool_row, b.row_ok, out=b.tool_row)
        self.tracking_holds += int(np.count_nonzero(b.tool_row))
        self.tracking_clamps += int(np.count_nonzero(b.track_row))
        np.copyto(b.cmd, b.ref, where=b.tool_row[:, None])
        # A hold stays within the bound of the measured position where there is one.
        np.logical_and(b.tool_row, b.scr, out=b.track_row)
        np.maximum(b.cmd, b.lo, out=b.err)
        np.minimum(b.err, b.hi, out=b.err)
        np.copyto(b.cmd, b.err, where=b.track_row[:, None])
        np.maximum(b.cmd, b.lo_hard, out=b.cmd)
        np.minimum(b.cmd, b.hi_hard, out=b.cmd)

    def _check(self, action):
        try:
            a = np.asarray(action)
        except ValueError as e:  # ragged nested lists
            raise ActionShapeError(f'action is not an array: {e}') from e
        if a.dtype.kind not in 'fiu':
            raise ActionShapeError(f'expected a real numeric action, got dtype {a.dtype}')
        if a.ndim == 1:
            a = a.reshape(1, -1)  # a view, not a copy
        if a.ndim != 2 or a.shape[1] != self.n_joints:
            raise ActionShapeError(f'expected action of shape [N, {self.n_joints}] or '
                                   f'[{self.n_joints}], got {np.shape(action)}')
        return a

    def _buffers(self, n):
        # A new batch size means rows no longer match envs, so the state starts over.
        if self._buf is None or self._buf.n != n:
            self._buf = Buffers(n, self.n_joints, self._lo, self._hi, self._step, self._acc,
                                self._env_lo, self._env_hi)
        return self._buf

    def _load_state(self, b, state_position):
        if state_position is None or self.interface != 'position':
            return False
        s = np.asarray(state_position)
        if s.shape not in ((self.n_joints,), (b.n, self.n_joints)) or s.dtype.kind not in 'fiu':
            raise ActionShapeError(f'expected state_position of shape [{b.n}, {self.n_joints}] '
                                   f'or [{self.n_joints}], got {s.shape} {s.dtype}')
        np.copyto(b.state, s, casting='unsafe')
        np.isfinite(b.state, out=b.fin)
        np.all(b.fin, axis=1, out=b.state_ok)
        return True

    def _fill_ref(self, b, has_state, remeasure=True):
        """
        Fill the per-row reference (and hold): last output, else clamped state or zero.

        Rows marked ``remeasure`` (a fallback was applied) take the measured
        state instead of their last output when a finite one is given.
        """
        b.ref.fill(0.0)
        if self.interface == 'position':
            if has_state:
                np.copyto(b.ref, b.state, where=b.state_ok[:, None])
                np.logical_or(b.has_last, b.state_ok, out=b.has_ref)
            else:
                np.copyto(b.has_ref, b.has_last)
            np.maximum(b.ref, b.lo_hard, out=b.ref)
            np.minimum(b.ref, b.hi_hard, out=b.ref)
        else:
            b.has_ref.fill(True)
        np.copyto(b.ref, b.last, where=b.has_last[:, None])
        if remeasure and has_state and self.interface == 'position' and b.remeasure.any():
            # no_ref is scratch here: rows to take from the measured state.
            np.logical_and(b.remeasure, b.state_ok, out=b.no_ref)
            np.copyto(b.ref, b.state, where=b.no_ref[:, None])
            np.maximum(b.ref, b.lo_hard, out=b.ref)
            np.minimum(b.ref, b.hi_hard, out=b.ref)

    def _count(self, b):
        n_rej = int(np.count_nonzero(b.rejected))
        n_clamp = int(np.count_nonzero(b.clamped))
        self.rejected += n_rej
        self.clamped += n_clamp
        self.passed += b.n - n_rej - n_clamp
        if b.env_lo is not None:
            np.logical_not(b.rejected, out=b.scr)
            np.logical_and(b.env_row, b.scr, out=b.env_row)
            self.envelope_clamps += int(np.count_nonzero(b.env_row))
        # Summing bools into int64 would allocate a cast buffer; copy into ints first.
        np.copyto(b.jclamp_int, b.jclamp)
        np.sum(b.jclamp_int, axis=0, out=b.jcount)
        np.add(self.joint_clamps, b.jcount, out=self.joint_clamps)
