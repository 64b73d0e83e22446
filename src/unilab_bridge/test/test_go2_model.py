# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
assets/go2.xml against Unitree's published Go2 description, written out here.

The numbers below are read from unitree_ros's go2_description URDF
(robots/go2_description/urdf/go2_description.urdf), not from our model: the feet by forward
kinematics from the URDF's joint offsets and axes, the masses, inertias, ranges and limits
from its links and joints.
"""

import pathlib

import mujoco
import numpy as np
import pytest
import unilab_bridge
from unilab_bridge.tasks.joint_limits import actuated_joints, joint_limits_from_model
from unilab_core.actuator import MotorLimits, PdMotor

ASSET = pathlib.Path(unilab_bridge.__file__).parent / 'assets' / 'go2.xml'

LEGS = ('FL', 'FR', 'RL', 'RR')  # the URDF's order
JOINTS = [f'{leg}_{part}_joint' for leg in LEGS for part in ('hip', 'thigh', 'calf')]
# [URDF] per leg: sign of x (front / rear) and of y (left / right)
SIDE = {'FL': (1, 1), 'FR': (1, -1), 'RL': (-1, 1), 'RR': (-1, -1)}
HIP_X, HIP_Y, THIGH_Y, THIGH, CALF = 0.1934, 0.0465, 0.0955, 0.213, 0.213
# [URDF] <limit lower upper effort velocity> per joint of a leg (front, rear)
RANGES = {'hip': (-1.0472, 1.0472), 'front_thigh': (-1.5708, 3.4907),
          'rear_thigh': (-0.5236, 4.5379), 'calf': (-2.7227, -0.83776)}
EFFORT = {'hip': 23.7, 'thigh': 23.7, 'calf': 45.43}
VELOCITY = {'hip': 30.1, 'thigh': 30.1, 'calf': 15.70}
STAND = np.array([0.0, 0.8, -1.5] * 4)  # unitree_rl_gym's standing pose (hip 0)
# [URDF] link masses; the 12 *_rotor links (0.089 kg) are left out on purpose (go2.xml says why)
MASS = {'base': 6.921, 'Head_upper': 0.001, 'Head_lower': 0.001,
        'hip': 0.678, 'thigh': 1.152, 'calf': 0.154, 'foot': 0.04}
URDF_TOTAL = 6.921 + 0.001 + 0.001 + 4 * (0.678 + 1.152 + 0.154 + 0.04)  # 15.019 kg


def _rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _urdf_foot(leg, hip, thigh, calf):
    """Foot in the base frame from the URDF: hip about x, thigh and calf about y."""
    fx, sy = SIDE[leg]
    down = np.array([0.0, 0.0, -1.0])
    # foot = hip_origin + Rx(hip) (thigh_offset + Ry(thigh) (L_thigh down + Ry(calf) L_calf down))
    in_thigh = THIGH * down + _ry(calf) @ (CALF * down)
    in_hip = np.array([0.0, sy * THIGH_Y, 0.0]) + _ry(thigh) @ in_thigh
    return np.array([fx * HIP_X, sy * HIP_Y, 0.0]) + _rx(hip) @ in_hip


@pytest.fixture(scope='module')
def model():
    return mujoco.MjModel.from_xml_path(str(ASSET))


def _model_feet(model, q):
    data = mujoco.MjData(model)
    data.qpos[:7] = [0, 0, 0, 1, 0, 0, 0]  # the base frame is the world frame
    data.qpos[[model.jnt_qposadr[model.joint(j).id] for j in JOINTS]] = q
    mujoco.mj_kinematics(model, data)
    return np.array([data.body(f'{leg}_foot').xpos for leg in LEGS])


def _leg_range(leg, part):
    return RANGES[('front_' if leg[0] == 'F' else 'rear_') + part if part == 'thigh' else part]


def _want_feet(q):
    return np.array([_urdf_foot(leg, *q[3 * i:3 * i + 3]) for i, leg in enumerate(LEGS)])


def test_feet_at_the_standing_pose_are_the_urdfs(model):
    feet = _model_feet(model, STAND)
    np.testing.assert_allclose(feet, _want_feet(STAND), atol=1e-6)
    # Hand check of one: x = 0.1934 - 0.213 (sin 0.8 + sin -0.7), z = -0.213 (cos 0.8 + cos 0.7)
    np.testing.assert_allclose(feet[0], [0.1934 - 0.213 * (np.sin(0.8) - np.sin(0.7)),
                                         0.0465 + 0.0955,
                                         -0.213 * (np.cos(0.8) + np.cos(0.7))], atol=1e-6)


def test_feet_at_random_poses_within_the_ranges_are_the_urdfs(model):
    rng = np.random.default_rng(2)
    bounds = np.array([_leg_range(leg, part) for leg in LEGS
                       for part in ('hip', 'thigh', 'calf')])
    for q in rng.uniform(bounds[:, 0], bounds[:, 1], size=(20, 12)):
        np.testing.assert_allclose(_model_feet(model, q), _want_feet(q), atol=1e-6,
                                   err_msg=str(q))


def test_joint_names_order_axes_and_ranges(model):
    names = [model.joint(j).name for j in range(model.njnt)]
    assert names == ['root'] + JOINTS
    for i, name in enumerate(JOINTS, start=1):
        leg, part = name.split('_')[:2]
        np.testing.assert_allclose(model.jnt_axis[i], [1, 0, 0] if part == 'hip' else [0, 1, 0])
        np.testing.assert_allclose(model.jnt_range[i], _leg_range(leg, part), atol=1e-12)
        assert model.jnt_limited[i]


def test_actuators_are_torque_motors_at_the_urdf_effort_limits(model):
    act_ids, jnt_ids = actuated_joints(model)
    assert [model.joint(j).name for j in jnt_ids] == JOINTS  # actuators in joint order
    limits = joint_limits_from_model(model, act_ids, jnt_ids)
    for name in JOINTS:
        part = name.split('_')[1]
        assert limits[name]['has_effort_limits']
        assert limits[name]['max_effort'] == pytest.approx(EFFORT[part])
    np.testing.assert_array_equal(model.actuator_gainprm[:, 0], 1.0)  # ctrl = torque
    np.testing.assert_array_equal(model.actuator_biastype, 0)
    motors = MotorLimits.from_model(model)
    parts = [n.split('_')[1] for n in JOINTS]
    np.testing.assert_allclose(motors.torque_limit, [EFFORT[p] for p in parts])
    np.testing.assert_allclose(motors.no_load_speed, [VELOCITY[p] for p in parts])
    assert np.all(motors.knee_speed < motors.no_load_speed)


def test_masses_are_the_urdfs(model):
    assert model.body('base').mass[0] == pytest.approx(6.921)
    for leg in LEGS:
        for part in ('hip', 'thigh', 'calf', 'foot'):
            assert model.body(f'{leg}_{part}').mass[0] == pytest.approx(MASS[part])
    assert model.body_mass.sum() == pytest.approx(URDF_TOTAL) == pytest.approx(15.019)


@pytest.mark.parametrize('body, com, inertia', [
    # [URDF] <inertial>: origin xyz; ixx ixy ixz / iyy iyz / izz
    ('base', (0.021112, 0, -0.005366), ((0.02448, 0.00012166, 0.0014849),
                                        (0.00012166, 0.098077, -3.12e-05),
                                        (0.0014849, -3.12e-05, 0.107))),
    ('FL_hip', (-0.0054, 0.00194, -0.000105), ((0.00048, -3.01e-06, 1.11e-06),
                                               (-3.01e-06, 0.000884, -1.42e-06),
                                               (1.11e-06, -1.42e-06, 0.000596))),
    ('RR_hip', (0.0054, -0.00194, -0.000105), ((0.00048, -3.01e-06, -1.11e-06),
                                               (-3.01e-06, 0.000884, 1.42e-06),
                                               (-1.11e-06, 1.42e-06, 0.000596))),
    ('FL_thigh', (-0.00374, -0.0223, -0.0327), ((0.00584, 8.72e-05, -0.000289),
                                                (8.72e-05, 0.0058, 0.000808),
                                                (-0.000289, 0.000808, 0.00103))),
    ('FR_thigh', (-0.00374, 0.0223, -0.0327), ((0.00584, -8.72e-05, -0.000289),
                                               (-8.72e-05, 0.0058, -0.000808),
                                               (-0.000289, -0.000808, 0.00103))),
    ('RL_calf', (0.00548, -0.000975, -0.115), ((0.00108, 3.4e-07, 1.72e-05),
                                               (3.4e-07, 0.0011, 8.28e-06),
                                               (1.72e-05, 8.28e-06, 3.29e-05))),
    ('RR_calf', (0.00548, 0.000975, -0.115), ((0.00108, -3.4e-07, 1.72e-05),
                                              (-3.4e-07, 0.0011, -8.28e-06),
                                              (1.72e-05, -8.28e-06, 3.29e-05))),
])
def test_centres_of_mass_and_inertia_tensors_are_the_urdfs(model, body, com, inertia):
    b = model.body(body)
    np.testing.assert_allclose(b.ipos, com, atol=1e-12)
    # MuJoCo keeps principal moments and the principal axes' frame: rebuild the tensor.
    rot = np.empty(9)
    mujoco.mju_quat2Mat(rot, b.iquat)
    rot = rot.reshape(3, 3)
    np.testing.assert_allclose(rot @ np.diag(b.inertia) @ rot.T, inertia, atol=1e-10)


def test_imu_site_and_foot_spheres_are_where_the_urdf_puts_them(model):
    # [URDF] imu_joint xyz -0.02557 0 0.04232 on base
    assert model.site('imu').bodyid[0] == model.body('base').id
    np.testing.assert_allclose(model.site('imu').pos, [-0.02557, 0, 0.04232])
    for leg in LEGS:
        foot = model.geom(f'{leg}_foot')
        assert foot.type[0] == mujoco.mjtGeom.mjGEOM_SPHERE
        assert foot.size[0] == pytest.approx(0.022)  # [URDF] *_foot collision sphere
        np.testing.assert_allclose(foot.pos, [-0.002, 0, 0])
    assert model.nmesh == 0  # collision primitives only


def test_the_pd_at_the_motor_holds_the_robot_up_from_the_standing_pose(model):
    # The model and the actuator together: from keyframe `stand`, 1 s of kp 20 / kd 0.5 at the
    # standing targets. kp 20 is soft: the trunk sags from 0.33 m to about 0.24 m (unitree_rl_gym
    # rewards a 0.25 m base height; the policy's offsets make up the rest), but stays up.
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, model.key('stand').id)
    motor = PdMotor(1, MotorLimits.from_model(model))
    adr = [model.jnt_qposadr[model.joint(j).id] for j in JOINTS]
    dof = [model.jnt_dofadr[model.joint(j).id] for j in JOINTS]
    for _ in range(200):
        data.ctrl[:] = motor.torque(STAND[None], data.qpos[adr][None], data.qvel[dof][None])[0]
        mujoco.mj_step(model, data)
    assert 0.2 < data.qpos[2] < 0.34
    assert data.qpos[3] > 0.98  # quaternion w: tilted less than 23 degrees
    assert np.abs(data.qvel).max() < 0.5  # settled
