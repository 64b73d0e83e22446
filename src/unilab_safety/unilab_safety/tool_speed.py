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
most ``ITERATIONS`` times). The first pass aims at the limit (exact for a
straight tool path); later passes aim ``AIM_MARGIN`` inside it: the tool's path
is curved, and a step scaled onto the limit lands a hair outside it again and
again, converging from above. (Before, a row still outside after the passes
was held at its reference: on a UR5e nearly every scaled row was, so the arm
froze at the start of each motion while the policy kept asking, and the clamps
cascaded; issue 38.) A row still outside after the passes is bisected along
its step: the largest share of it within the limit (``BISECTIONS`` halvings),
never more than the limit. The scaled command lies on the segment between the
reference and the checked command, so every box limit both satisfy (position
range, change limit) still holds. Two ``mj_kinematics`` calls per row and
pass: on one robot arm at 50-500 Hz this is a few microseconds per cycle; no
array is allocated.
"""

from __future__ import annotations

import math

import numpy as np

#: Scaling passes per row before a row that is still too fast is bisected.
ITERATIONS = 4
#: Share of the limit that the passes after the first aim inside it.
AIM_MARGIN = 1e-3
#: Halvings of the step when the passes did not bring a row within the limit (2^-30 of it).
BISECTIONS = 30


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
        self._try = np.zeros(len(kinematics.joint_names))

    def limit(self, cmd: np.ndarray, ref: np.ndarray, rows: np.ndarray, share: float,
              out_rows: np.ndarray) -> int:
        """
        Scale ``cmd`` [N, J] towards ``ref`` in place for the ``rows`` [N] bool selected.

        ``share`` is the time since the last command in control steps (0, 1].
        ``out_rows`` [N] bool is set where a row was scaled. Returns their count.
        """
        limit = self.max_speed * self.dt * share
        out_rows.fill(False)
        count = 0
        for i in range(cmd.shape[0]):
            if not rows[i]:
                continue
            self.fk.position_into(ref[i], self._p_ref)
            row = cmd[i]
            aim = limit
            for _ in range(ITERATIONS):
                dist = self._distance(row)
                if dist <= limit:
                    break
                # cmd <- ref + (L / d) (cmd - ref): the same direction, a shorter step.
                np.subtract(row, ref[i], out=self._step)
                np.multiply(self._step, aim / dist, out=self._step)
                np.add(ref[i], self._step, out=row)
                out_rows[i] = True
                aim = limit * (1.0 - AIM_MARGIN)
            else:
                if self._distance(row) > limit:
                    self._bisect(row, ref[i], limit)
            count += int(out_rows[i])
        return count

    def _distance(self, q) -> float:
        """Return |p(q) - p(ref)| [m] (``_p_ref`` holds the reference's tool position)."""
        self.fk.position_into(q, self._p_cmd)
        np.subtract(self._p_cmd, self._p_ref, out=self._d)
        return math.sqrt(float(np.dot(self._d, self._d)))

    def _bisect(self, row, ref, limit) -> None:
        """Set ``row`` to ``ref + t (row - ref)``: the largest t in [0, 1] found within limit."""
        np.subtract(row, ref, out=self._step)
        lo, hi = 0.0, 1.0  # t = 0 (the reference) is within any limit
        for _ in range(BISECTIONS):
            mid = 0.5 * (lo + hi)
            np.multiply(self._step, mid, out=self._try)
            np.add(ref, self._try, out=self._try)
            if self._distance(self._try) <= limit:
                lo = mid
            else:
                hi = mid
        np.multiply(self._step, lo, out=row)
        np.add(ref, row, out=row)
