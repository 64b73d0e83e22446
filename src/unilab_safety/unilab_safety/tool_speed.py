# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A Cartesian speed limit for the tool: the joint step is scaled down until the tool is slow.

Joint velocity limits bound each joint, not the tool: six joints each at their
limit can move the tool of a UR5e at several metres per second (3.6 m/s was
seen with a policy at UR's joint limits), while UR's default tool-speed safety
limit is 1.5 m/s. For each row the tool position of the command and of the
previous command (the gate's reference) are computed by forward kinematics
(``unilab_core.kinematics.SiteKinematics``: ``mj_kinematics`` on the robot
profile's model, a private ``MjData``), and the step is scaled towards the
reference while the tool's displacement is longer than ``max_speed * dt *
share``:

    d = |p(cmd) - p(ref)|,   cmd <- ref + (L / d) (cmd - ref)   while d > L

Forward kinematics is not linear, so the scaled step is checked again (at
most ``ITERATIONS`` times; a row still too fast after that is held at its
reference). The scaled command lies on the segment between the reference and
the checked command, so every box limit both satisfy (position range, change
limit) still holds. Two ``mj_kinematics`` calls per row and iteration: on one
robot arm at 50-500 Hz this is a few microseconds per cycle; no array is
allocated.
"""

from __future__ import annotations

import math

import numpy as np

#: Scaling passes per row before a row that is still too fast is held.
ITERATIONS = 4


class ToolSpeedLimit:
    """Limit the tool displacement between a row's reference and its command."""

    def __init__(self, kinematics, max_speed: float, dt: float):
        if not max_speed > 0 or not math.isfinite(max_speed):
            raise ValueError(f'max tool speed must be > 0 m/s, got {max_speed}')
        if dt is None or not dt > 0:
            raise ValueError(f'the tool-speed limit needs a control period dt > 0, got {dt}')
        self.fk = kinematics
        self.max_speed = float(max_speed)
        self.dt = float(dt)
        self._p_ref = np.zeros(3)
        self._p_cmd = np.zeros(3)
        self._d = np.zeros(3)
        self._step = np.zeros(len(kinematics.joint_names))

    def limit(self, cmd: np.ndarray, ref: np.ndarray, rows: np.ndarray, share: float,
              out_rows: np.ndarray) -> int:
        """
        Scale ``cmd`` [N, J] towards ``ref`` in place for the ``rows`` [N] bool selected.

        ``share`` is the time since the last command in control steps (0, 1].
        ``out_rows`` [N] bool is set where a row was scaled or held. Returns their count.
        """
        limit = self.max_speed * self.dt * share
        out_rows.fill(False)
        count = 0
        for i in range(cmd.shape[0]):
            if not rows[i]:
                continue
            self.fk.position_into(ref[i], self._p_ref)
            row = cmd[i]
            for _ in range(ITERATIONS):
                self.fk.position_into(row, self._p_cmd)
                np.subtract(self._p_cmd, self._p_ref, out=self._d)
                dist = math.sqrt(float(np.dot(self._d, self._d)))
                if dist <= limit:
                    break
                # cmd <- ref + (L / d) (cmd - ref): the same direction, a shorter step.
                np.subtract(row, ref[i], out=self._step)
                np.multiply(self._step, limit / dist, out=self._step)
                np.add(ref[i], self._step, out=row)
                out_rows[i] = True
            else:
                self.fk.position_into(row, self._p_cmd)
                np.subtract(self._p_cmd, self._p_ref, out=self._d)
                if math.sqrt(float(np.dot(self._d, self._d))) > limit * (1.0 + 1e-9):
                    np.copyto(row, ref[i])  # still too fast: hold
            count += int(out_rows[i])
        return count
