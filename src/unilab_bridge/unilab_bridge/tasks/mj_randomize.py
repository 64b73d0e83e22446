# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Per-env MuJoCo model randomisation: servo gains, masses, friction, damping, and pushes."""

import mujoco
import numpy as np

from unilab_bridge.disturbances import uniform_scales
from unilab_bridge.tasks.joint_limits import is_position_actuator


class MjDomain:
    """
    Randomise the per-env models of an MjBatch at every episode start, and push during it.

    Gains: a MuJoCo position servo computes ``kp * ctrl - kp * q - kv * qdot`` from
    ``gainprm[0] = kp`` and ``biasprm[1:3] = (-kp, -kv)``; both kp entries are scaled together
    so the servo keeps its set point. Masses scale each body's inertia tensor with its mass
    (uniform density change). Pushes follow legged_gym's ``_push_robots``: a random xy velocity
    set on the floating base; a fixed-base model gets a random kick on its actuated joints.
    """

    def __init__(self, sim, joint_ids, control_dt, rng_gains=None, rng_dynamics=None,
                 actuator=None, dynamics=None):
        """Copy the model per env; ``actuator`` / ``dynamics`` are config blocks or None."""
        self.sim = sim
        self.models = sim.private_models()
        m = sim.model
        self.actuator, self.dynamics = actuator, dynamics
        self.rng_gains, self.rng_dyn = rng_gains, rng_dynamics
        n = len(self.models)
        self._servo = np.array([a for a in range(m.nu) if is_position_actuator(m, a)], dtype=int)
        self._kp0 = m.actuator_gainprm[self._servo, 0].copy()
        self._kv0 = -m.actuator_biasprm[self._servo, 2].copy()
        self._mass0 = m.body_mass.copy()
        self._inertia0 = m.body_inertia.copy()
        self._friction0 = m.geom_friction[:, 0].copy()
        self._damping0 = m.dof_damping.copy()
        free = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        if free:
            adr = int(m.jnt_dofadr[free[0]])
            self._push_dofs = np.array([adr, adr + 1])  # base x, y velocity
        else:
            self._push_dofs = np.asarray(m.jnt_dofadr[list(joint_ids)], dtype=int)
        self.push_every = 0
        if dynamics is not None and dynamics.push_interval_s > 0 and dynamics.push_velocity > 0:
            self.push_every = max(1, int(round(dynamics.push_interval_s / control_dt)))
        self.kp_scale = np.ones(n)
        self.kd_scale = np.ones(n)
        self.mass_scale = np.ones((n, m.nbody))
        self.friction_scale = np.ones(n)
        self.damping_scale = np.ones(n)
        self.pushes = np.zeros(n, dtype=np.int64)

    @property
    def has_servos(self):
        """Return whether the model has position servos whose gains can be scaled."""
        return len(self._servo) > 0

    def reset(self, envs):
        """Draw new gains and dynamics for ``envs`` and write them into their models."""
        envs = np.asarray(envs, dtype=int)
        k = len(envs)
        if self.actuator is not None and self.has_servos:
            self.kp_scale[envs] = uniform_scales(self.rng_gains, k, (), self.actuator.kp_scale)
            self.kd_scale[envs] = uniform_scales(self.rng_gains, k, (), self.actuator.kd_scale)
        if self.dynamics is not None:
            d = self.dynamics
            self.mass_scale[envs] = uniform_scales(
                self.rng_dyn, k, (self._mass0.size,), d.mass_scale)
            self.friction_scale[envs] = uniform_scales(self.rng_dyn, k, (), d.friction_scale)
            self.damping_scale[envs] = uniform_scales(self.rng_dyn, k, (), d.damping_scale)
        self.pushes[envs] = 0
        for i in envs:
            model = self.models[i]
            if self.actuator is not None and self.has_servos:
                kp, kv = self._kp0 * self.kp_scale[i], self._kv0 * self.kd_scale[i]
                model.actuator_gainprm[self._servo, 0] = kp
                model.actuator_biasprm[self._servo, 1] = -kp
                model.actuator_biasprm[self._servo, 2] = -kv
            if self.dynamics is not None:
                model.body_mass[:] = self._mass0 * self.mass_scale[i]
                model.body_inertia[:] = self._inertia0 * self.mass_scale[i][:, None]
                model.geom_friction[:, 0] = self._friction0 * self.friction_scale[i]
                model.dof_damping[:] = self._damping0 * self.damping_scale[i]

    def push(self, episode_steps):
        """Kick the envs whose episode step count hits the push interval; return the mask."""
        if not self.push_every:
            return np.zeros(len(episode_steps), dtype=bool)
        due = (episode_steps > 0) & (episode_steps % self.push_every == 0)
        v = self.dynamics.push_velocity
        rows = self.sim.state_field('qvel')
        for i in np.flatnonzero(due):
            kick = self.rng_dyn.uniform(-v, v, len(self._push_dofs))
            if len(self._push_dofs) == 2:
                rows[i, self._push_dofs] = kick  # legged_gym sets the base velocity
            else:
                rows[i, self._push_dofs] += kick
            self.pushes[i] += 1
        return due

    def episode_params(self, env):
        """Return this env's per-episode parameters for the log."""
        out = {'pushes': int(self.pushes[env])}
        if self.actuator is not None and self.has_servos:
            out.update(kp_scale=round(float(self.kp_scale[env]), 4),
                       kd_scale=round(float(self.kd_scale[env]), 4))
        if self.dynamics is not None:
            out.update(mass_scale_mean=round(float(self.mass_scale[env][1:].mean()), 4),
                       friction_scale=round(float(self.friction_scale[env]), 4),
                       damping_scale=round(float(self.damping_scale[env]), 4))
        return out
