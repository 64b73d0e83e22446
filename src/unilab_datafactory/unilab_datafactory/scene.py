# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Rendered frames of the arm with exact boxes: the detector's ground truth.

The scene is the bridge's own ``arm6`` model seen through its ``front`` camera (the camera
``unilab record`` captures on ``/camera/image_raw``), so a detector trained here labels
those frames. Each class is a group of bodies; its box is the projection of the eight
corners of every geom's bounding box (MuJoCo's ``geom_aabb``, in the geom frame) through
the pinhole camera, their union clipped to the image. Occlusion is not modelled: a part
hidden behind another keeps its box (the label says where it is, not what is seen).

Variants: ``sim`` (training: light and colours jittered a little) and ``real`` (held out:
other light levels, other floor/wall/arm colours, sensor noise), as ``bench sim2real``
holds its dynamics out.
"""

from __future__ import annotations

import math
import pathlib
import types

import mujoco
import numpy as np

#: Detector classes, in label order, and the model bodies each one covers.
CLASSES = ('upper_arm', 'forearm', 'wrist')
CLASS_BODIES = {
    'upper_arm': ('upper_arm_link',),
    'forearm': ('forearm_link',),
    'wrist': ('wrist_1_link', 'wrist_2_link', 'wrist_3_link'),
}
DEFAULT_SIZE = (96, 128)  # (height, width)
VARIANTS = ('sim', 'real')
#: Joint ranges sampled for renders (rad): the arm stays mostly in front of the camera.
POSE_LOW = np.array([-math.pi, -1.2, -2.2, -math.pi, -math.pi, -math.pi])
POSE_HIGH = -POSE_LOW
#: A box smaller than this (pixels, either side) after clipping counts as out of view.
MIN_SIDE_PX = 2.0

# The eight corners of a unit box, [8, 3].
_CORNERS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)


def arm_model_path() -> pathlib.Path:
    """Return the bridge's arm6 MJCF (the scene the bridge's camera shows)."""
    import unilab_bridge
    return pathlib.Path(unilab_bridge.__file__).parent / 'assets' / 'arm6.xml'


def class_geoms(model) -> list[np.ndarray]:
    """Return, per class in ``CLASSES`` order, the geom ids of its bodies."""
    out = []
    for name in CLASSES:
        bodies = [model.body(b).id for b in CLASS_BODIES[name]]
        out.append(np.flatnonzero(np.isin(model.geom_bodyid, bodies)))
    return out


def project_points(points, cam_pos, cam_mat, fovy_deg, size):
    """
    Project world points [P, 3] to pixels [P, 2] (u right, v down) and depth [P].

    MuJoCo cameras look along their -z axis with +y up; ``cam_mat`` is the camera's
    rotation (columns: camera axes in the world). Pinhole: f = (H / 2) / tan(fovy / 2),
    u = W/2 + f x / d, v = H/2 - f y / d with depth d = -z.
    """
    h, w = size
    rel = (np.asarray(points, float) - cam_pos) @ np.asarray(cam_mat).reshape(3, 3)
    depth = -rel[:, 2]
    f = 0.5 * h / math.tan(math.radians(fovy_deg) / 2.0)
    safe = np.where(depth > 1e-6, depth, np.nan)
    uv = np.stack([0.5 * w + f * rel[:, 0] / safe, 0.5 * h - f * rel[:, 1] / safe], axis=1)
    return uv, depth


def ground_truth_boxes(model, data, cam_id, size, groups=None):
    """
    Return (boxes [K, 4] xyxy pixels, present [K] bool) for the classes in the image.

    A class is absent when any corner lies behind the camera or its clipped box is under
    ``MIN_SIDE_PX`` on a side; an absent class's box is zeros.
    """
    groups = class_geoms(model) if groups is None else groups
    h, w = size
    boxes = np.zeros((len(groups), 4), np.float32)
    present = np.zeros(len(groups), bool)
    cam_pos, cam_mat = data.cam_xpos[cam_id], data.cam_xmat[cam_id]
    fovy = float(model.cam_fovy[cam_id])
    for k, geoms in enumerate(groups):
        aabb = model.geom_aabb[geoms]  # [G, 6]: centre (3), half sizes (3), geom frame
        local = aabb[:, None, :3] + aabb[:, None, 3:] * _CORNERS[None]  # [G, 8, 3]
        rot = data.geom_xmat[geoms].reshape(-1, 3, 3)
        world = np.einsum('gij,gcj->gci', rot, local) + data.geom_xpos[geoms][:, None]
        uv, depth = project_points(world.reshape(-1, 3), cam_pos, cam_mat, fovy, size)
        if (depth <= 1e-6).any():
            continue
        x0, y0 = np.clip(uv.min(axis=0), 0, [w, h])
        x1, y1 = np.clip(uv.max(axis=0), 0, [w, h])
        if x1 - x0 >= MIN_SIDE_PX and y1 - y0 >= MIN_SIDE_PX:
            boxes[k] = x0, y0, x1, y1
            present[k] = True
    return boxes, present


class ArmScene:
    """The arm in random poses, rendered by its front camera with exact boxes."""

    def __init__(self, size=DEFAULT_SIZE, variant='sim', seed=0, shadows=False):
        """
        Load the model and open an offscreen camera (raises where EGL is missing).

        ``shadows``: render shadows as the bridge's camera does (slower on a CPU).
        """
        if variant not in VARIANTS:
            raise ValueError(f'variant `{variant}`: expected one of {", ".join(VARIANTS)}')
        from unilab_bridge.camera import EglCamera
        self.model = mujoco.MjModel.from_xml_path(str(arm_model_path()))
        self.data = mujoco.MjData(self.model)
        self.size = tuple(int(v) for v in size)
        self.variant = variant
        self.rng = np.random.default_rng(seed)
        self.groups = class_geoms(self.model)
        self._rgba = self.model.geom_rgba.copy()
        self._light = self.model.light_diffuse.copy()
        sim = types.SimpleNamespace(model=self.model, models=[self.model], data=[self.data])
        self.camera = EglCamera(sim, camera='front', size=self.size, shadows=shadows)
        self.cam_id = self.camera.cam_id

    def _randomise_look(self):
        m, rng = self.model, self.rng
        m.geom_rgba[:] = self._rgba
        if self.variant == 'sim':
            m.light_diffuse[:] = self._light * rng.uniform(0.8, 1.2)
            m.geom_rgba[:, :3] = np.clip(self._rgba[:, :3] + rng.normal(0, 0.03, (m.ngeom, 3)),
                                         0, 1)
        else:  # held out: dimmer or brighter light, other colours
            m.light_diffuse[:] = self._light * rng.choice([rng.uniform(0.45, 0.65),
                                                           rng.uniform(1.3, 1.5)])
            m.geom_rgba[:, :3] = np.clip(self._rgba[:, :3] + rng.normal(0, 0.12, (m.ngeom, 3)),
                                         0, 1)

    def sample(self) -> dict:
        """Return one frame: image [H, W, 3] uint8, boxes [K, 4], present [K], qpos."""
        self.data.qpos[:6] = self.rng.uniform(POSE_LOW, POSE_HIGH)
        mujoco.mj_forward(self.model, self.data)
        self._randomise_look()
        image = self.camera.render(0)
        if self.variant == 'real':  # sensor noise the training renders never had
            noise = self.rng.normal(0.0, 6.0, image.shape)
            image = np.clip(image + noise, 0, 255).astype(np.uint8)
        boxes, present = ground_truth_boxes(self.model, self.data, self.cam_id, self.size,
                                            self.groups)
        return {'image': image, 'boxes': boxes, 'present': present,
                'qpos': self.data.qpos[:6].copy()}

    def close(self):
        """Free the rendering context."""
        self.camera.close()
