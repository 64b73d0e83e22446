# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""SafetyGate on hand-computed batches."""

import tracemalloc

import numpy as np
import pytest

from unilab_safety.gate import ActionShapeError, NoReferenceError, SafetyGate
from unilab_safety.limits import load_joint_limits

NAN = np.nan
LIMITS = load_joint_limits({'joint_limits': {
    'j0': {'min_position': -1.0, 'max_position': 1.0, 'max_velocity': 1.0,
           'max_acceleration': 2.0, 'max_effort': 5.0},
    'j1': {'min_position': 0.5, 'max_position': 2.0, 'max_effort': 2.0},
}}, ['j0', 'j1'])


def _gate(interface='position', dt=None, **kw):
    return SafetyGate(LIMITS, interface, dt, **kw)


#: A measured joint position inside the limits (the reference of rows without a command).
S = np.array([0.0, 1.0])


def _rows_seen(gate):
    c = gate.counters
    return c['passed'] + c['clamped'] + c['rejected']


def test_position_clamp_row_by_row():
    g = _gate()
    r = g.filter(np.array([[0.5, 1.0], [2.0, -1.0], [-3.0, 1.5]]), state_position=S)
    np.testing.assert_array_equal(r.command, [[0.5, 1.0], [1.0, 0.5], [-1.0, 1.5]])
    assert r.command.dtype == np.float64
    assert r.clamped_mask.tolist() == [False, True, True]
    assert r.rejected_mask.tolist() == [False, False, False]
    assert g.counters == {'passed': 1, 'clamped': 2, 'rejected': 0, 'joint_clamps': [2, 1]}


def test_nan_row_held_at_previous_safe_command():
    g = _gate()
    g.filter(np.array([[0.5, 1.0], [0.2, 0.6]]), state_position=S)
    r = g.filter(np.array([[NAN, 1.0], [0.4, 0.7]]))
    np.testing.assert_array_equal(r.command, [[0.5, 1.0], [0.4, 0.7]])
    assert r.rejected_mask.tolist() == [True, False]
    assert r.clamped_mask.tolist() == [False, False]
    r = g.filter(np.array([[0.0, np.inf], [-np.inf, 0.7]]))
    np.testing.assert_array_equal(r.command, [[0.5, 1.0], [0.4, 0.7]])
    assert g.counters['rejected'] == 3 and _rows_seen(g) == 6


def test_hold_before_any_safe_command():
    # Position: the measured state clamped into range; without one there is nothing
    # safe to hold, and the batch is refused rather than guessed at.
    r = _gate().filter(np.array([[NAN, 0.0]]), state_position=np.array([0.3, 5.0]))
    np.testing.assert_array_equal(r.command, [[0.3, 2.0]])
    with pytest.raises(NoReferenceError):
        _gate().filter(np.array([[NAN, 0.0]]))
    for interface in ('velocity', 'effort'):
        r = _gate(interface).filter(np.array([[NAN, 1.0]]))
        np.testing.assert_array_equal(r.command, [[0.0, 0.0]])


def test_rate_limit_vel_max_times_dt():
    g = _gate(dt=0.1)
    g.filter(np.array([0.0, 1.0]), state_position=S)
    r = g.filter(np.array([0.5, 1.9]))  # j1 has no velocity limit
    np.testing.assert_allclose(r.command, [[0.1, 1.9]])
    assert r.clamped_mask.tolist() == [True]
    # Reversing is also acceleration-limited: the last step moved j0 by 0.1, and the
    # change of the step is at most max_acceleration * dt^2 = 0.02, so j0 moves 0.08.
    np.testing.assert_allclose(g.filter(np.array([-0.5, 1.9])).command, [[0.18, 1.9]])
    assert g.joint_clamps.tolist() == [2, 0]


def test_rate_limit_from_state_and_reset():
    g = _gate(dt=0.1)
    state = np.array([[0.0, 1.0], [NAN, 1.0]])
    # Row 1 has a NaN state and no last command: no reference, the batch is refused.
    with pytest.raises(NoReferenceError, match='1 position row'):
        g.filter(np.array([[0.5, 1.0], [0.5, 1.0]]), state_position=state)
    state[1, 0] = 0.3
    r = g.filter(np.array([[0.5, 1.0], [0.5, 1.0]]), state_position=state)
    np.testing.assert_allclose(r.command, [[0.1, 1.0], [0.4, 1.0]])  # from the state
    g.reset(rows=[0])
    with pytest.raises(NoReferenceError):  # row 0 forgot its command: needs the state
        g.filter(np.array([[-0.8, 1.0], [-0.8, 1.0]]))
    moved = np.array([[-0.6, 1.0], [9.0, 9.0]])  # row 1's state is ignored: it has a command
    np.testing.assert_allclose(g.filter(np.array([[-0.8, 1.0], [-0.8, 1.0]]),
                                        state_position=moved).command,
                               [[-0.7, 1.0], [0.3, 1.0]])
    g.reset()
    np.testing.assert_allclose(g.filter(np.array([[0.9, 1.0], [0.9, 1.0]]),
                                        state_position=np.zeros((2, 2))).command,
                               [[0.1, 1.0], [0.1, 1.0]])  # j1: no velocity limit


def test_applied_fallback_makes_the_next_step_start_from_the_measured_position():
    g = _gate(dt=0.1)
    g.filter(np.array([[0.5, 1.0]]), state_position=np.array([0.5, 1.0]))
    out = np.zeros((1, 2))
    assert g.fill_fallback(out, commit=True)  # the robot held 0.5 ...
    np.testing.assert_array_equal(out, [[0.5, 1.0]])
    # ... but sagged to 0.2: the next command is limited from there, not from 0.5.
    r = g.filter(np.array([[0.9, 1.0]]), state_position=np.array([0.2, 1.0]))
    np.testing.assert_allclose(r.command, [[0.3, 1.0]])
    # Without a fallback in between the last command is the reference again.
    np.testing.assert_allclose(g.filter(np.array([[0.9, 1.0]]),
                                        state_position=np.array([-1.0, 1.0])).command,
                               [[0.4, 1.0]], atol=1e-12)


def test_no_fallback_without_anything_to_hold():
    g = _gate(dt=0.1)
    out = np.full((2, 2), 7.0)
    g.size(2)
    assert not g.fill_fallback(out)  # position rows with no command and no measurement
    np.testing.assert_array_equal(out, 7.0)  # nothing written
    assert g.fill_fallback(out, state_position=np.array([0.2, 1.5]))
    np.testing.assert_array_equal(out, [[0.2, 1.5]] * 2)


def test_max_delta_and_effort_interface():
    g = _gate('effort')
    r = g.filter(np.array([[6.0, -3.0], [1.0, 1.0]]))
    np.testing.assert_array_equal(r.command, [[5.0, -2.0], [1.0, 1.0]])
    assert g.counters['joint_clamps'] == [1, 1]
    g = _gate('effort', max_delta=1.0)
    np.testing.assert_array_equal(g.filter(np.array([3.0, -3.0])).command, [[1.0, -1.0]])
    np.testing.assert_array_equal(g.filter(np.array([3.0, -3.0])).command, [[2.0, -2.0]])
    np.testing.assert_array_equal(g.filter(np.array([3.0, -3.0])).command, [[3.0, -2.0]])


def test_velocity_interface_accel_limit():
    g = _gate('velocity', dt=0.1)
    assert g.unbounded_joints == ['j1']
    r = g.filter(np.array([5.0, 5.0]))  # ramps from rest: acc_max * dt = 0.2
    np.testing.assert_allclose(r.command, [[0.2, 5.0]])
    np.testing.assert_allclose(g.filter(np.array([5.0, 5.0])).command, [[0.4, 5.0]])
    g = _gate('velocity')
    np.testing.assert_array_equal(g.filter(np.array([-5.0, 5.0])).command, [[-1.0, 5.0]])


def test_zero_fallback():
    g = _gate('velocity', fallback='zero')
    g.filter(np.array([0.5, 0.5]))
    np.testing.assert_array_equal(g.filter(np.array([NAN, 0.5])).command, [[0.0, 0.0]])
    np.testing.assert_array_equal(g.hold_command(), [[0.0, 0.0]])
    with pytest.raises(ValueError, match='zero'):
        _gate('position', fallback='zero')


def test_hold_command_is_last_safe_copy():
    g = _gate()
    with pytest.raises(NoReferenceError):
        g.hold_command()
    np.testing.assert_array_equal(g.hold_command(state_position=S), [[0.0, 1.0]])
    r = g.filter(np.array([[0.5, 1.0], [3.0, 1.0]]), state_position=S)
    hold = g.hold_command()
    np.testing.assert_array_equal(hold, [[0.5, 1.0], [1.0, 1.0]])
    assert not np.shares_memory(hold, r.command)


def test_single_row_input():
    g = _gate()
    r = g.filter([2.0, 1.0], state_position=S)
    assert r.command.shape == (1, 2) and r.clamped_mask.shape == (1,)
    np.testing.assert_array_equal(r.command, [[1.0, 1.0]])


def test_a_command_sooner_than_dt_moves_at_most_vel_max_times_the_time_passed():
    g = _gate(dt=0.1)  # j0: 1 rad/s (0.1 per step), 2 rad/s^2; j1 unlimited rate
    g.filter(np.array([0.0, 1.0]), state_position=S)
    g.filter(np.array([0.0, 1.0]))  # at rest: two outputs, so the acceleration limit acts
    # Ten commands 10 ms apart (a publisher ten times the control rate): j0 may move
    # 1 rad/s * 0.1 s in all, not ten full steps; the acceleration limit applies per
    # time too (from rest: 2 rad/s^2 * t^2 per command, the velocity builds up).
    positions, velocity = [0.0], 0.0
    for _ in range(10):
        cmd = g.filter(np.array([1.0, 1.5]), step_share=0.1).command[0]
        v = (cmd[0] - positions[-1]) / 0.01
        assert v <= velocity + 2.0 * 0.01 + 1e-9 and v <= 1.0 + 1e-9
        velocity = v
        positions.append(cmd[0])
        assert cmd[1] == 1.5
    # Full acceleration from rest: x = sum_k 2 * (0.01 k) * 0.01 = 0.011 after 0.1 s.
    np.testing.assert_allclose(positions[-1], sum(2.0 * 0.01 * k * 0.01 for k in range(1, 11)),
                               rtol=1e-9)
    # A full share again: the full steps come back: v_prev + acc * dt within vel.
    cmd = g.filter(np.array([1.0, 1.5]), step_share=1.0).command[0]
    np.testing.assert_allclose(cmd[0] - positions[-1], min(0.1, (velocity + 0.2) * 0.1))
    # Without a time (lock-step simulation) every command is one full step.
    g2 = _gate(dt=0.1)
    g2.filter(np.array([0.0, 1.0]), state_position=S)
    g2.filter(np.array([0.0, 1.0]))
    assert g2.filter(np.array([1.0, 1.0])).command[0, 0] == pytest.approx(0.02)
    # A share of 0 moves nothing (and makes no NaN of an unlimited joint's infinite step).
    cmd = g.filter(np.array([-1.0, 0.5]), step_share=0.0).command[0]
    assert np.all(np.isfinite(cmd)) and cmd[1] == 0.5 and abs(cmd[0] - positions[-1]) < 0.2


def test_no_allocation_on_same_batch_size():
    g = _gate(dt=0.1, max_delta=0.5)
    a = np.random.default_rng(0).normal(size=(4096, 2))
    a[::7, 1] = NAN  # exercise the reject path too
    state = np.zeros_like(a)
    first = g.filter(a, state_position=state)
    buf = first.command
    tracemalloc.start()
    second = g.filter(a, state_position=state, step_share=0.3)  # a scaled step too
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # The caller must copy a result it keeps: the next call overwrites it.
    assert second.command is buf and second.clamped_mask is first.clamped_mask
    # One [N, J] array would be a.nbytes (64 KiB); allow only numpy's small change.
    assert peak < 4096


def test_input_not_modified():
    g = _gate(dt=0.1)
    a = np.array([[5.0, NAN], [-5.0, 9.0]], dtype=np.float32)
    before = a.copy()
    r = g.filter(a, state_position=np.zeros((2, 2)))
    np.testing.assert_array_equal(a, before)
    assert not np.shares_memory(a, r.command)
    # Row 0 is held at its measured position (clamped); row 1 moves 0.1 from it.
    np.testing.assert_array_equal(r.command, [[0.0, 0.5], [-0.1, 2.0]])


def test_counters_add_up_with_rejected_batches():
    g = _gate(dt=0.1)
    rng = np.random.default_rng(1)
    nan_rows = clamped_rows = 0
    for _ in range(20):
        a = rng.normal(scale=2.0, size=(8, 2))
        bad = rng.random(8) < 0.2
        a[bad, 0] = NAN
        r = g.filter(a, state_position=np.zeros((8, 2)))
        nan_rows += int(bad.sum())
        clamped_rows += int(r.clamped_mask.sum())
        assert not np.any(r.clamped_mask & r.rejected_mask)
    with pytest.raises(ActionShapeError):
        g.filter(np.zeros((8, 3)))
    g.reject_batch(8)
    assert _rows_seen(g) == 168
    assert g.rejected == nan_rows + 8 and g.clamped == clamped_rows > 0
    # A clamped row has at least one and at most J clamped joints.
    assert g.joint_clamps.max() <= g.clamped <= g.joint_clamps.sum()


def test_new_batch_size_starts_over():
    g = _gate(dt=0.1)
    g.filter(np.zeros((2, 2)) + 0.5, state_position=np.zeros((2, 2)) + 0.5)
    # Rows of a different batch size are different envs: limited from their own state.
    np.testing.assert_allclose(g.filter(np.full((3, 2), -0.5),
                                        state_position=np.full((3, 2), -0.45)).command,
                               [[-0.5, 0.5]] * 3)
    assert g.filter(np.zeros((0, 2))).command.shape == (0, 2)


@pytest.mark.parametrize('action, words', [
    (np.zeros((3, 3)), ['[N, 2]', '(3, 3)']),
    (np.zeros(5), ['[2]', '(5,)']),
    (np.zeros((1, 2, 2)), ['(1, 2, 2)']),
    (np.array([['a', 'b']]), ['dtype']),
])
def test_shape_errors(action, words):
    with pytest.raises(ActionShapeError) as err:
        _gate().filter(action)
    for word in words:
        assert word in str(err.value)


def test_bad_state_shape():
    with pytest.raises(ActionShapeError, match='state_position'):
        _gate().filter(np.zeros((2, 2)), state_position=np.zeros((3, 2)))
