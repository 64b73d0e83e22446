# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The robot from its URDF: joint order, forward kinematics, frame transforms (no ROS).

The URDF is the one ``/robot_description`` carries (the robot double's, or
robot_state_publisher's for a real robot). Forward kinematics is yourdfpy's
scene graph (the same library viser draws the robot with), so the frames sent
to Foxglove and the meshes drawn in the page agree. A joint state names its
joints: values are taken by name, missing joints keep their last value, and
non-finite values are dropped and counted.
"""

from __future__ import annotations

import io
import math

import numpy as np
import yourdfpy


class RobotModel:
    """A URDF's kinematic tree with the last joint values applied."""

    def __init__(self, urdf_text: str):
        try:
            self.urdf = yourdfpy.URDF.load(io.StringIO(urdf_text), load_meshes=False,
                                           build_collision_scene_graph=False)
        except Exception as exc:  # yourdfpy/lxml raise many kinds for a bad document
            raise ValueError(f'robot_description is not a usable URDF: {exc}') from exc
        self.joint_names = list(self.urdf.actuated_joint_names)
        self.base_link = self.urdf.base_link
        self.q = np.zeros(len(self.joint_names))
        self.dropped = 0  # non-finite joint values refused

    def set_joints(self, names, positions) -> np.ndarray:
        """Take ``positions`` by ``names`` (unknown names ignored); return the full vector."""
        index = {n: i for i, n in enumerate(self.joint_names)}
        for name, value in zip(names, positions):
            i = index.get(name)
            if i is None:
                continue
            if not math.isfinite(value):
                self.dropped += 1
                continue
            self.q[i] = float(value)
        self.urdf.update_cfg(self.q)
        return self.q.copy()

    def link_pose(self, link: str) -> np.ndarray:
        """Return the 4x4 pose of ``link`` in the base frame at the current joints."""
        return np.asarray(self.urdf.get_transform(link, self.base_link))

    def joint_transforms(self) -> list[tuple[str, str, np.ndarray]]:
        """
        Return ``(parent, child, T)`` for every joint: the child frame in its parent's.

        These are what robot_state_publisher would put on ``/tf`` (fixed joints too).
        """
        return [(j.parent, j.child, np.asarray(self.urdf.get_transform(j.child, j.parent)))
                for j in self.urdf.robot.joints]


def quaternion_xyzw(rotation: np.ndarray) -> tuple[float, float, float, float]:
    """Return the unit quaternion (x, y, z, w) of a 3x3 rotation matrix (Shepperd's method)."""
    r = np.asarray(rotation, dtype=float)
    trace = r[0, 0] + r[1, 1] + r[2, 2]
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = ((r[2, 1] - r[1, 2]) / s, (r[0, 2] - r[2, 0]) / s, (r[1, 0] - r[0, 1]) / s, s / 4)
    elif r[0, 0] > r[1, 1] and r[0, 0] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[0, 0] - r[1, 1] - r[2, 2])
        q = (s / 4, (r[0, 1] + r[1, 0]) / s, (r[0, 2] + r[2, 0]) / s, (r[2, 1] - r[1, 2]) / s)
    elif r[1, 1] > r[2, 2]:
        s = 2.0 * math.sqrt(1.0 + r[1, 1] - r[0, 0] - r[2, 2])
        q = ((r[0, 1] + r[1, 0]) / s, s / 4, (r[1, 2] + r[2, 1]) / s, (r[0, 2] - r[2, 0]) / s)
    else:
        s = 2.0 * math.sqrt(1.0 + r[2, 2] - r[0, 0] - r[1, 1])
        q = ((r[0, 2] + r[2, 0]) / s, (r[1, 2] + r[2, 1]) / s, s / 4, (r[1, 0] - r[0, 1]) / s)
    if q[3] < 0.0:  # one sign for each rotation
        q = tuple(-c for c in q)
    return tuple(float(c) for c in q)
