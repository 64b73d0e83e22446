# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The PD at the motor, its limits and the command delay, against hand-computed values."""

import numpy as np
import pytest
from unilab_core.actuator import CommandDelay, MotorLimits, PdMotor

# Two joints, a Go2 thigh and calf: torque limit, knee speed, no-load speed.
LIMITS = MotorLimits(torque_limit=np.array([23.7, 45.43]),
                     knee_speed=np.array([15.05, 7.85]),
                     no_load_speed=np.array([30.1, 15.70]))


def _torque(q_target, q, qd):
    q_target, q, qd = (np.atleast_2d(np.asarray(a, np.float64)) for a in (q_target, q, qd))
    return PdMotor(q.shape[0], LIMITS, kp=20.0, kd=0.5).torque(q_target, q, qd)


def test_within_the_limits_the_torque_is_the_pd_law():
    # thigh: 20 * (0.9 - 0.8) - 0.5 * 0.4 = 1.8; calf: 20 * (-1.4 + 1.5) - 0.5 * (-2) = 3.0
    tau = _torque([0.9, -1.4], [0.8, -1.5], [0.4, -2.0])
    np.testing.assert_allclose(tau, [[1.8, 3.0]], atol=1e-12)


def test_the_torque_is_clipped_at_the_torque_limit_both_ways():
    # 20 * 2 = 40 > 23.7; 20 * -3 = -60 < -45.43; at rest, so the speed takes nothing away.
    np.testing.assert_allclose(_torque([2.0, -3.0], [0.0, 0.0], [0.0, 0.0]),
                               [[23.7, -45.43]], atol=1e-12)
    np.testing.assert_allclose(_torque([-2.0, 3.0], [0.0, 0.0], [0.0, 0.0]),
                               [[-23.7, 45.43]], atol=1e-12)


@pytest.mark.parametrize('qd, want', [
    # below the knee: full torque
    ((10.0, 5.0), (23.7, 45.43)),
    # halfway from knee to no-load: (30.1 - 22.575) / 15.05 = 0.5; (15.7 - 11.775) / 7.85 = 0.5
    ((22.575, 11.775), (11.85, 22.715)),
    # three quarters of the way: a quarter of the torque
    ((26.3375, 13.7375), (5.925, 11.3575)),
    # at and past the no-load speed: nothing left to drive with
    ((30.1, 15.7), (0.0, 0.0)),
    ((35.0, 20.0), (0.0, 0.0)),
])
def test_driving_torque_rolls_off_linearly_from_the_knee_to_the_no_load_speed(qd, want):
    qd = np.array(qd)
    # A large error in the direction of motion: the PD asks for far more than the motor has.
    forward = _torque(5.0 * np.ones(2), np.zeros(2), qd)
    np.testing.assert_allclose(forward, [want], atol=1e-9)
    # The same the other way round (negative speed, negative torque).
    backward = _torque(-5.0 * np.ones(2), np.zeros(2), -qd)
    np.testing.assert_allclose(backward, [-np.array(want)], atol=1e-9)


def test_braking_against_the_motion_keeps_the_full_torque_limit():
    # Moving at +22.575 / +11.775 rad/s, asked to push back hard: -23.7 / -45.43, no roll-off.
    tau = _torque(-5.0 * np.ones(2), np.zeros(2), [22.575, 11.775])
    np.testing.assert_allclose(tau, [[-23.7, -45.43]], atol=1e-12)
    tau = _torque(5.0 * np.ones(2), np.zeros(2), [-40.0, -40.0])  # even past no-load
    np.testing.assert_allclose(tau, [[23.7, 45.43]], atol=1e-12)


def test_rows_are_independent_and_out_is_written_in_place():
    motor = PdMotor(3, LIMITS)  # defaults kp 20, kd 0.5 (unitree_rl_gym's Go2)
    q_target = np.array([[0.9, -1.4], [2.0, -3.0], [5.0, 5.0]])
    q = np.array([[0.8, -1.5], [0.0, 0.0], [0.0, 0.0]])
    qd = np.array([[0.4, -2.0], [0.0, 0.0], [22.575, 11.775]])
    out = np.full((3, 2), np.nan)
    assert motor.torque(q_target, q, qd, out=out) is out
    np.testing.assert_allclose(out, [[1.8, 3.0], [23.7, -45.43], [11.85, 22.715]], atol=1e-9)


@pytest.mark.parametrize('bad', ['q_target', 'q', 'qd'])
def test_a_non_finite_input_is_refused_by_name(bad):
    motor = PdMotor(2, LIMITS)
    args = {k: np.zeros((2, 2)) for k in ('q_target', 'q', 'qd')}
    args[bad][1, 0] = np.nan
    with pytest.raises(ValueError, match=f'{bad} has non-finite values \\(rows \\[1\\]\\)'):
        motor.torque(args['q_target'], args['q'], args['qd'])


def test_limits_are_checked():
    with pytest.raises(ValueError, match='knee_speed'):
        MotorLimits(np.array([1.0]), np.array([5.0]), np.array([5.0]))
    with pytest.raises(ValueError, match='one length'):
        MotorLimits(np.array([1.0, 2.0]), np.array([1.0]), np.array([5.0]))


@pytest.mark.parametrize('k', [0, 1, 2, 4])
def test_a_delay_of_k_ticks_reproduces_the_command_k_ticks_late(k):
    # 20 ms at 5 ms per motor tick: delays 0..4 ticks.
    delay = CommandDelay(2, 3, tick_s=0.005, rng=np.random.default_rng(0), max_delay_s=0.020)
    assert delay.max_ticks == 4
    start = np.array([0.0, 0.8, -1.5])
    delay.reset([0, 1], start, ticks=[k, 0])
    commands = [np.full((2, 3), float(t)) for t in range(1, 11)]  # command t at tick t
    for t, cmd in enumerate(commands, start=1):
        got = delay.step(cmd)
        # env 0: the command of tick t - k, the start pose before the first one arrived
        want = start if t - k < 1 else commands[t - k - 1][0]
        np.testing.assert_array_equal(got[0], want)
        np.testing.assert_array_equal(got[1], cmd[1])  # env 1: no delay


def test_a_reset_env_starts_again_from_its_pose_while_the_others_run_on():
    delay = CommandDelay(2, 1, tick_s=0.005, rng=np.random.default_rng(0))
    delay.reset([0, 1], np.zeros(1), ticks=[2, 2])
    for t in range(1, 6):
        delay.step(np.full((2, 1), float(t)))
    delay.reset([1], np.array([-1.0]), ticks=[2])
    got = delay.step(np.full((2, 1), 6.0))
    assert got[0, 0] == 4.0 and got[1, 0] == -1.0  # env 0: tick 4's; env 1: its new start


def test_delays_are_drawn_per_episode_over_the_whole_range():
    delay = CommandDelay(400, 12, tick_s=0.005, rng=np.random.default_rng(3))
    delay.reset(np.arange(400), np.zeros(12))
    assert set(delay.ticks.tolist()) == {0, 1, 2, 3, 4}  # 0, 5, 10, 15, 20 ms
    with pytest.raises(ValueError, match='outside'):
        delay.reset([0], np.zeros(12), ticks=[5])
