# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Workspace look-ahead: stop a commanded motion before it leaves a Cartesian box.

For each row the commanded joint motion of one step, ``d = cmd - ref``, is
extrapolated at constant velocity over a horizon of ``k = horizon_s / dt``
steps (``q_pred = cmd + k * d``, clipped to the joint range the gate enforces
anyway). Forward kinematics of ``q_pred`` (MuJoCo ``mj_kinematics`` on a
private MjData, so nothing is shared with a simulator) gives the positions
of every moving body origin and site. A row whose predicted points lie
further outside the box than its reference pose does is stopped: its command
becomes the reference (hold). Motion that leaves the box less than the
reference pose did (recovering from outside) is allowed, so a robot that
starts outside can still move back in.

The check is pure (model and box in, stop mask out) and optional: mujoco is
imported only when a look-ahead is built.
"""

from __future__ import annotations

import numpy as np


class WorkspaceLookahead:
    """
    Stop rows whose predicted pose leaves ``box`` = (xmin, ymin, zmin, xmax, ymax, zmax).

    ``joint_names`` are the commanded joints, in command order, looked up in
    the MJCF model ``model_file``; other joints of the model stay at qpos0.
    """

    def __init__(self, model_file, joint_names, box, horizon_s, dt, pos_lo=None, pos_hi=None):
        import mujoco
        self._mj = mujoco
        box = np.asarray(box, dtype=np.float64)
        if box.shape != (6,) or not np.all(box[:3] < box[3:]):
            raise ValueError(f'workspace box must be [xmin, ymin, zmin, xmax, ymax, zmax] with '
                             f'min < max, got {list(box)}')
        if not horizon_s >= 0 or dt is None or not dt > 0:
            raise ValueError(f'look-ahead needs horizon_s >= 0 and dt > 0, got {horizon_s}, {dt}')
        self.lo, self.hi = box[:3].copy(), box[3:].copy()
        self.k = float(horizon_s) / float(dt)
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
        self._range_lo = None if pos_lo is None else np.asarray(pos_lo, np.float64)
        self._range_hi = None if pos_hi is None else np.asarray(pos_hi, np.float64)
        self._q = np.zeros(len(adr))
        self._pts = np.zeros((len(self._bodies) + len(self._sites), 3))
        self._out = np.zeros_like(self._pts)

    def violation(self, q):
        """Return how far (sum over points, m) the pose ``q`` [J] is outside the box."""
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

    def stop_rows(self, cmd, ref, row_ok):
        """
        Hold rows of ``cmd`` [N, J] (in place) whose predicted motion leaves the box.

        ``ref`` [N, J] is each row's reference (last output); rows with
        ``row_ok`` False are skipped. Return the number of rows stopped.
        """
        stopped = 0
        q = self._q
        for i in range(cmd.shape[0]):
            if not row_ok[i]:
                continue
            # q_pred = cmd + k * (cmd - ref): constant-velocity extrapolation.
            np.subtract(cmd[i], ref[i], out=q)
            q *= self.k
            q += cmd[i]
            if self._range_lo is not None:
                np.maximum(q, self._range_lo, out=q)
                np.minimum(q, self._range_hi, out=q)
            ahead = self.violation(q)
            if ahead > 0.0 and ahead > self.violation(ref[i]) + 1e-9:
                cmd[i] = ref[i]
                stopped += 1
        return stopped
