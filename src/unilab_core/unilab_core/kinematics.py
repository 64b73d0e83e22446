# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Forward kinematics of named joints to a site (or body), on a MuJoCo model of the robot.

On a robot the simulator's free task inputs are gone: the tool position of a
reach task comes from the measured joints through the robot's model, as an
operator's tools compute it. ``mujoco.mj_kinematics`` on a private ``MjData``
(positions only, no dynamics); joints of the model that are not named stay at
``qpos0``. mujoco is imported when an instance is made.

The convention check (``compare_with_urdf``) asks whether a model means by a
joint position what the robot means: same zeros, axes and signs. It computes
the frames both the MJCF (bodies, sites) and the robot's URDF (links) name, at
a set of joint poses, and reports the largest distance between them; a model
with another joint zero (arm6 against a UR5e: the shoulder and elbow zeros
differ by pi/2) is off by tens of centimetres, a faithful one by float noise.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import numpy as np

#: A model and a URDF agree when every common frame is this close at every pose (m).
CONVENTION_TOLERANCE_M = 1e-3


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


def _rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF ``rpy``: fixed-axis roll about x, then pitch about y, then yaw about z."""
    cr, sr, cp, sp, cy, sy = (np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch),
                              np.cos(yaw), np.sin(yaw))
    # R = Rz(yaw) Ry(pitch) Rx(roll)
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation matrix of ``angle`` about the unit vector ``axis`` (Rodrigues)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]],
                  [-axis[1], axis[0], 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def _floats(text: str | None, default: str) -> np.ndarray:
    return np.array([float(x) for x in (text or default).split()])


@dataclasses.dataclass(frozen=True)
class _UrdfJoint:
    name: str
    kind: str
    parent: str
    child: str
    xyz: np.ndarray
    rot: np.ndarray
    axis: np.ndarray


class UrdfKinematics:
    """Link poses of a URDF (``<joint>`` origins, axes and types) for named joint positions."""

    def __init__(self, urdf_text: str):
        """Parse ``urdf_text``; raise ValueError if it is not a URDF with one root link."""
        try:
            root = ET.fromstring(urdf_text)
        except ET.ParseError as exc:
            raise ValueError(f'robot description is not XML: {exc}') from None
        if root.tag != 'robot':
            raise ValueError(f'robot description: root element <{root.tag}>, expected <robot>')
        self.links = [e.get('name') for e in root.findall('link')]
        self.joints: dict[str, _UrdfJoint] = {}  # by child link
        for e in root.findall('joint'):
            origin = e.find('origin')
            axis = e.find('axis')
            a = _floats(None if axis is None else axis.get('xyz'), '1 0 0')
            self.joints[e.find('child').get('link')] = _UrdfJoint(
                e.get('name'), e.get('type'), e.find('parent').get('link'),
                e.find('child').get('link'),
                _floats(None if origin is None else origin.get('xyz'), '0 0 0'),
                _rpy_matrix(*_floats(None if origin is None else origin.get('rpy'), '0 0 0')),
                a / np.linalg.norm(a))
        roots = [name for name in self.links if name not in self.joints]
        if len(roots) != 1:
            raise ValueError(f'robot description: {len(roots)} root links {roots[:4]}, '
                             'expected one')
        self.root = roots[0]
        self.joint_names = [j.name for j in self.joints.values() if j.kind != 'fixed']

    def poses(self, q: dict[str, float]) -> dict[str, np.ndarray]:
        """Return every link's 4x4 pose in the root link's frame; absent joints are at 0."""
        out = {self.root: np.eye(4)}

        def pose(link):
            if link not in out:
                j = self.joints[link]
                local = np.eye(4)
                local[:3, :3], local[:3, 3] = j.rot, j.xyz
                motion = np.eye(4)
                value = float(q.get(j.name, 0.0))
                if j.kind in ('revolute', 'continuous'):
                    motion[:3, :3] = _axis_angle(j.axis, value)
                elif j.kind == 'prismatic':
                    motion[:3, 3] = j.axis * value
                out[link] = pose(j.parent) @ local @ motion
            return out[link]
        for link in self.links:
            pose(link)
        return out


class ModelFrames:
    """World positions of an MJCF's bodies and sites for named joint positions."""

    def __init__(self, model_file: str, joint_names):
        """Load ``model_file``; raise ValueError naming a joint it lacks."""
        import mujoco
        self._mj = mujoco
        self.model = mujoco.MjModel.from_xml_path(str(model_file))
        self.data = mujoco.MjData(self.model)
        ids = [mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, j) for j in joint_names]
        missing = [j for j, i in zip(joint_names, ids) if i < 0]
        if missing:
            raise ValueError(f'{model_file}: no joint(s) {missing}')
        self._adr = self.model.jnt_qposadr[ids]
        #: [J, 2] joint ranges of the named joints (+-inf where unlimited)
        self.ranges = np.where(self.model.jnt_limited[ids][:, None] > 0,
                               self.model.jnt_range[ids], [-np.inf, np.inf])
        bodies = {self.model.body(b).name for b in range(1, self.model.nbody)}
        sites = {self.model.site(k).name for k in range(self.model.nsite)}
        self.names = {n for n in bodies | sites if n}
        self._bodies = bodies

    def positions(self, frames, q: np.ndarray) -> np.ndarray:
        """Return ``[N, F, 3]`` positions of ``frames`` (a body wins over a site) at ``[N, J]``."""
        q = np.atleast_2d(np.asarray(q, np.float64))
        out = np.empty((q.shape[0], len(frames), 3))
        d = self.data
        for i, row in enumerate(q):
            d.qpos[:] = self.model.qpos0
            d.qpos[self._adr] = row
            self._mj.mj_kinematics(self.model, d)
            for f, name in enumerate(frames):
                out[i, f] = d.body(name).xpos if name in self._bodies else d.site(name).xpos
        return out


@dataclasses.dataclass(frozen=True)
class ConventionCheck:
    """The result of comparing a model with a URDF: the worst frame, where and how far."""

    frames: tuple[str, ...]   # the frames both name
    max_error_m: float
    worst_frame: str
    worst_pose: tuple[float, ...]
    tolerance_m: float

    @property
    def ok(self) -> bool:
        """Return whether every frame agreed within the tolerance at every pose."""
        return self.max_error_m <= self.tolerance_m

    def describe(self) -> str:
        """Return a one-line verdict naming the worst frame and pose."""
        pose = ', '.join(f'{x:.2f}' for x in self.worst_pose)
        verdict = 'agree' if self.ok else 'DISAGREE'
        return (f'model and URDF {verdict}: {len(self.frames)} common frames, worst '
                f'{self.worst_frame} off by {self.max_error_m * 1000:.1f} mm at q = ({pose}) '
                f'(tolerance {self.tolerance_m * 1000:g} mm)')


def convention_poses(ranges: np.ndarray, count: int = 20, seed: int = 0) -> np.ndarray:
    """Return ``[count, J]`` poses: zero (clipped into range), then uniform in range and +-pi."""
    ranges = np.asarray(ranges, float)
    low, high = np.maximum(ranges[:, 0], -np.pi), np.minimum(ranges[:, 1], np.pi)
    rng = np.random.default_rng(seed)
    return np.vstack([np.clip(0.0, low, high)[None, :],
                      rng.uniform(low, high, size=(count - 1, low.size))])


def compare_with_urdf(model_file: str, urdf_text: str, joint_names,
                      poses: np.ndarray | int = 20, rename: dict[str, str] | None = None,
                      tolerance_m: float = CONVENTION_TOLERANCE_M) -> ConventionCheck:
    """
    Compare the frames ``model_file`` and the URDF both name, at joint ``poses``.

    ``joint_names`` are the URDF's (the robot's) names in the poses' column order, and the
    model's too unless ``rename`` maps a robot name to the model's. ``poses`` is ``[N, J]``
    or a count of poses drawn by ``convention_poses`` from the model's joint ranges. Frames
    are matched by name: URDF links against MJCF bodies and sites (the model's world is
    the URDF's root link). Raises ValueError when no frame is common or a joint is missing.
    """
    urdf = UrdfKinematics(urdf_text)
    names = list(joint_names)
    missing = [j for j in names if j not in urdf.joint_names]
    if missing:
        raise ValueError(f'robot description has no joint(s) {missing}')
    model = ModelFrames(model_file, [(rename or {}).get(j, j) for j in names])
    frames = sorted((set(urdf.links) - {urdf.root}) & model.names)
    if not frames:
        raise ValueError(f'{model_file} and the robot description name no common frame '
                         f'(URDF links: {urdf.links[:8]})')
    if isinstance(poses, (int, np.integer)):
        poses = convention_poses(model.ranges, int(poses))
    poses = np.atleast_2d(np.asarray(poses, float))
    got = model.positions(frames, poses)
    err = np.empty((poses.shape[0], len(frames)))
    for i, row in enumerate(poses):
        links = urdf.poses(dict(zip(names, row)))
        want = np.array([links[f][:3, 3] for f in frames])
        err[i] = np.linalg.norm(got[i] - want, axis=1)
    i, f = np.unravel_index(int(np.argmax(err)), err.shape)
    return ConventionCheck(tuple(frames), float(err[i, f]), frames[f],
                           tuple(float(x) for x in poses[i]), float(tolerance_m))
