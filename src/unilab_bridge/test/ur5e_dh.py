# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The UR5e from the maker's data only: UR's DH table, its forward kinematics and a URDF.

Written from Universal Robots' published DH parameters (not from any model of ours), so a
test that compares a model with these fails when the model's joint zeros, axes or signs
are not UR's. Frames: UR's DH base frame is ``base``; ROS's ``base_link`` is ``base``
turned by pi about z (ur_description), and both functions here answer in ``base_link``.
"""

import numpy as np

JOINTS = ('shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
          'wrist_2_joint', 'wrist_3_joint')
# UR5e DH (m, rad), as Universal Robots publish them.
D = (0.1625, 0.0, 0.0, 0.1333, 0.0997, 0.0996)
A = (0.0, -0.425, -0.3922, 0.0, 0.0, 0.0)
ALPHA = (np.pi / 2, 0.0, 0.0, np.pi / 2, -np.pi / 2, 0.0)
HOME = (0.0, -1.57, 1.57, -1.57, -1.57, 0.0)
# base_link -> base: a half turn about z.
BASE_LINK_FROM_BASE = np.diag([-1.0, -1.0, 1.0, 1.0])


def dh_flange(q) -> np.ndarray:
    """Return the 4x4 pose of the flange (tool0) in base_link for joint positions ``q``."""
    t = BASE_LINK_FROM_BASE.copy()
    for theta, d, a, alpha in zip(q, D, A, ALPHA):
        ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
        # Standard DH: Rz(theta) Tz(d) Tx(a) Rx(alpha)
        t = t @ np.array([[ct, -st * ca, st * sa, a * ct],
                          [st, ct * ca, -ct * sa, a * st],
                          [0.0, sa, ca, d],
                          [0.0, 0.0, 0.0, 1.0]])
    return t


def ur5e_urdf() -> str:
    """
    Return a kinematic URDF of the UR5e built from the DH table as ur_description does.

    Joint i's origin is Tx(a_(i-1)) Rx(alpha_(i-1)) Tz(d_i) from link i-1 and it turns
    about its z; ``base_link_inertia`` is base_link turned by pi (UR's ``base``), and
    ``tool0`` is the flange.
    """
    links = ('base_link_inertia', 'shoulder_link', 'upper_arm_link', 'forearm_link',
             'wrist_1_link', 'wrist_2_link', 'wrist_3_link')
    parts = ['<robot name="ur5e">', '<link name="base_link"/>', '<link name="tool0"/>']
    parts += [f'<link name="{name}"/>' for name in links]
    parts.append('<joint name="base_link-base_link_inertia" type="fixed"><parent '
                 'link="base_link"/><child link="base_link_inertia"/>'
                 f'<origin xyz="0 0 0" rpy="0 0 {np.pi!r}"/></joint>')
    for i, joint in enumerate(JOINTS):
        a, alpha = (A[i - 1], ALPHA[i - 1]) if i else (0.0, 0.0)
        xyz = [float(v) for v in (a, -np.sin(alpha) * D[i], np.cos(alpha) * D[i])]
        parts.append(
            f'<joint name="{joint}" type="revolute"><parent link="{links[i]}"/>'
            f'<child link="{links[i + 1]}"/><origin xyz="{xyz[0]!r} {xyz[1]!r} {xyz[2]!r}" '
            f'rpy="{alpha!r} 0 0"/><axis xyz="0 0 1"/>'
            '<limit lower="-6.28" upper="6.28" effort="150" velocity="3.14"/></joint>')
    parts.append('<joint name="wrist_3-tool0" type="fixed"><parent link="wrist_3_link"/>'
                 '<child link="tool0"/></joint>')
    parts.append('</robot>')
    return '\n'.join(parts)
