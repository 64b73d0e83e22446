# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Look-ahead: stop a commanded motion before it crosses a joint limit or leaves a box.

For each row the commanded motion is extrapolated over a horizon of
``K = ceil(horizon_s / dt)`` control steps (at least one) from the checked
command ``q0 = cmd``:

- ``velocity`` model: the per-step change ``v = cmd - ref`` is kept,
  ``q_s = q0 + s v``;
- ``acceleration`` model: the change of that change, ``a = v - (ref - prev)``
  (finite differences of the last outputs; 0 for a row without two outputs),
  is kept too, ``v_s = v + s a`` and ``q_s = q_{s-1} + v_s``, i.e.
  ``q_s = q0 + s v + a s (s + 1) / 2`` (the discrete form of
  ``q + v t + a t^2 / 2``).

A row is stopped (its command becomes the reference: hold) when any
predicted ``q_s``, s = 1..K,

- lies outside a joint's position range (``pos_lo`` / ``pos_hi``, the range
  the gate enforces) while the command itself is inside it; or
- puts a moving body origin or site further outside the Cartesian ``box``
  than the reference pose is (forward kinematics with MuJoCo
  ``mj_kinematics`` on a private MjData, so nothing is shared with a
  simulator). Motion that leaves the box less than the reference pose did
  (recovering from outside) is allowed, so a robot that starts outside can
  still move back in.

Each step of the horizon is checked, not only its end, so a curved path that
leaves the box and comes back is caught. The joint-limit part needs no model;
mujoco is imported only when a box is given.
"""

from __future__ import annotations

import numpy as np


MODELS = ('velocity', 'acceleration')


class WorkspaceLookahead:
    """
    Stop rows whose predicted motion crosses a joint limit or leaves ``box``.

    ``box`` = (xmin, ymin, zmin, xmax, ymax, zmax) or None (joint limits only);
    ``joint_names`` are the commanded joints, in command order, looked up in
    the MJCF model ``model_file``; other joints of the model stay at qpos0.
    """

    def __init__(self, model_file, joint_names, box, horizon_s, dt, pos_lo=None, pos_hi=None,
                 model='velocity'):
        if model not in MODELS:
            raise ValueError(f'look-ahead model must be one of {MODELS}, got {model!r}')
        if not horizon_s >= 0 or dt is None or not dt > 0:
            raise ValueError(f'look-ahead needs horizon_s >= 0 and dt > 0, got {horizon_s}, {dt}')
        self.model_name = model
        # Steps of the horizon; 1e-9 keeps 0.1 / 0.02 at 5 despite rounding.
        self.steps = max(1, int(np.ceil(float(horizon_s) / float(dt) - 1e-9)))
        self.n_joints = j = len(joint_names)
        self._range_lo = (np.full(j, -np.inf) if pos_lo is None
                          else np.asarray(pos_lo, np.float64).copy())
        self._range_hi = (np.full(j, np.inf) if pos_hi is None
                          else np.asarray(pos_hi, np.float64).copy())
        self._q = np.zeros(j)
        self._v = np.zeros(j)
        self._a = np.zeros(j)
        self.model = None
        if box is None or not len(box):
            if not np.any(np.isfinite(self._range_lo) | np.isfinite(self._range_hi)):
                raise ValueError('look-ahead without a box needs joint position limits')
            return
        import mujoco
        self._mj = mujoco
        box = np.asarray(box, dtype=np.float64)
        if box.shape != (6,) or not np.all(box[:3] < box[3:]):
            raise ValueError(f'workspace box must be [xmin, ymin, zmin, xmax, ymax, zmax] with '
                             f'min < max, got {list(box)}')
        if not model_file:
            raise ValueError('a workspace box needs the MJCF model for forward kinematics')
        self.lo, self.hi = box[:3].copy(), box[3:].copy()
        self.model = mujoco.MjModel.from_xml_path(str(model_file))
        self.data = mujoco.MjData(self.model)
        adr = []
        for name in joint_names:
            try:
                adr.append(int(self.model.jnt_qposadr[self.model.joint(name).id]))
            except KeyError:
                raise ValueError(f'workspace model {model_file} has no joint {name!r}') from None
        self._adr = np.array(adr, dtype=np.intp)
        m = self.model
        # Bodies that move with some joint (not welded to the world) and are not mocap.
        self._bodies = np.array([b for b in range(1, m.nbody)
                                 if m.body_weldid[b] != 0 and m.body_mocapid[b] < 0],
                                dtype=np.intp)
        self._sites = np.array([s for s in range(m.nsite)
                                if m.body_weldid[m.site_bodyid[s]] != 0], dtype=np.intp)
        if not len(self._bodies) + len(self._sites):
            raise ValueError(f'workspace model {model_file} has no moving body or site')
        self._pts = np.zeros((len(self._bodies) + len(self._sites), 3))
        self._out = np.zeros_like(self._pts)

    def violation(self, q):
        """Return how far (sum over points, m) the pose ``q`` [J] is outside the box."""
        if self.model is None:
            return 0.0
        d = self.data
        d.qpos[self._adr] = q
        self._mj.mj_kinematics(self.model, d)
        nb = len(self._bodies)
        self._pts[:nb] = d.xpos[self._bodies]
        self._pts[nb:] = d.site_xpos[self._sites]
        # Distance outside an axis-aligned box, per axis: max(lo - p, 0) + max(p - hi, 0).
        np.subtract(self.lo, self._pts, out=self._out)
        np.maximum(self._out, 0.0, out=self._out)
        total = float(self._out.sum())
        np.subtract(self._pts, self.hi, out=self._out)
        np.maximum(self._out, 0.0, out=self._out)
        return total + float(self._out.sum())

    def _outside_range(self, q):
        return bool(np.any(q < self._range_lo) or np.any(q > self._range_hi))

    def predict(self, cmd, ref, prev=None):
        """Return the predicted poses [K, J] of one row (for tests and tools; allocates)."""
        v = np.asarray(cmd, np.float64) - ref
        a = np.zeros_like(v) if prev is None or self.model_name == 'velocity' \
            else v - (np.asarray(ref, np.float64) - prev)
        s = np.arange(1, self.steps + 1, dtype=np.float64)[:, None]
        return cmd + s * v + a * s * (s + 1) / 2.0

    def stop_rows(self, cmd, ref, row_ok, prev=None, has_prev=None, has_ref=None):
        """
        Hold rows of ``cmd`` [N, J] (in place) whose predicted motion crosses a limit.

        ``ref`` [N, J] is each row's reference (last output), ``prev`` [N, J]
        the output before it (used by the acceleration model where
        ``has_prev`` [N] is True); rows with ``row_ok`` False are skipped, and so
        are rows with ``has_ref`` False (a first command: no motion to extrapolate).
        Return the number of rows stopped.
        """
        stopped = 0
        q, v, a = self._q, self._v, self._a
        accel = self.model_name == 'acceleration' and prev is not None
        for i in range(cmd.shape[0]):
            if not row_ok[i] or (has_ref is not None and not has_ref[i]):
                continue
            np.subtract(cmd[i], ref[i], out=v)
            if accel and (has_prev is None or has_prev[i]):
                np.subtract(ref[i], prev[i], out=a)
                np.subtract(v, a, out=a)  # a = v - (ref - prev)
            else:
                a.fill(0.0)
            np.copyto(q, cmd[i])
            cmd_inside = not self._outside_range(cmd[i])
            base = None
            for _ in range(self.steps):
                v += a
                q += v  # q_s = q_{s-1} + v_s with v_s = v + s a
                if cmd_inside and self._outside_range(q):
                    break
                if self.model is not None:
                    ahead = self.violation(q)
                    if ahead > 0.0:
                        if base is None:
                            base = self.violation(ref[i])
                        if ahead > base + 1e-9:
                            break
            else:
                continue
            cmd[i] = ref[i]
            stopped += 1
        return stopped
