# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Forward kinematics and frame transforms of a URDF, against poses computed by hand."""

import math

import numpy as np
import pytest

from unilab_view.model import quaternion_xyzw, RobotModel

# base -> (z revolute, 0.1 up) -> link1 -> (y revolute, 0.5 up) -> link2 -> (0.3 along x) -> tool
URDF = """<robot name="two">
  <link name="base_link"/><link name="link1"/><link name="link2"/><link name="tool"/>
  <joint name="yaw" type="revolute"><parent link="base_link"/><child link="link1"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="pitch" type="revolute"><parent link="link1"/><child link="link2"/>
    <origin xyz="0 0 0.5"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="tool_joint" type="fixed"><parent link="link2"/><child link="tool"/>
    <origin xyz="0.3 0 0"/></joint>
</robot>"""


def tool(q_yaw, q_pitch):
    model = RobotModel(URDF)
    model.set_joints(['yaw', 'pitch'], [q_yaw, q_pitch])
    return model.link_pose('tool')[:3, 3]


def test_joint_order_and_base():
    model = RobotModel(URDF)
    assert model.joint_names == ['yaw', 'pitch']
    assert model.base_link == 'base_link'


@pytest.mark.parametrize('q, expected', [
    ((0.0, 0.0), (0.3, 0.0, 0.6)),            # straight: 0.1 + 0.5 up, 0.3 out
    ((math.pi / 2, 0.0), (0.0, 0.3, 0.6)),    # yaw a quarter turn: x -> y
    ((0.0, math.pi / 2), (0.0, 0.0, 0.3)),    # pitch a quarter turn about y: x -> -z
])
def test_tool_position_matches_hand_computed(q, expected):
    np.testing.assert_allclose(tool(*q), expected, atol=1e-9)


def test_joints_by_name_and_non_finite_dropped():
    model = RobotModel(URDF)
    q = model.set_joints(['pitch', 'unknown', 'yaw'], [0.25, 9.0, -0.5])
    np.testing.assert_allclose(q, [-0.5, 0.25])
    q = model.set_joints(['yaw', 'pitch'], [float('nan'), 0.75])
    np.testing.assert_allclose(q, [-0.5, 0.75])  # the NaN kept the last yaw
    assert model.dropped == 1


def test_joint_transforms_are_the_parent_child_edges():
    model = RobotModel(URDF)
    model.set_joints(['yaw', 'pitch'], [math.pi / 2, 0.0])
    edges = {(p, c): t for p, c, t in model.joint_transforms()}
    assert set(edges) == {('base_link', 'link1'), ('link1', 'link2'), ('link2', 'tool')}
    np.testing.assert_allclose(edges['base_link', 'link1'][:3, 3], [0, 0, 0.1], atol=1e-12)
    np.testing.assert_allclose(edges['base_link', 'link1'][:3, :3],
                               [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-12)
    # Chained, the edges give the tool pose forward kinematics gives.
    chained = edges['base_link', 'link1'] @ edges['link1', 'link2'] @ edges['link2', 'tool']
    np.testing.assert_allclose(chained, model.link_pose('tool'), atol=1e-12)


def test_quaternions():
    h = math.sqrt(0.5)
    assert quaternion_xyzw(np.eye(3)) == pytest.approx((0, 0, 0, 1))
    rz = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]
    assert quaternion_xyzw(rz) == pytest.approx((0, 0, h, h))
    rx180 = [[1, 0, 0], [0, -1, 0], [0, 0, -1]]
    assert quaternion_xyzw(rx180) == pytest.approx((1, 0, 0, 0))


def test_bad_urdf_is_a_value_error():
    with pytest.raises(ValueError, match='robot_description'):
        RobotModel('<robot')
