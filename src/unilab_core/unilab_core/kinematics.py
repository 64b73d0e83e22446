# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Forward kinematics of named joints to a site (or body), on a MuJoCo model of the robot.

On a robot the simulator's free task inputs are gone: the tool position of a
reach task comes from the measured joints through the robot's model, as an
operator's tools compute it. ``mujoco.mj_kinematics`` on a private ``MjData``
(positions only, no dynamics); joints of the model that are not named stay at
``qpos0``. mujoco is imported when an instance is made.
"""

from __future__ import annotations

import numpy as np


class SiteKinematics:
    """Position of one site (or body) of ``model_file`` for joint positions ``[N, J]``."""

    def __init__(self, model_file: str, joint_names, site: str):
        import mujoco
        self._mj = mujoco
        self.model = mujoco.MjModel.from_xml_path(str(model_file))
        self.data = mujoco.MjData(self.model)
        self.joint_names = list(joint_names)
        missing = [j for j in self.joint_names
                   if mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, j) < 0]
        if missing:
            raise ValueError(f'{model_file}: no joint(s) {missing}')
        self._adr = np.array([self.model.jnt_qposadr[self.model.joint(j).id]
                              for j in self.joint_names], dtype=np.intp)
        site_id = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_SITE, site)
        body_id = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_BODY, site)
        if site_id < 0 and body_id < 0:
            raise ValueError(f'{model_file}: no site or body `{site}`')
        self._site, self._body = site_id, body_id

    def position_into(self, q_row: np.ndarray, out: np.ndarray) -> None:
        """Write the site position ``[3]`` for one row ``[J]`` of joint positions into ``out``."""
        d = self.data
        np.copyto(d.qpos, self.model.qpos0)
        d.qpos[self._adr] = q_row
        self._mj.mj_kinematics(self.model, d)
        np.copyto(out, d.site_xpos[self._site] if self._site >= 0 else d.xpos[self._body])

    def positions(self, q: np.ndarray) -> np.ndarray:
        """Return the site positions ``[N, 3]`` (float64) for joint positions ``[N, J]``."""
        q = np.atleast_2d(np.asarray(q, np.float64))
        out = np.empty((q.shape[0], 3))
        d = self.data
        for i, row in enumerate(q):
            d.qpos[:] = self.model.qpos0
            d.qpos[self._adr] = row
            self._mj.mj_kinematics(self.model, d)
            out[i] = d.site_xpos[self._site] if self._site >= 0 else d.xpos[self._body]
        return out
