# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The legged supervisor's modes, bounds and motor-rate commands (no ROS)."""

import math
import pathlib

import numpy as np
import pytest
from unilab_core.actuator import MotorLimits
from unilab_core.robot_profile import load_profile
from unilab_safety.legged import LeggedSupervisor, Mode, tilt

REPO = pathlib.Path(__file__).resolve().parents[3]

MS = 1_000_000
PROFILE = load_profile(REPO / 'config' / 'robots' / 'go2.yaml')
CFG = PROFILE.legged
J = 12
# The Go2's motors (go2.xml): hip, thigh 23.7 N m, calf 45.43; no-load 30.1 / 15.7 rad/s.
LIMITS = MotorLimits(torque_limit=np.array([23.7, 23.7, 45.43] * 4),
                     knee_speed=np.array([15.05, 15.05, 7.85] * 4),
                     no_load_speed=np.array([30.1, 30.1, 15.7] * 4))
UPRIGHT = (0.0, 0.0, 0.0, 1.0)
LIE = np.array(CFG.lie_pose)
STAND = np.array(CFG.stand_pose)


def quat_roll(r):
    return (math.sin(r / 2), 0.0, 0.0, math.cos(r / 2))


def make(interface='effort', **changes):
    cfg = CFG.model_copy(update=changes)
    return LeggedSupervisor(cfg, LIMITS, interface)


def feed(sup, t_ns, q=LIE, qd=None, quat=UPRIGHT):
    sup.joint_state(q, np.zeros(J) if qd is None else qd, t_ns)
    sup.imu(quat, t_ns)


def stood_up(interface='effort', **changes):
    """Return a supervisor armed at t=0 and run to the end of its stand-up, and that time."""
    sup = make(interface, **changes)
    feed(sup, 0)
    assert sup.request_arm(0)[0]
    t = 0
    while sup.mode == Mode.STAND:
        t += 2 * MS
        feed(sup, t, q=STAND)
        sup.tick(t)
    return sup, t


def test_tilt_of_rotations():
    assert tilt(UPRIGHT) == pytest.approx((0.0, 0.0))
    assert tilt(quat_roll(0.4)) == pytest.approx((0.4, 0.0))
    p = 0.3
    assert tilt((0.0, math.sin(p / 2), 0.0, math.cos(p / 2))) == pytest.approx((0.0, p))
    assert abs(tilt(quat_roll(math.pi))[0]) == pytest.approx(math.pi)  # upside down


def test_starts_passive_with_damping_torques():
    sup = make()
    qd = np.linspace(-2, 2, J)
    feed(sup, 0, qd=qd)
    out = sup.tick(0)
    assert out.mode == Mode.PASSIVE
    np.testing.assert_allclose(out.command, -CFG.damping_kd * qd)  # tau = -kd_damp qd


def test_passive_without_joint_states_sends_zero_torque_or_nothing():
    assert np.all(make('effort').tick(0).command == 0.0)
    sup = make('position')
    assert sup.tick(0).command is None
    assert sup.counters['ticks_silent'] == 1


def test_position_interface_passive_commands_the_measured_pose():
    sup = make('position')
    q = LIE + 0.05
    feed(sup, 0, q=q, qd=np.ones(J))
    np.testing.assert_allclose(sup.tick(0).command, q)  # the driver's PD: -kd qd only


def test_stand_up_ramps_from_the_measured_pose_with_pd_torques():
    sup = make()
    q0 = LIE.copy()
    feed(sup, 0, q=q0)
    ok, text = sup.request_arm(0)
    assert ok and 'standing up' in text and sup.mode == Mode.STAND
    # Half-way through stand_time_s the target is half-way; the torque is the PD's.
    t = int(CFG.stand_time_s * 1e9 / 2)
    qd = np.full(J, 0.3)
    feed(sup, t, q=q0, qd=qd)
    out = sup.tick(t)
    target = q0 + 0.5 * (STAND - q0)
    raw = CFG.kp * (target - q0) - CFG.kd * qd
    # by hand: clip at the torque limit, and when driving at the torque-speed line
    avail = LIMITS.torque_limit * np.clip((LIMITS.no_load_speed - 0.3) /
                                          (LIMITS.no_load_speed - LIMITS.knee_speed), 0, 1)
    expected = np.clip(raw, -LIMITS.torque_limit, avail)
    np.testing.assert_allclose(out.command, expected)
    assert np.all(np.abs(out.command) <= LIMITS.torque_limit)


def test_stand_up_then_policy_blended_in_over_blend_steps():
    sup, t = stood_up(blend_steps=4)
    assert sup.mode == Mode.POLICY
    out = sup.tick(t)
    np.testing.assert_allclose(sup._last_target, STAND)  # before the first target: hold
    policy = STAND + 0.2
    for k in range(1, 6):
        sup.target(policy)
        t += 20 * MS
        feed(sup, t, q=STAND)
        out = sup.tick(t)
        a = min(k / 4, 1.0)
        np.testing.assert_allclose(sup._last_target, STAND + a * 0.2)
    assert out.mode == Mode.POLICY


def test_position_interface_sends_the_target():
    sup, t = stood_up('position', blend_steps=1)
    sup.target(STAND + 0.1)
    feed(sup, t + MS, q=STAND)
    np.testing.assert_allclose(sup.tick(t + MS).command, STAND + 0.1)


def test_disarm_lies_down_then_damping():
    sup, t = stood_up()
    assert sup.request_disarm(t)[0] and sup.mode == Mode.LIE
    t_end = t + int(CFG.lie_time_s * 1e9)
    feed(sup, t_end - MS, q=STAND)
    sup.tick(t_end - MS)
    assert sup.mode == Mode.LIE
    np.testing.assert_allclose(sup._last_target, LIE, atol=0.01)
    feed(sup, t_end, q=LIE)
    out = sup.tick(t_end)
    assert out.mode == Mode.PASSIVE
    assert sup.counters['lie_downs'] == 1


@pytest.mark.parametrize('kind,inputs', [
    ('tilt', dict(quat=quat_roll(0.8))),                      # past max_tilt_rad 0.7
    ('tilt', dict(quat=(math.sin(-0.4), 0.0, 0.0, math.cos(-0.4)))),  # roll -0.8
    ('joint_velocity', dict(qd=np.r_[np.zeros(11), 24.0])),  # calf past 23.5 rad/s
])
def test_each_bound_latches_a_fault_into_damping(kind, inputs):
    sup, t = stood_up()
    t += 2 * MS
    feed(sup, t, q=STAND, **inputs)
    out = sup.tick(t)
    assert out.mode == Mode.FAULT and sup.counters[f'faults_{kind}'] == 1
    qd = inputs.get('qd', np.zeros(J))
    np.testing.assert_allclose(out.command, np.clip(-CFG.damping_kd * qd, -LIMITS.torque_limit,
                                                    LIMITS.torque_limit))
    # latched: good inputs again do not leave it
    feed(sup, t + 2 * MS, q=STAND)
    assert sup.tick(t + 2 * MS).mode == Mode.FAULT


@pytest.mark.parametrize('stale', ['stale_joint_state', 'stale_imu'])
def test_stale_inputs_latch_a_fault(stale):
    sup, t = stood_up()
    late = t + int(CFG.state_timeout_s * 1e9) + MS
    if stale == 'stale_imu':
        sup.joint_state(STAND, np.zeros(J), late)   # only the IMU goes quiet
    else:
        sup.imu(UPRIGHT, late)
    assert sup.tick(late - 2 * MS).mode == Mode.POLICY  # within the timeout: fine
    assert sup.tick(late).mode == Mode.FAULT
    assert sup.counters[f'faults_{stale}'] == 1


def test_non_finite_joint_state_is_a_fault():
    sup, t = stood_up()
    q = STAND.copy()
    q[3] = np.nan
    feed(sup, t + MS, q=q)
    out = sup.tick(t + MS)
    assert out.mode == Mode.FAULT and np.all(out.command == 0.0)


def test_saturation_for_too_long_is_a_fault():
    sup, t = stood_up(blend_steps=1, saturation_time_s=0.1)
    sup.target(STAND + 3.0)      # 60 N m asked of 23.7 / 45.43 N m motors
    t0 = t + MS
    for k in range(60):          # 2 ms ticks: 118 ms
        tk = t0 + k * 2 * MS
        feed(sup, tk, q=STAND)
        out = sup.tick(tk)
        if out.mode == Mode.FAULT:
            break
    assert sup.counters['faults_saturation'] == 1
    assert 0.1e9 <= tk - t0 < 0.1e9 + 4 * MS


def test_arm_refused_while_latched_and_until_cleared():
    sup, t = stood_up()
    feed(sup, t + MS, q=STAND, quat=quat_roll(1.0))
    sup.tick(t + MS)
    ok, text = sup.request_arm(t + 2 * MS)
    assert not ok and 'reset_estop' in text and sup.counters['arms_refused'] == 1
    # still tilted: the latch stays
    ok, text = sup.clear_fault(t + 2 * MS)
    assert not ok and 'roll' in text and sup.mode == Mode.FAULT
    feed(sup, t + 3 * MS)
    ok, _ = sup.clear_fault(t + 3 * MS)
    assert ok and sup.mode == Mode.PASSIVE        # cleared into damping, not moving
    assert sup.tick(t + 3 * MS).mode == Mode.PASSIVE
    assert sup.request_arm(t + 3 * MS)[0] and sup.mode == Mode.STAND


def test_arm_refused_without_inputs_or_tilted():
    sup = make()
    ok, text = sup.request_arm(0)
    assert not ok and 'no joint state' in text
    feed(sup, 0, quat=quat_roll(1.2))
    ok, text = sup.request_arm(0)
    assert not ok and 'roll' in text and sup.mode == Mode.PASSIVE


def test_passive_does_not_latch_on_tilt():
    sup = make()
    feed(sup, 0, quat=quat_roll(1.5))
    assert sup.tick(0).mode == Mode.PASSIVE  # lying on its side, passive: nothing to stop


def test_re_arm_during_lie_down_stands_from_the_current_target():
    sup, t = stood_up()
    sup.request_disarm(t)
    t += int(CFG.lie_time_s * 1e9 / 2)
    feed(sup, t, q=STAND)
    sup.tick(t)
    mid = sup._last_target.copy()
    assert sup.request_arm(t)[0] and sup.mode == Mode.STAND
    np.testing.assert_allclose(sup._from, mid)


def test_status_names_mode_and_fault():
    sup, t = stood_up()
    feed(sup, t + MS, q=STAND, quat=quat_roll(0.9))
    sup.tick(t + MS)
    s = sup.status()
    assert s['legged_mode'] == 'fault' and 'roll' in s['legged_fault']
    assert s['legged_faults'] == 1 and 'policy -> fault' in s['legged_last_transition']


def test_tilt_stop_time_counts_from_the_first_sample_past_the_bound():
    sup, t = stood_up()
    feed(sup, t + MS, q=STAND, quat=quat_roll(0.75))    # first sample past 0.7
    sup.imu(quat_roll(0.8), t + 2 * MS)                   # a later one: not the start
    sup.tick(t + 3 * MS)
    assert sup.mode == Mode.FAULT and sup.tilt_stop_ms == pytest.approx(2.0)
    assert sup.status()['legged_tilt_stop_ms'] == pytest.approx(2.0)


def test_policy_and_stand_ticks_count_their_saturated_share():
    sup = make(stand_time_s=1.0)
    feed(sup, 0)
    sup.request_arm(0)
    t = 900 * MS
    feed(sup, t, q=LIE - 2.0)   # the robot 2 rad behind the ramp: the PD saturates
    sup.tick(t)
    assert sup.counters['stand_ticks'] == 1 and sup.counters['stand_saturated_ticks'] == 1
    feed(sup, t + MS, q=LIE + 0.9 * (STAND - LIE))   # on the ramp: not saturated
    sup.tick(t + MS)
    assert sup.counters['stand_ticks'] == 2 and sup.counters['stand_saturated_ticks'] == 1


def test_an_arm_standing_order_on_a_tilted_robot_latches_the_fall_stop():
    sup = make()
    feed(sup, 0, quat=quat_roll(0.9))
    ok, text = sup.request_arm(MS, latch_tilt=True)
    assert not ok and 'fall stop latched' in text
    assert sup.mode == Mode.FAULT and sup.counters['faults_tilt'] == 1
    assert sup.tilt_stop_ms == pytest.approx(1.0)


def test_the_stand_up_peak_torque_ratio_is_what_the_pd_asked_for():
    sup = make(stand_time_s=1.0)
    feed(sup, 0)
    sup.request_arm(0)
    feed(sup, 500 * MS, q=LIE)          # half-way, the robot has not moved
    sup.tick(500 * MS)
    raw = CFG.kp * (0.5 * (STAND - LIE))  # qd 0
    assert sup.stand_peak == pytest.approx(np.max(np.abs(raw) / LIMITS.torque_limit))
    assert sup.status()['legged_stand_peak_torque_ratio'] == pytest.approx(sup.stand_peak,
                                                                           abs=1e-4)


@pytest.mark.parametrize('interface', ['effort', 'position'])
def test_a_stop_request_is_damping_not_a_fault_even_as_inputs_end(interface):
    sup, t = stood_up(interface)
    assert sup.request_stop(t, 'stop signal') and sup.mode == Mode.PASSIVE
    assert sup.counters['stops'] == 1
    # The executor delivers nothing more: long past the timeout, still no fault.
    late = t + int(CFG.state_timeout_s * 1e9) * 3
    out = sup.tick(late)
    assert out.mode == Mode.PASSIVE and sup.counters['faults'] == 0 and sup.fault == ''
    if interface == 'effort':   # no damping on a stale velocity: no torque at all
        assert np.all(out.command == 0.0) and sup.counters['ticks_stale_damping'] == 1
    else:                       # the measured pose: the driver's PD damps
        np.testing.assert_array_equal(out.command, STAND)
    assert not sup.request_stop(late, 'again')   # passive already: nothing moves


def test_a_stop_request_leaves_a_latched_fault_latched():
    sup, t = stood_up()
    feed(sup, t + MS, q=STAND, quat=quat_roll(1.2))
    assert sup.tick(t + MS).mode == Mode.FAULT
    assert not sup.request_stop(t + 2 * MS, 'stop signal')
    assert sup.mode == Mode.FAULT and 'roll' in sup.fault


def test_effort_damping_with_a_fresh_velocity_and_none_once_it_is_stale():
    sup = make()
    qd = np.linspace(-2, 2, J)
    feed(sup, 0, qd=qd)
    np.testing.assert_allclose(sup.tick(0).command, -CFG.damping_kd * qd)
    timeout = int(CFG.state_timeout_s * 1e9)
    np.testing.assert_allclose(sup.tick(timeout).command, -CFG.damping_kd * qd)
    assert np.all(sup.tick(timeout + MS).command == 0.0)
