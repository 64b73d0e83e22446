# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Rough ground for legged tasks: a MuJoCo height field of random steps and roughness.

legged_gym trains on terrains of random steps and noise; here one height field is added to
a robot model's world (``mujoco.MjSpec``, the robot's MJCF file untouched): square blocks
of ``block_m`` whose heights are drawn in 0 .. ``step_m`` (small steps), plus uniform
per-cell roughness of 0 .. ``roughness_m``. Its lowest point is at z = 0, the flat floor's
height, so an env whose model keeps the height field out of collisions (``conaffinity`` 0,
``set_rough``) walks on the flat floor instead: one compiled model serves both kinds of
ground, and each env's private model picks one per episode.
"""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np

TERRAIN = 'terrain'


@dataclasses.dataclass(frozen=True)
class RoughTerrain:
    """The height field's extent and relief (m); the layout is drawn from ``seed``."""

    half_size_m: float = 4.0
    cell_m: float = 0.05
    block_m: float = 0.4
    step_m: float = 0.04
    roughness_m: float = 0.01
    seed: int = 0

    def heights(self) -> np.ndarray:
        """Return every cell's height in m, [rows, cols], 0 at the lowest point."""
        cells = int(round(2 * self.half_size_m / self.cell_m)) + 1
        rng = np.random.default_rng(self.seed)
        per_block = max(1, int(round(self.block_m / self.cell_m)))
        blocks = -(-cells // per_block)
        steps = rng.uniform(0.0, self.step_m, (blocks, blocks))
        h = np.kron(steps, np.ones((per_block, per_block)))[:cells, :cells]
        h = h + rng.uniform(0.0, self.roughness_m, h.shape)
        return h - h.min()

    def add_to(self, spec: mujoco.MjSpec) -> None:
        """Add the height field and its geom (out of collisions until ``set_rough``)."""
        h = self.heights()
        top = float(h.max()) or 1e-6
        field = spec.add_hfield()
        field.name = TERRAIN
        field.nrow, field.ncol = h.shape
        # size: x and y half extents, the elevation at data 1, the base's depth below z = 0.
        field.size = [self.half_size_m, self.half_size_m, top, 0.1]
        field.userdata = (h / top).ravel().tolist()
        geom = spec.worldbody.add_geom()
        geom.name = TERRAIN
        geom.type = mujoco.mjtGeom.mjGEOM_HFIELD
        geom.hfieldname = TERRAIN
        geom.contype, geom.conaffinity = 0, 0
        geom.rgba = [0.35, 0.33, 0.3, 1.0]


def model_with_terrain(xml_path, terrain: RoughTerrain) -> mujoco.MjModel:
    """Compile the model at ``xml_path`` with ``terrain`` added to its world."""
    spec = mujoco.MjSpec.from_file(str(xml_path))
    terrain.add_to(spec)
    return spec.compile()


def set_rough(model: mujoco.MjModel, rough: bool) -> None:
    """Make the height field collide (rough ground) or not (the flat floor)."""
    model.geom_conaffinity[model.geom(TERRAIN).id] = 1 if rough else 0


def height_at(model: mujoco.MjModel, x: float, y: float, radius: float = 0.3) -> float:
    """Return the height field's highest point within ``radius`` of (x, y) (m)."""
    hid = model.hfield(TERRAIN).id
    rows, cols = int(model.hfield_nrow[hid]), int(model.hfield_ncol[hid])
    hx, hy, top = (float(v) for v in model.hfield_size[hid][:3])
    data = model.hfield_data[model.hfield_adr[hid]:model.hfield_adr[hid] + rows * cols]
    h = data.reshape(rows, cols) * top
    # Row r is at y = -hy + 2 hy r / (rows - 1); column c at x likewise (MuJoCo's layout).
    ys = np.linspace(-hy, hy, rows)[:, None]
    xs = np.linspace(-hx, hx, cols)[None, :]
    near = (xs - x) ** 2 + (ys - y) ** 2 <= radius ** 2
    return float(h[near].max()) if near.any() else 0.0
