# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A URDF of a MuJoCo model's kinematic tree: what ``robot_state_publisher`` needs.

The robot double publishes it on ``/robot_description`` so RViz or Foxglove show the
simulated robot from its ``/joint_states``. Mapping (URDF: wiki.ros.org/urdf/XML):

- each body is a link; the world body is ``base_link`` (its own geoms are scenery
  and left out), or, when the robot hangs from the world on one free joint (a legged
  base), that body is the root link and the world is not in the tree; mocap bodies
  and their subtrees are left out;
- a body's joints become URDF joints to its parent: hinge -> ``revolute``
  (``continuous`` without a range), slide -> ``prismatic``, a free joint below the
  root -> ``floating``, none -> ``fixed``; a ball joint (no URDF equivalent) becomes
  ``fixed`` and is listed in a comment. A URDF joint's origin is where its axis
  passes, so a link's frame sits at its (last) joint's anchor (``jnt_pos``), and
  several joints in one body are chained through intermediate links
  ``<body>__<joint>``;
- ``<limit>``: range from ``jnt_range``, effort and velocity from ``joint_limits``
  (ros2_control keys, e.g. a task's ``joint_limits``; 0 where unknown);
- sites become fixed child links of the same name (tool, IMU and lidar frames);
- primitive geoms become ``<visual>`` shapes (a capsule as a cylinder of its
  segment's length, an ellipsoid as a sphere of its largest radius); meshes, planes
  and height fields are left out.

``rename`` maps the model's joint names to the robot's (a profile's ``joint_names``).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import mujoco
import numpy as np

ROOT_LINK = 'base_link'

_G = mujoco.mjtGeom
_J = mujoco.mjtJoint


def _fmt(values) -> str:
    return ' '.join(f'{float(v) + 0.0:.6g}' for v in values)  # + 0.0: no '-0'


def quat_to_rpy(quat) -> tuple[float, float, float]:
    """Return URDF roll-pitch-yaw (R = Rz(yaw) Ry(pitch) Rx(roll)) of a (w, x, y, z) quat."""
    m = np.zeros(9)
    mujoco.mju_quat2Mat(m, np.asarray(quat, np.float64))
    r = m.reshape(3, 3)
    roll = math.atan2(r[2, 1], r[2, 2])
    pitch = math.atan2(-r[2, 0], math.hypot(r[0, 0], r[1, 0]))
    yaw = math.atan2(r[1, 0], r[0, 0])
    return roll, pitch, yaw


def _origin(parent: ET.Element, xyz, quat=None) -> None:
    rpy = (0.0, 0.0, 0.0) if quat is None else quat_to_rpy(quat)
    ET.SubElement(parent, 'origin', xyz=_fmt(xyz), rpy=_fmt(rpy))


def _rotate(quat, v) -> np.ndarray:
    out = np.zeros(3)
    mujoco.mju_rotVecQuat(out, np.asarray(v, np.float64), np.asarray(quat, np.float64))
    return out


def _shape(model, g) -> ET.Element | None:
    kind, size = int(model.geom_type[g]), model.geom_size[g]
    geometry = ET.Element('geometry')
    if kind == _G.mjGEOM_BOX:
        ET.SubElement(geometry, 'box', size=_fmt(2 * size))
    elif kind == _G.mjGEOM_SPHERE:
        ET.SubElement(geometry, 'sphere', radius=_fmt(size[:1]))
    elif kind == _G.mjGEOM_ELLIPSOID:
        ET.SubElement(geometry, 'sphere', radius=_fmt([size.max()]))
    elif kind in (_G.mjGEOM_CYLINDER, _G.mjGEOM_CAPSULE):
        ET.SubElement(geometry, 'cylinder', radius=_fmt(size[:1]), length=_fmt([2 * size[1]]))
    else:
        return None
    return geometry


def _subtree(model, roots) -> list[int]:
    """Return the bodies below ``roots`` (inclusive), parents before children."""
    keep = set(roots)
    for b in range(1, model.nbody):  # MuJoCo numbers parents before children
        if int(model.body_parentid[b]) in keep:
            keep.add(b)
    return sorted(keep)


def urdf_from_model(model, name: str = '', rename: dict | None = None,
                    joint_limits: dict | None = None) -> str:
    """Return the URDF text of ``model`` (an ``mujoco.MjModel``)."""
    rename = dict(rename or {})
    limits = dict(joint_limits or {})
    robot = ET.Element('robot', name=name or 'robot')
    children = [b for b in range(1, model.nbody) if int(model.body_parentid[b]) == 0
                and int(model.body_mocapid[b]) < 0]
    free_roots = [b for b in children if int(model.body_jntnum[b]) == 1 and
                  int(model.jnt_type[model.body_jntadr[b]]) == _J.mjJNT_FREE]
    floating_base = len(free_roots) == 1 and len(children) == 1
    link_of = {}  # body -> URDF link name
    shift = {}  # body -> its link frame's position in the body frame (the joint anchor)
    if floating_base:
        root = free_roots[0]
        link_of[root], shift[root] = model.body(root).name, np.zeros(3)
        bodies = _subtree(model, [root])
    else:
        link_of[0], shift[0] = ROOT_LINK, np.zeros(3)
        ET.SubElement(robot, 'link', name=ROOT_LINK)
        bodies = [0] + _subtree(model, children)
    skipped = []
    for b in bodies:
        if b not in link_of:
            _add_body_joints(robot, model, b, link_of, shift, rename, limits, skipped)
        if b != 0:
            _add_link_contents(robot, model, b, link_of[b], shift[b])
    if skipped:
        robot.insert(0, ET.Comment(f' ball joints exported as fixed: {", ".join(skipped)} '))
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding='unicode') + '\n'


def _add_body_joints(robot, model, b, link_of, shift, rename, limits, skipped) -> None:
    """Add body ``b``'s link (via intermediate links for several joints) and joints."""
    body = model.body(b)
    parent = int(model.body_parentid[b])
    adr, num = int(model.body_jntadr[b]), int(model.body_jntnum[b])
    joints = list(range(adr, adr + num)) if num > 0 else [None]
    anchors = [model.jnt_pos[j].copy() if j is not None else np.zeros(3) for j in joints]
    # The first joint's origin: body pose in the parent's link frame, at the anchor.
    xyz = model.body_pos[b] + _rotate(model.body_quat[b], anchors[0]) - shift[parent]
    quat = model.body_quat[b]
    prev = link_of[parent]
    for k, j in enumerate(joints):
        last = k == len(joints) - 1
        link = body.name if last else f'{body.name}__{model.joint(j).name}'
        if not last:
            ET.SubElement(robot, 'link', name=link)
        jname = rename.get(model.joint(j).name, model.joint(j).name) if j is not None \
            else f'{body.name}_fixed'
        el = ET.SubElement(robot, 'joint', name=jname, type=_joint_type(model, j, skipped))
        _origin(el, xyz, quat)
        ET.SubElement(el, 'parent', link=prev)
        ET.SubElement(el, 'child', link=link)
        if el.get('type') in ('revolute', 'continuous', 'prismatic'):
            ET.SubElement(el, 'axis', xyz=_fmt(model.jnt_axis[j]))
            lim = limits.get(jname, {})
            attrs = {'effort': _fmt([lim.get('max_effort', 0.0)]),
                     'velocity': _fmt([lim.get('max_velocity', 0.0)])}
            if el.get('type') != 'continuous':
                lo, hi = model.jnt_range[j]
                attrs.update(lower=_fmt([lo]), upper=_fmt([hi]))
            ET.SubElement(el, 'limit', **attrs)
        if not last:
            # The next joint's anchor relative to this one (same orientation: one body).
            xyz, quat = anchors[k + 1] - anchors[k], None
        prev = link
    link_of[b], shift[b] = body.name, anchors[-1]


def _joint_type(model, j, skipped) -> str:
    if j is None:
        return 'fixed'
    kind = int(model.jnt_type[j])
    if kind == _J.mjJNT_HINGE:
        return 'revolute' if model.jnt_limited[j] else 'continuous'
    if kind == _J.mjJNT_SLIDE:
        return 'prismatic'
    if kind == _J.mjJNT_FREE:
        return 'floating'
    skipped.append(model.joint(j).name)
    return 'fixed'


def _add_link_contents(robot, model, b, link_name, offset) -> None:
    """Add body ``b``'s link with its geoms as visuals, and its sites as fixed links."""
    link = ET.SubElement(robot, 'link', name=link_name)
    for g in np.flatnonzero(model.geom_bodyid == b):
        geometry = _shape(model, g)
        if geometry is None or model.geom_rgba[g][3] <= 0:
            continue
        visual = ET.SubElement(link, 'visual')
        _origin(visual, model.geom_pos[g] - offset, model.geom_quat[g])
        visual.append(geometry)
        material = ET.SubElement(visual, 'material', name=f'geom{g}')
        ET.SubElement(material, 'color', rgba=_fmt(model.geom_rgba[g]))
    for s in np.flatnonzero(model.site_bodyid == b):
        site = model.site(s).name
        if not site:
            continue
        ET.SubElement(robot, 'link', name=site)
        el = ET.SubElement(robot, 'joint', name=f'{site}_fixed', type='fixed')
        _origin(el, model.site_pos[s] - offset, model.site_quat[s])
        ET.SubElement(el, 'parent', link=link_name)
        ET.SubElement(el, 'child', link=site)


def add_ros2_control(urdf: str, name: str, joints, command_interface: str,
                     joint_params: dict | None = None, plugin: str = 'unilab/RobotDouble') -> str:
    """
    Return ``urdf`` with a ``<ros2_control>`` block: how its driver exposes the joints.

    As ros2_control's URDF tag (control.ros.org, "ros2_control tag"): one ``<joint>`` per
    joint in ``joints`` (the driver's order) with its ``<command_interface>``, the state
    interfaces position, velocity and effort, and ``<param name=...>`` per entry of
    ``joint_params`` (e.g. the gains of a driver that runs the PD itself: kp, kd).
    """
    robot = ET.fromstring(urdf)
    block = ET.SubElement(robot, 'ros2_control', name=name, type='system')
    ET.SubElement(ET.SubElement(block, 'hardware'), 'plugin').text = plugin
    for joint in joints:
        el = ET.SubElement(block, 'joint', name=joint)
        ET.SubElement(el, 'command_interface', name=command_interface)
        for state in ('position', 'velocity', 'effort'):
            ET.SubElement(el, 'state_interface', name=state)
        for key, value in (joint_params or {}).items():
            ET.SubElement(el, 'param', name=key).text = _fmt([value])
    ET.indent(robot)
    return '<?xml version="1.0"?>\n' + ET.tostring(robot, encoding='unicode') + '\n'
