# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Per-episode randomisation of a legged robot's world, after legged_gym's domain randomisation.

Each env's private MjModel gets, at every episode start: the ground's friction (set on every
geom: MuJoCo takes the larger of two geoms' friction, so the contact's friction is the drawn
value), a payload on the trunk (mass added, its inertia unchanged as in legged_gym's
``_process_rigid_body_props``), a shift of the trunk's centre of mass, rough or flat ground
(``terrain.set_rough``), and per joint a motor strength factor the task multiplies its
torques by. During the episode, every ``push_interval_s`` a push adds a random horizontal
velocity to the trunk (legged_gym's ``_push_robots``). Every drawn value is kept per env for
the log and the tests.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

from unilab_bridge.tasks.terrain import set_rough


@dataclasses.dataclass(frozen=True)
class LeggedRanges:
    """The ranges values are drawn from, uniformly; a zero-width range disables a term."""

    friction: tuple = (0.2, 1.25)
    payload_kg: tuple = (-1.0, 3.0)
    com_shift_m: tuple = (0.03, 0.03, 0.02)  # +- per axis, trunk frame
    motor_strength: tuple = (0.9, 1.1)
    push_interval_s: float = 4.0  # 0: no pushes
    push_velocity: float = 0.5  # m/s, +- per horizontal axis
    rough_share: float = 0.5  # share of episodes on the height field


class LeggedDomain:
    """Draw and apply LeggedRanges to the private models of an MjBatch with a free base."""

    def __init__(self, sim, trunk_body: int, num_joints: int, control_dt: float,
                 ranges: LeggedRanges, rng: np.random.Generator, has_terrain: bool):
        """Give each env its own model and remember the values ranges are applied to."""
        self.sim, self.ranges, self.rng = sim, ranges, rng
        self.models = sim.private_models()
        m = sim.model
        self.trunk = int(trunk_body)
        self.has_terrain = bool(has_terrain)
        self._mass0 = float(m.body_mass[self.trunk])
        self._ipos0 = m.body_ipos[self.trunk].copy()
        free = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
        if not free:
            raise ValueError('LeggedDomain: the model has no free joint (a floating base)')
        self._base_dof = int(m.jnt_dofadr[free[0]])
        n = sim.num_envs
        self.friction = np.full(n, float(m.geom_friction[0, 0]))
        self.payload = np.zeros(n)
        self.com_shift = np.zeros((n, 3))
        self.strength = np.ones((n, num_joints))
        self.rough = np.zeros(n, dtype=bool)
        self.pushes = np.zeros(n, dtype=np.int64)
        self.push_every = 0
        if ranges.push_interval_s > 0 and ranges.push_velocity > 0:
            self.push_every = max(1, int(round(ranges.push_interval_s / control_dt)))

    def reset(self, i: int) -> None:
        """Draw env ``i``'s world for a new episode and write it into its model."""
        r, rng, model = self.ranges, self.rng, self.models[i]
        self.friction[i] = rng.uniform(*r.friction)
        self.payload[i] = rng.uniform(*r.payload_kg)
        shift = np.asarray(r.com_shift_m, float)
        self.com_shift[i] = rng.uniform(-shift, shift)
        self.strength[i] = rng.uniform(*r.motor_strength, self.strength.shape[1])
        self.rough[i] = self.has_terrain and rng.random() < r.rough_share
        self.pushes[i] = 0
        model.geom_friction[:, 0] = self.friction[i]
        model.body_mass[self.trunk] = self._mass0 + self.payload[i]
        model.body_ipos[self.trunk] = self._ipos0 + self.com_shift[i]
        if self.has_terrain:
            set_rough(model, bool(self.rough[i]))

    def push(self, episode_steps: np.ndarray) -> np.ndarray:
        """Push the envs whose episode step count hits the interval; return the mask."""
        if not self.push_every:
            return np.zeros(len(episode_steps), dtype=bool)
        due = (episode_steps > 0) & (episode_steps % self.push_every == 0)
        v = self.ranges.push_velocity
        qvel = self.sim.state_field('qvel')
        for i in np.flatnonzero(due):
            d = self._base_dof  # a free joint's first dofs: world-frame x, y velocity
            qvel[i, d:d + 2] += self.rng.uniform(-v, v, 2)
            self.pushes[i] += 1
        return due

    def episode_params(self, i: int) -> dict:
        """Return env ``i``'s drawn values, for the episode log."""
        return {'friction': round(float(self.friction[i]), 4),
                'payload_kg': round(float(self.payload[i]), 4),
                'com_shift_m': [round(float(v), 4) for v in self.com_shift[i]],
                'motor_strength_mean': round(float(self.strength[i].mean()), 4),
                'rough': bool(self.rough[i]), 'pushes': int(self.pushes[i])}
