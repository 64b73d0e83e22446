# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""URDF forward kinematics and the model-vs-URDF convention check, on a two-link arm."""

import numpy as np
import pytest
from unilab_core.kinematics import compare_with_urdf, UrdfKinematics

# A planar two-link arm: base yaw at 0.1 m height, a 0.3 m link, an elbow about y, 0.2 m.
URDF = '''<robot name="two">
  <link name="base"/><link name="upper"/><link name="fore"/><link name="tip"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="upper"/>
    <origin xyz="0 0 0.1" rpy="0 0 {zero}"/><axis xyz="0 0 1"/></joint>
  <joint name="j2" type="revolute"><parent link="upper"/><child link="fore"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/></joint>
  <joint name="fixed_tip" type="fixed"><parent link="fore"/><child link="tip"/>
    <origin xyz="0.2 0 0"/></joint>
</robot>'''

MJCF = '''<mujoco><worldbody>
  <body name="upper" pos="0 0 0.1"><joint name="j1" axis="0 0 1" range="-3 3"/><geom size="0.01"/>
    <body name="fore" pos="0.3 0 0"><joint name="j2" axis="0 1 0" range="-2 2"/>
      <geom size="0.01"/><site name="tip" pos="0.2 0 0"/></body></body>
</worldbody></mujoco>'''


def test_urdf_link_poses_are_the_hand_computed_ones():
    fk = UrdfKinematics(URDF.format(zero=0))
    assert fk.root == 'base' and fk.joint_names == ['j1', 'j2']
    poses = fk.poses({'j1': np.pi / 2, 'j2': np.pi / 2})
    # Yaw 90 deg: the arm points along +y; elbow 90 deg about y turns the forearm down.
    np.testing.assert_allclose(poses['fore'][:3, 3], [0, 0.3, 0.1], atol=1e-12)
    np.testing.assert_allclose(poses['tip'][:3, 3], [0, 0.3, -0.1], atol=1e-12)
    np.testing.assert_allclose(fk.poses({})['tip'][:3, 3], [0.5, 0, 0.1], atol=1e-12)


def test_a_model_with_the_robots_zeros_agrees_and_one_with_other_zeros_does_not(tmp_path):
    model = tmp_path / 'two.xml'
    model.write_text(MJCF)
    same = compare_with_urdf(str(model), URDF.format(zero=0), ['j1', 'j2'])
    assert same.ok and same.frames == ('fore', 'tip', 'upper') and same.max_error_m < 1e-9
    # The robot's base joint zero a quarter turn away: the tip is off by up to
    # |0.5 m * (1 - e^{i pi/2})| = 0.707 m, named with the pose where it is worst.
    turned = compare_with_urdf(str(model), URDF.format(zero=np.pi / 2), ['j1', 'j2'])
    assert not turned.ok and turned.worst_frame == 'tip'
    assert 0.2 < turned.max_error_m <= 0.5 * np.sqrt(2) + 1e-9
    assert 'DISAGREE' in turned.describe() and 'tip' in turned.describe()


def test_what_cannot_be_compared_is_a_clear_error(tmp_path):
    model = tmp_path / 'two.xml'
    model.write_text(MJCF)
    for urdf, words in (('<robot', 'not XML'), ('<mujoco/>', 'expected <robot>'),
                        (URDF.format(zero=0).replace('"j2"', '"k2"'), "no joint(s) ['j2']"),
                        ('<robot name="x"><link name="a"/><link name="b"/></robot>',
                         '2 root links')):
        with pytest.raises(ValueError) as err:
            compare_with_urdf(str(model), urdf, ['j1', 'j2'])
        assert words in str(err.value)
