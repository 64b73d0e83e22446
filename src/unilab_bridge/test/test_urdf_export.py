# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The URDF of a MuJoCo model: its forward kinematics must be MuJoCo's."""

import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest
from unilab_bridge.tasks import make_task
from unilab_bridge.urdf_export import urdf_from_model


def _rpy_matrix(r, p, y):
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _axis_angle(axis, angle):
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + np.sin(angle) * kx + (1 - np.cos(angle)) * kx @ kx


def urdf_fk(urdf: str, q: dict) -> dict:
    """Return {link: (R, p)} in the root link's frame (a URDF reader's forward kinematics)."""
    root = ET.fromstring(urdf)
    joints = {j.find('child').get('link'): j for j in root.iter('joint')}
    out = {}

    def pose(link):
        if link in out:
            return out[link]
        j = joints.get(link)
        if j is None:
            out[link] = (np.eye(3), np.zeros(3))
            return out[link]
        rp, pp = pose(j.find('parent').get('link'))
        o = j.find('origin')
        xyz = np.array([float(v) for v in o.get('xyz').split()])
        rot = _rpy_matrix(*[float(v) for v in o.get('rpy').split()])
        r, p = rp @ rot, rp @ xyz + pp
        kind, value = j.get('type'), q.get(j.get('name'), 0.0)
        axis = [float(v) for v in j.find('axis').get('xyz').split()] if kind != 'fixed' \
            else None
        if kind in ('revolute', 'continuous'):
            r = r @ _axis_angle(axis, value)
        elif kind == 'prismatic':
            p = p + r @ (np.asarray(axis) * value)
        out[link] = (r, p)
        return out[link]

    for link in root.iter('link'):
        pose(link.get('name'))
    return out


def _mujoco_sites(model, q: dict, root_body=None) -> dict:
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0
    for name, value in q.items():
        data.qpos[model.jnt_qposadr[model.joint(name).id]] = value
    mujoco.mj_kinematics(model, data)
    origin = np.zeros(3) if root_body is None else data.xpos[model.body(root_body).id]
    return {model.site(s).name: data.site_xpos[s] - origin for s in range(model.nsite)}


@pytest.mark.parametrize('task, root', [('arm6_reach', None), ('quad_walk', 'trunk')])
def test_sites_of_the_urdf_are_where_mujoco_puts_them(task, root):
    with make_task(task, 1) as t:
        model, names, limits = t.model, t.joint_names, t.joint_limits
        urdf = urdf_from_model(model, task, joint_limits=limits)
        rng = np.random.default_rng(0)
        for _ in range(5):
            q = {n: rng.uniform(limits[n]['min_position'], limits[n]['max_position'])
                 for n in names}
            links = urdf_fk(urdf, q)
            for site, pos in _mujoco_sites(model, q, root).items():
                if site in links:
                    np.testing.assert_allclose(links[site][1], pos, atol=1e-5)
        exported = {s for s in _mujoco_sites(model, {}, root) if s in links}
        assert exported == ({'ee_site', 'imu'} if task == 'arm6_reach' else {'imu', 'lidar'})


def test_joints_limits_and_names_for_robot_state_publisher():
    with make_task('arm6_reach', 1) as t:
        rename = {n: f'ur_{n}' for n in t.joint_names}
        limits = {rename[n]: v for n, v in t.joint_limits.items()}
        root = ET.fromstring(urdf_from_model(t.model, 'arm6', rename, limits))
    assert root.tag == 'robot' and root.get('name') == 'arm6'
    moving = {j.get('name'): j for j in root.iter('joint') if j.get('type') != 'fixed'}
    assert sorted(moving) == sorted(rename.values())
    elbow = moving['ur_elbow_joint']
    assert elbow.get('type') == 'revolute'
    lim = elbow.find('limit').attrib
    assert (float(lim['lower']), float(lim['upper'])) == (-2.6, 2.6)
    assert float(lim['effort']) == 150.0 and float(lim['velocity']) == 3.14
    # Every joint's parent and child are links, and the tree has exactly one root.
    links = {link.get('name') for link in root.iter('link')}
    children = {j.find('child').get('link') for j in root.iter('joint')}
    assert all(j.find('parent').get('link') in links for j in root.iter('joint'))
    assert links - children == {'base_link'}


MULTI = """
<mujoco>
  <worldbody>
    <body name="a" pos="0.1 0.2 0.3" quat="0.9238795 0 0.3826834 0">
      <joint name="h1" type="hinge" axis="0 0 1" pos="0.05 0 0" range="-1 1"/>
      <joint name="h2" type="hinge" axis="1 0 0" pos="0 0.04 0"/>
      <geom type="capsule" size="0.02" fromto="0 0 0 0.2 0 0"/>
      <body name="b" pos="0.2 0 0">
        <joint name="s" type="slide" axis="0 1 0" range="-0.1 0.1"/>
        <joint name="ball" type="ball"/>
        <geom type="box" size="0.02 0.02 0.02"/>
        <site name="tip" pos="0 0 0.1"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_several_joints_in_a_body_and_joint_anchors_are_exact():
    model = mujoco.MjModel.from_xml_string(MULTI)
    urdf = urdf_from_model(model, 'multi')
    root = ET.fromstring(urdf)
    types = {j.get('name'): j.get('type') for j in root.iter('joint')}
    assert types['h1'] == 'revolute' and types['h2'] == 'continuous'
    assert types['s'] == 'prismatic' and types['ball'] == 'fixed'
    assert 'ball joints exported as fixed: ball' in urdf
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = {'h1': rng.uniform(-1, 1), 'h2': rng.uniform(-3, 3), 's': rng.uniform(-0.1, 0.1)}
        np.testing.assert_allclose(urdf_fk(urdf, q)['tip'][1], _mujoco_sites(model, q)['tip'],
                                   atol=1e-5)
