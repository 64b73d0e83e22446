# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A scripted arm6_reach policy (damped least-squares IK): a baseline and a sanity check."""

import mujoco
import numpy as np


class JacobianReachController:
    """
    Map (joint positions, reach extras) to joint position targets that approach the target.

    It only uses what a policy observes, so it can stand in for one, e.g. to demo the bridge
    or to check that the reward prefers reaching.
    """

    def __init__(self, model, site_name='ee_site', gain=1.0, damping=0.05, max_step=0.3):
        """Use ``model`` for kinematics; ``max_step`` bounds each joint move (rad)."""
        self.model = model
        self.site = model.site(site_name).id
        self.gain = gain
        self.damping = damping
        self.max_step = max_step
        self._data = mujoco.MjData(model)
        self._jacp = np.zeros((3, model.nv))
        self._low = model.actuator_ctrlrange[:, 0]
        self._high = model.actuator_ctrlrange[:, 1]

    def __call__(self, joint_position, extras):
        """Return [N, nu] commands; extras[:, 6:9] is target - ee."""
        commands = np.empty_like(joint_position)
        for i, (q, error) in enumerate(zip(joint_position, extras[:, 6:9])):
            self._data.qpos[:] = q
            mujoco.mj_kinematics(self.model, self._data)
            mujoco.mj_comPos(self.model, self._data)
            mujoco.mj_jacSite(self.model, self._data, self._jacp, None, self.site)
            jac = self._jacp
            # Damped least squares stays well-behaved near singular poses.
            jjt = jac @ jac.T + self.damping ** 2 * np.eye(3)
            dq = jac.T @ np.linalg.solve(jjt, self.gain * np.asarray(error, dtype=float))
            dq = np.clip(dq, -self.max_step, self.max_step)
            commands[i] = np.clip(q + dq, self._low, self._high)
        return commands
