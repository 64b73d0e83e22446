# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The legged double's physics without ROS: latency, motor envelope, floor, pushes, starts."""

import xml.etree.ElementTree as ET

from double_helpers import profile_file
import mujoco
import numpy as np
import pytest
from unilab_bridge.legged_double import LeggedDouble, parse_pushes, Push
from unilab_core.actuator import PdMotor
from unilab_core.config import ConfigError
from unilab_core.robot_profile import load_profile

GO2 = load_profile(profile_file('go2_effort'))
GO2_POSITION = load_profile(profile_file('go2'))
STAND = np.array(GO2.legged.stand_pose)
LIE = np.array(GO2.legged.lie_pose)


def _dof(double, joint):
    return int(double.model.jnt_dofadr[double.model.joint(joint).id])


def test_an_effort_step_acts_latency_ticks_after_it_arrived():
    d = LeggedDouble(GO2, start='stand', latency_s=0.007)
    assert d.latency_ticks == 7 and d.latency_s == pytest.approx(0.007)
    step = np.full(12, 1.5)
    d.command(step)
    d.step(7)
    np.testing.assert_array_equal(d.joint_effort, np.zeros(12))  # still the held 0
    d.step(1)
    np.testing.assert_allclose(d.joint_effort, step)  # at rest: full torque available
    d.command(np.zeros(12))
    d.step(7)
    np.testing.assert_allclose(d.joint_effort, step)  # held until the next one acts


def test_the_real_variant_draws_its_latency_in_5_to_20_ms_from_the_seed():
    drawn = [LeggedDouble(GO2, 'real', seed=s, start='tilt').latency_s for s in range(6)]
    assert all(0.005 <= t <= 0.020 for t in drawn) and len(set(drawn)) > 1
    assert LeggedDouble(GO2, 'real', seed=3, start='tilt').latency_s == drawn[3]
    assert LeggedDouble(GO2, 'nominal', start='tilt').latency_s == 0.0


@pytest.mark.parametrize('variant, strength', [('nominal', 1.0), ('real', 0.95)])
def test_commanded_torque_is_clipped_by_the_torque_speed_curve(variant, strength):
    d = LeggedDouble(GO2, variant, start='stand', latency_s=0.0)
    calf, thigh = GO2.joint_names.index('FL_calf_joint'), GO2.joint_names.index('FL_thigh_joint')
    # FL calf at +11.775 rad/s, halfway from its knee (7.85) to no-load (15.70) speed;
    # FL thigh at -22.575 rad/s, halfway from 15.05 to 30.1 (go2.xml's numerics).
    d.data.qvel[_dof(d, 'FL_calf_joint')] = 11.775
    d.data.qvel[_dof(d, 'FL_thigh_joint')] = -22.575
    tau = np.zeros(12)
    tau[calf], tau[thigh] = 45.0, -30.0   # both drive the motion
    d.command(tau)
    d.step(1)
    # driving: tau_max * strength * (qd_nl - |qd|) / (qd_nl - qd_knee) = half the limit
    assert d.joint_effort[calf] == pytest.approx(45.43 * strength * 0.5)
    assert d.joint_effort[thigh] == pytest.approx(-23.7 * strength * 0.5)
    # braking (against the motion) keeps the whole limit
    d2 = LeggedDouble(GO2, variant, start='stand', latency_s=0.0)
    d2.data.qvel[_dof(d2, 'FL_calf_joint')] = 11.775
    tau[:] = 0.0
    tau[calf] = -50.0
    d2.command(tau)
    d2.step(1)
    assert d2.joint_effort[calf] == pytest.approx(-45.43 * strength)


@pytest.mark.parametrize('variant, mu', [('real', 0.8), ('slippery', 0.3)])
def test_the_floor_friction_is_the_friction_of_every_foot_contact(variant, mu):
    d = LeggedDouble(GO2_POSITION, variant, start='stand')   # held up by the driver's PD
    d.step(50)
    floor = d.floor_geom
    contacts = [c for c in d.data.contact[:d.data.ncon] if floor in (c.geom1, c.geom2)]
    feet = {d.model.geom(c.geom2 if c.geom1 == floor else c.geom1).name for c in contacts}
    assert {'FL_foot', 'FR_foot', 'RL_foot', 'RR_foot'} <= feet
    assert all(c.friction[0] == pytest.approx(mu) for c in contacts)
    assert d.friction == pytest.approx(mu)


def test_a_push_changes_the_trunk_velocity_by_the_kick():
    d = LeggedDouble(GO2, start='stand', pushes=[Push(0.0105, -0.5, 0.0)])
    d.step(5)
    before = d.data.qvel[:2].copy()
    d.push(1.0, 0.5)
    d.step(1)
    np.testing.assert_allclose(d.data.qvel[:2] - before, [1.0, 0.5], atol=0.05)
    before = d.data.qvel[:2].copy()
    d.advance_to(0.0125)   # the timetable's kick at 10.5 ms (in the tick at 11 ms)
    np.testing.assert_allclose(d.data.qvel[:2] - before, [-0.5, 0.0], atol=0.05)
    assert d.pushes_applied == 2


def test_pushes_parse_from_flat_triples():
    assert parse_pushes([2.0, 0, 1, 1.0, 0.5, 0]) == [Push(1.0, 0.5, 0.0), Push(2.0, 0.0, 1.0)]
    with pytest.raises(ConfigError, match='triples'):
        parse_pushes([1.0, 2.0])


def test_the_lying_start_rests_on_the_floor_in_the_lie_pose():
    d = LeggedDouble(GO2)
    np.testing.assert_allclose(d.joint_position, LIE, atol=0.06)
    assert np.abs(d.data.qvel).max() == 0.0 and d.sim_time == 0.0
    truth = d.ground_truth()
    assert 0.05 < truth.pos[2] < 0.15 and truth.fallen   # down, by the fall rule
    assert any(d.floor_geom in (c.geom1, c.geom2) for c in d.data.contact[:d.data.ncon])
    # Settled: in the position interface (held at the start pose) it stays where it lies.
    p = LeggedDouble(GO2_POSITION)
    z0 = p.ground_truth().pos[2]
    p.step(300)
    assert p.ground_truth().pos[2] == pytest.approx(z0, abs=0.02)


def test_position_mode_holds_the_stand_pose_with_the_drivers_gains():
    soft = LeggedDouble(GO2_POSITION, start='stand')
    stiff = LeggedDouble(GO2_POSITION, start='stand', kp=80.0, kd=2.0)
    for d in (soft, stiff):
        d.command(STAND)
        d.step(2000)
        assert not d.ground_truth().fallen and d.falls == 0
    # kp 20 is soft (go2.xml: the trunk sags to about 0.24 m); kp 80 stands near the pose.
    assert soft.ground_truth().pos[2] > 0.2
    assert np.abs(soft.joint_position - STAND).max() < 0.45
    assert np.abs(stiff.joint_position - STAND).max() < 0.12
    assert stiff.ground_truth().pos[2] > 0.28


def test_a_pd_at_500_hz_on_the_effort_interface_stands_the_robot_up_from_lying():
    # The supervisor's stand-up, written here: kp 20 / kd 0.5 at 500 Hz toward a target
    # interpolated from the lying pose to stand_pose in 1 s, on the real variant.
    d = LeggedDouble(GO2, 'real', seed=1)
    pd = PdMotor(1, d.limits, GO2.legged.kp, GO2.legged.kd)
    q0 = d.joint_position
    for tick in range(3000):
        if tick % 2 == 0:
            a = min(1.0, tick * 0.001)
            target = q0 + a * (STAND - q0)
            d.command(pd.torque(target[None], d.joint_position[None],
                                d.joint_velocity[None])[0])
        d.step()
    truth = d.ground_truth()
    # Up: above the fall height by far (kp 20 alone sags to about 0.24 m, see above).
    assert truth.pos[2] > 0.2 and not truth.fallen
    assert abs(truth.linvel).max() < 0.2


def test_the_tilted_start_is_rolled_and_a_collapse_counts_one_fall():
    d = LeggedDouble(GO2, start='tilt', tilt_rad=0.9)
    w, x = d.imu().quat[:2]
    assert 2 * np.arctan2(x, w) == pytest.approx(0.9, abs=1e-6)   # the IMU reads the roll
    assert not d.ground_truth().fallen
    over = LeggedDouble(GO2, start='tilt', tilt_rad=1.2)   # beyond 60 deg: down from the start
    assert over.ground_truth().fallen and over.falls == 0
    # Standing with the motors at 0 N m (effort, no command): the robot folds, one fall.
    s = LeggedDouble(GO2, start='stand')
    assert not s.ground_truth().fallen
    s.step(1500)
    assert s.ground_truth().fallen and s.falls == 1


def test_readouts_in_the_drivers_order_and_imu_at_rest():
    d = LeggedDouble(GO2, start='stand')
    d.command(np.zeros(12))
    idx = d.joint_index(GO2.controller_joints)
    first = ['FR_hip_joint', 'FR_thigh_joint', 'FR_calf_joint']
    assert [d.joint_names[i] for i in idx][:3] == first
    np.testing.assert_allclose(d.joint_position[idx][:3], STAND[3:6], atol=0.05)
    p = LeggedDouble(GO2_POSITION, start='stand')
    p.step(2500)   # the driver's kp 20 lets it sag from the settled pose, then it rests
    r = p.imu()
    # At rest the accelerometer reads the floor's push against gravity: 9.81 up, the trunk
    # nearly level.
    assert np.linalg.norm(r.accel) == pytest.approx(9.81, abs=0.3) and r.accel[2] > 9.0
    assert np.abs(r.gyro).max() < 0.1 and r.quat[0] > 0.98
    with pytest.raises(ValueError, match='no joint'):
        d.joint_index(['knee'])


def test_the_urdf_declares_the_drivers_interface_and_gains():
    p = LeggedDouble(GO2_POSITION, start='tilt', kp=33.0, kd=0.7)
    block = ET.fromstring(p.urdf()).find('ros2_control')
    joints = block.findall('joint')
    assert [j.get('name') for j in joints] == GO2.controller_joints
    assert all(j.find('command_interface').get('name') == 'position' for j in joints)
    assert {(x.get('name'), float(x.text)) for x in joints[0].findall('param')} == \
        {('kp', 33.0), ('kd', 0.7)}
    e = ET.fromstring(LeggedDouble(GO2, start='tilt').urdf()).find('ros2_control')
    assert e.find('joint').find('command_interface').get('name') == 'effort'
    assert not e.find('joint').findall('param')


def test_bad_settings_are_configuration_errors():
    with pytest.raises(ConfigError, match='variant `icy`'):
        LeggedDouble(GO2, 'icy')
    with pytest.raises(ConfigError, match='start'):
        LeggedDouble(GO2, start='sit')
    with pytest.raises(ConfigError, match='legged'):
        LeggedDouble(load_profile(profile_file('arm6')))
    assert mujoco.MjModel  # the double owns its model: 1 kHz, not the task's 200 Hz
    assert LeggedDouble(GO2, start='tilt').model.opt.timestep == 0.001
