# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""SafetyLoop cycle by cycle with a fake clock: watchdog, fallbacks, e-stop latch."""

import numpy as np
import pytest

from unilab_safety.gate import SafetyGate
from unilab_safety.limits import load_joint_limits
from unilab_safety.loop import ActionIn, SafetyLoop
from unilab_safety.slots import LatestArray, LatestSlot, OutputRing

LIMITS = load_joint_limits({'joint_limits': {
    'j0': {'min_position': -1.0, 'max_position': 1.0, 'max_velocity': 1.0},
    'j1': {'min_position': 0.0, 'max_position': 2.0, 'max_velocity': 1.0},
}}, ['j0', 'j1'])
N = 2
PERIOD = 1_000_000  # 1 kHz in ns
TIMEOUT_S = 0.02


#: The measured joint positions the loops start from (inside the limits).
MEASURED = np.array([[0.5, 1.0], [0.0, 0.5]])


def _loop(fallback='hold', lockstep=True, interface='position', limits=LIMITS,
          measured=MEASURED, dt=0.1):
    gate = SafetyGate(limits, interface, dt)
    slot, ring, state = LatestSlot(), OutputRing(64, N, 2), LatestArray()
    if measured is not None:
        state.put(np.array(measured, dtype=np.float64))
    loop = SafetyLoop(gate, N, slot, ring, TIMEOUT_S, fallback, lockstep, state=state)
    return loop, slot, ring


def _action(seq, values, shape_ok=True, reset=None):
    return ActionIn(seq, 1, seq * 10, np.asarray(values, dtype=np.float32), reset, shape_ok)


def _drain(ring):
    out = []
    while (e := ring.pop()) is not None:
        out.append(e)
    return out


def test_each_action_is_answered_once_with_its_seq():
    loop, slot, ring = _loop()
    slot.put(_action(5, [[0.5, 1.0], [0.0, 0.5]]))
    loop.cycle(0)
    loop.cycle(PERIOD)  # no new action: nothing (the watchdog is far from its timeout)
    (e,) = _drain(ring)
    assert (e.kind, e.seq, e.version, e.stamp_ns) == ('command', 5, 1, 50)
    np.testing.assert_array_equal(e.command, [[0.5, 1.0], [0.0, 0.5]])
    assert loop.counters()['batches'] == 1 and loop.counters()['passed'] == N


def test_watchdog_fallback_at_first_tick_past_the_timeout_then_every_timeout():
    loop, slot, ring = _loop()
    slot.put(_action(3, [[0.5, 1.0], [0.0, 0.5]]))
    t0 = 7 * PERIOD
    loop.cycle(t0)
    _drain(ring)
    kinds_at = []
    for k in range(1, 70):
        loop.cycle(t0 + k * PERIOD)
        kinds_at += [(k, e.kind) for e in _drain(ring)]
    # Timeout 20 ms at 1 ms ticks: the first tick with age > 20 ms is k = 21, then
    # every 20 ms while the silence lasts (41, 61).
    assert kinds_at == [(21, 'fallback'), (41, 'fallback'), (61, 'fallback')]
    assert loop.fallback_delay_ns <= TIMEOUT_S * 1e9 + PERIOD
    c = loop.counters()
    assert c['fallbacks'] == 3 and c['stale_events'] == 1 and c['batches'] == 1


def test_hold_fallback_repeats_the_last_safe_command_with_its_seq():
    loop, slot, ring = _loop()
    slot.put(_action(9, [[5.0, 1.0], [0.0, np.nan]]))
    loop.cycle(0)
    (cmd,) = _drain(ring)
    for k in range(1, 22):
        loop.cycle(k * PERIOD)
    (fb,) = _drain(ring)
    assert fb.kind == 'fallback' and fb.seq == 9
    np.testing.assert_array_equal(fb.command, cmd.command)


def test_no_fallback_before_the_first_action():
    loop, slot, ring = _loop()
    for k in range(100):
        loop.cycle(k * PERIOD)
    assert _drain(ring) == []


def test_fresh_action_ends_the_silence():
    loop, slot, ring = _loop()
    slot.put(_action(0, [[0.0, 1.0], [0.0, 1.0]]))
    loop.cycle(0)
    for k in range(1, 30):
        loop.cycle(k * PERIOD)
    slot.put(_action(1, [[0.05, 1.0], [0.0, 1.0]]))
    loop.cycle(30 * PERIOD)
    for k in range(31, 45):  # less than a timeout after the fresh action: quiet
        loop.cycle(k * PERIOD)
    assert [e.kind for e in _drain(ring)] == ['command', 'fallback', 'command']


def test_zero_fallback_in_lockstep_leaves_the_reference_alone():
    limits = load_joint_limits({'joint_limits': {
        'j0': {'max_velocity': 1.0, 'max_acceleration': 1.0},
        'j1': {'max_velocity': 1.0, 'max_acceleration': 1.0}}}, ['j0', 'j1'])
    for lockstep, expected in ((True, 0.04), (False, 0.02)):
        # dt = the watchdog timeout: the next action (22 ms later) is a full step away.
        loop, slot, ring = _loop('zero', lockstep, 'velocity', limits, dt=TIMEOUT_S)
        slot.put(_action(0, [[0.5, 0.5], [0.5, 0.5]]))
        loop.cycle(0)
        for k in range(1, 22):
            loop.cycle(k * PERIOD)
        slot.put(_action(1, [[0.9, 0.9], [0.9, 0.9]]))
        loop.cycle(22 * PERIOD)
        cmd, fb, nxt = _drain(ring)
        assert fb.kind == 'fallback' and np.all(fb.command == 0.0)
        # Velocity is rate-limited by max_acceleration * dt = 0.02 from the reference:
        # the first command went 0 -> 0.02; next the reference is that last command in
        # lock-step (0.02 -> 0.04), the applied zero on a robot (0 -> 0.02).
        np.testing.assert_allclose(nxt.command, expected, rtol=1e-6)


def test_estop_latches_until_reset_and_answers_with_estop():
    loop, slot, ring = _loop('estop')
    slot.put(_action(0, [[0.2, 1.0], [0.0, 1.0]]))
    loop.cycle(0)
    first = _drain(ring)[0]
    for k in range(1, 22):
        loop.cycle(k * PERIOD)
    assert [e.kind for e in _drain(ring)] == ['estop']
    assert loop.estopped
    # Fresh actions do not clear it: they get the hold command, kind estop.
    slot.put(_action(1, [[0.9, 0.0], [0.9, 0.0]]))
    loop.cycle(22 * PERIOD)
    (e,) = _drain(ring)
    assert e.kind == 'estop' and e.seq == 1
    np.testing.assert_array_equal(e.command, first.command)
    assert loop.counters()['estop_rows'] == N and loop.counters()['estopped'] == 1
    rid = loop.request_reset()
    assert not loop.reset_done(rid)
    loop.cycle(23 * PERIOD)
    assert loop.reset_done(rid) and not loop.estopped
    assert _drain(ring) == []  # no fallback burst right after the reset
    slot.put(_action(2, [[0.3, 1.0], [0.0, 1.0]]))
    loop.cycle(24 * PERIOD)
    assert [e.kind for e in _drain(ring)] == ['command']
    assert loop.counters()['estop_events'] == 1


def test_wrong_shape_gets_the_hold_command_and_counts_rejected_rows():
    loop, slot, ring = _loop()
    slot.put(_action(0, [[0.5, 1.0], [0.0, 0.5]]))
    loop.cycle(0)
    slot.put(_action(1, np.zeros((3, 2)), shape_ok=False))
    loop.cycle(PERIOD)
    a, b = _drain(ring)
    assert b.kind == 'command' and b.seq == 1
    np.testing.assert_array_equal(b.command, a.command)
    c = loop.counters()
    assert c['passed'] + c['clamped'] + c['rejected'] == c['batches'] * N
    assert c['rejected'] == N


def test_an_episode_start_limits_those_rows_from_the_measured_position():
    loop, slot, ring = _loop(measured=[[0.0, 1.0], [0.0, 1.0]])
    slot.put(_action(0, [[0.0, 1.0], [0.0, 1.0]]))
    loop.cycle(0)
    # The simulator moved env 1 to a new pose (its episode started): its next command is
    # limited from there, one step of 0.1 at most, neither from its last command nor free.
    loop.state.put(np.array([[0.0, 1.0], [0.7, 1.0]]))
    slot.put(_action(1, [[0.9, 1.0], [-0.9, 1.0]], reset=np.array([False, True])))
    loop.cycle(PERIOD)
    _, e = _drain(ring)
    np.testing.assert_allclose(e.command, [[0.1, 1.0], [0.6, 1.0]], rtol=1e-6)


def test_an_action_without_any_reference_waits_for_the_joint_state_then_is_dropped():
    loop, slot, ring = _loop(measured=None)
    slot.put(_action(0, [[0.5, 1.0], [0.5, 1.0]]))
    loop.cycle(0)
    loop.cycle(PERIOD)
    assert _drain(ring) == []  # no joint position yet: nothing to limit against
    loop.state.put(np.array([[0.45, 1.0], [0.0, 1.0]]))
    loop.cycle(2 * PERIOD)  # the joint state arrived: the waiting action goes through
    (e,) = _drain(ring)
    np.testing.assert_allclose(e.command, [[0.5, 1.0], [0.1, 1.0]])
    # Without a joint state for longer than the watchdog timeout, it is dropped.
    loop, slot, ring = _loop(measured=None)
    slot.put(_action(0, [[0.5, 1.0], [0.5, 1.0]]))
    for k in range(40):
        loop.cycle(k * PERIOD)
    assert _drain(ring) == [] and loop.counters()['unreferenced_actions'] == 1
    assert loop.counters()['batches'] == 0


def test_an_estop_release_limits_the_next_command_from_the_measured_position():
    loop, slot, ring = _loop('estop', lockstep=False, measured=[[0.5, 1.0], [0.5, 1.0]])
    slot.put(_action(0, [[0.5, 1.0], [0.5, 1.0]]))
    loop.cycle(0)
    for k in range(1, 30):
        loop.cycle(k * PERIOD)
    assert loop.estopped
    loop.state.put(np.array([[0.2, 1.0], [0.2, 1.0]]))  # the robot came to rest elsewhere
    loop.request_reset()
    loop.cycle(30 * PERIOD)
    _drain(ring)
    slot.put(_action(1, [[0.9, 1.0], [0.9, 1.0]]))
    loop.cycle(31 * PERIOD)
    (e,) = _drain(ring)
    np.testing.assert_allclose(e.command, [[0.3, 1.0], [0.3, 1.0]])


def test_zero_watchdog_fallback_refused_for_positions():
    with pytest.raises(ValueError, match='zero'):
        _loop('zero')
    with pytest.raises(ValueError, match='watchdog_fallback'):
        _loop('brake')


def test_a_resent_action_gets_the_same_command_and_leaves_the_reference_alone():
    # A consumer that re-sends its state (timeout) makes the policy answer the same step
    # twice. The consumer applies one command per step; gating the copy again would move
    # the rate-limit reference on to a command no actuator got.
    loop, slot, ring = _loop()
    slot.put(_action(1, [[0.0, 1.0], [0.0, 1.0]]))
    loop.cycle(0)
    far = [[1.0, 2.0], [-1.0, 0.0]]  # far beyond one step of 0.1 from the reference
    slot.put(_action(2, far))
    loop.cycle(PERIOD)
    (_, first) = _drain(ring)
    slot.put(_action(2, far))  # the same step again
    loop.cycle(2 * PERIOD)
    (again,) = _drain(ring)
    assert (again.kind, again.seq) == ('command', 2)
    np.testing.assert_array_equal(again.command, first.command)
    c = loop.counters()
    assert c['resent_actions'] == 1 and c['batches'] == 2 and c['commands'] == 3
    assert c['passed'] + c['clamped'] + c['rejected'] == c['batches'] * N
    # The next step is limited from the command applied at step 2, not from a second one.
    slot.put(_action(3, far))
    loop.cycle(3 * PERIOD)
    (nxt,) = _drain(ring)
    np.testing.assert_allclose(np.abs(nxt.command - first.command), 0.1, atol=1e-12)


def _robot_loop(**kw):
    gate = SafetyGate(LIMITS, 'position', 0.1)
    slot, ring, state = LatestSlot(), OutputRing(64, N, 2), LatestArray()
    loop = SafetyLoop(gate, N, slot, ring, TIMEOUT_S, 'hold', lockstep=False, state=state,
                      **kw)
    return loop, slot, ring, state


def test_nothing_reaches_the_actuators_before_arming():
    loop, slot, ring, state = _robot_loop(armed=False)
    state.put(np.array(MEASURED), stamp_ns=0)
    for k in range(50):  # actions, then a silence far past the watchdog timeout
        if k < 5:
            slot.put(_action(k, [[0.9, 2.0], [0.9, 2.0]]))
        loop.cycle(k * PERIOD)
    assert _drain(ring) == []  # no command, no fallback
    assert loop.counters()['unarmed_actions'] == 5 and loop.counters()['armed'] == 0
    loop.armed_request = True  # the ~/arm service
    state.put(np.array([[0.2, 1.0], [0.2, 1.0]]), stamp_ns=50 * PERIOD)
    slot.put(_action(9, [[0.9, 2.0], [0.9, 2.0]]))
    loop.cycle(50 * PERIOD)
    (e,) = _drain(ring)  # the first command, one step from where the joints are
    np.testing.assert_allclose(e.command, [[0.3, 1.1], [0.3, 1.1]])


def test_stale_joint_states_stop_the_answers_and_the_watchdog_holds():
    loop, slot, ring, state = _robot_loop(state_timeout_s=0.05)
    state.put(np.array(MEASURED), stamp_ns=0)
    slot.put(_action(0, MEASURED))
    loop.cycle(PERIOD)
    (first,) = _drain(ring)
    kinds = []
    for k in range(2, 120):  # actions keep coming, the joint states stop at t = 0
        slot.put(_action(k, [[0.9, 2.0], [0.9, 2.0]]))
        loop.cycle(k * PERIOD)
        kinds += [(k, e.kind) for e in _drain(ring)]
    # Answered while the state was fresh (50 ms), then only holds: the last command.
    commands = [k for k, kind in kinds if kind == 'command']
    holds = [k for k, kind in kinds if kind == 'fallback']
    assert commands and max(commands) <= 50 and holds and min(holds) > max(commands)
    assert loop.counters()['stale_state_actions'] > 0


@pytest.mark.parametrize('lockstep', [False, True])
def test_on_a_robot_an_action_sooner_than_dt_gets_a_step_scaled_to_the_time(lockstep):
    loop, slot, ring = _loop(lockstep=lockstep, dt=TIMEOUT_S)  # 20 ms control step
    slot.put(_action(0, MEASURED))
    loop.cycle(0)
    # 2 ms later (a publisher ten times the control rate): a tenth of a step.
    slot.put(_action(1, MEASURED + 1.0))
    loop.cycle(2 * PERIOD)
    first, early = _drain(ring)
    moved = early.command - first.command
    full = 1.0 * TIMEOUT_S  # max_velocity * dt
    if lockstep:  # one command per simulated step: always a full step
        np.testing.assert_allclose(moved[:, 0], full)
        assert loop.counters()['early_actions'] == 0
    else:
        np.testing.assert_allclose(moved[:, 0], full * 0.1)
        assert loop.counters()['early_actions'] == 1
    # A control step after it, a full step again.
    slot.put(_action(2, MEASURED + 1.0))
    loop.cycle(22 * PERIOD)
    (late,) = _drain(ring)
    np.testing.assert_allclose((late.command - early.command)[:, 0], full)
    assert loop.counters()['early_actions'] == (0 if lockstep else 1)


def test_on_a_robot_a_late_answer_makes_up_for_the_next_early_one_within_the_allowance():
    loop, slot, ring = _loop(lockstep=False, dt=TIMEOUT_S)
    full = 1.0 * TIMEOUT_S
    times = [0, 22, 40, 60, 200, 200, 200]  # ms: late, early, on time, a pause, a burst
    for seq, t in enumerate(times):
        slot.put(_action(seq, MEASURED - 1.0))
        loop.cycle(t * PERIOD)
    moved = -np.diff([e.command[0, 0] for e in _drain(ring)])
    # 1.1 steps earned a full step and 0.1 kept; 0.9 + 0.1 is a full step again; after the
    # pause 1.25 steps are kept (1 + jitter_allowance): a full step, then a quarter, then
    # nothing until time passes.
    np.testing.assert_allclose(moved, [full, full, full, full, 0.25 * full, 1e-6 * full],
                               rtol=1e-6)
    assert loop.counters()['early_actions'] == 2


@pytest.mark.parametrize('state_timeout_s', [0.0, 0.05])
def test_on_a_robot_an_old_measured_position_is_never_a_reference(state_timeout_s):
    # The joint states stop at t = 0 while the commands walk the arm 0.5 rad away; the
    # policy then pauses (the watchdog holds) and speaks again. Limiting its next command
    # from the measured position of t = 0 would throw the arm 0.4 rad back in one step.
    # With state_timeout_s 0 (not checked: a simulation graph's settings on a robot) the
    # reference still ages out, after the watchdog timeout.
    loop, slot, ring, state = _robot_loop(state_timeout_s=state_timeout_s)
    state.put(np.array(MEASURED), stamp_ns=0)
    target = np.array([[1.0, 2.0], [1.0, 2.0]])
    t = 0
    for k in range(12):  # 0.1 rad per 0.1 s control step toward the target
        t = k * 100 * PERIOD
        slot.put(_action(k, target))
        loop.cycle(t)
    out = _drain(ring)
    last = out[-1].command
    if state_timeout_s:  # checked: actions stop being answered once the state is old
        assert loop.counters()['stale_state_actions'] > 0
        return
    assert last[0, 0] == pytest.approx(1.0)  # walked 0.5 rad from where it was measured
    for k in range(1, 30):  # the policy pauses: holds at the last command
        loop.cycle(t + k * PERIOD)
    holds = [e for e in _drain(ring) if e.kind == 'fallback']
    assert holds and np.allclose(holds[0].command, last)
    t += 200 * PERIOD  # and speaks again
    slot.put(_action(99, target))
    loop.cycle(t)
    (answer,) = _drain(ring)
    # Limited from the hold (its last output), not from the measured position of t = 0.
    assert np.abs(answer.command - last).max() <= 0.1 + 1e-9
    assert loop.counters()['stale_references'] > 0


@pytest.mark.parametrize('interface,stop', [('velocity', [[0.0, 0.0], [0.0, 0.0]]),
                                            ('position', [[0.6, 1.1], [0.1, 0.6]])])
def test_disarming_sends_one_stop_on_every_interface(interface, stop):
    # A forward command controller keeps its last command: after a disarm a velocity
    # command would keep the arm moving. The last word is a stop: zeros, or the hold.
    limits = LIMITS if interface == 'position' else load_joint_limits({'joint_limits': {
        j: {'max_velocity': 1.0, 'has_position_limits': False} for j in ('j0', 'j1')}},
        ['j0', 'j1'], allow_unlimited=True)
    gate = SafetyGate(limits, interface, 0.1)
    slot, ring, state = LatestSlot(), OutputRing(64, N, 2), LatestArray()
    state.put(np.array(MEASURED), stamp_ns=0)
    loop = SafetyLoop(gate, N, slot, ring, TIMEOUT_S, 'hold', lockstep=False, state=state)
    slot.put(_action(0, [[0.6, 1.1], [0.1, 0.6]]))
    loop.cycle(PERIOD)
    (first,) = _drain(ring)
    assert first.kind == 'command' and np.abs(first.command).max() > 0
    loop.armed_request = False
    loop.cycle(2 * PERIOD)
    (last,) = _drain(ring)
    assert last.kind == 'fallback'
    np.testing.assert_allclose(last.command, stop)
    for k in range(3, 100):  # then silence: nothing more reaches the actuators
        slot.put(_action(k, [[0.9, 1.9], [0.9, 1.9]]))
        loop.cycle(k * PERIOD)
    assert _drain(ring) == []


@pytest.mark.parametrize('fallback,kind', [('hold', 'fallback'), ('estop', 'estop')])
def test_on_a_velocity_interface_every_hold_is_a_stop(fallback, kind):
    # Repeating the last velocity command would keep the joints moving at that speed.
    limits = load_joint_limits({'joint_limits': {
        j: {'max_velocity': 1.0, 'has_position_limits': False} for j in ('j0', 'j1')}},
        ['j0', 'j1'], allow_unlimited=True)
    gate = SafetyGate(limits, 'velocity', 0.1)
    slot, ring, state = LatestSlot(), OutputRing(64, N, 2), LatestArray()
    loop = SafetyLoop(gate, N, slot, ring, TIMEOUT_S, fallback, lockstep=False, state=state)
    slot.put(_action(0, [[0.6, 0.5], [0.1, 0.2]]))
    loop.cycle(PERIOD)
    for k in range(2, 40):  # the policy falls silent past the watchdog timeout
        loop.cycle(k * PERIOD)
    first, stop = _drain(ring)
    np.testing.assert_allclose(first.command, [[0.6, 0.5], [0.1, 0.2]], rtol=1e-6)
    assert stop.kind == kind
    np.testing.assert_array_equal(stop.command, 0.0)
    if fallback == 'estop':  # later actions are answered with the same stop
        slot.put(_action(50, [[0.9, 0.9], [0.9, 0.9]]))
        loop.cycle(50 * PERIOD)
        (answer,) = _drain(ring)
        assert answer.kind == 'estop'
        np.testing.assert_array_equal(answer.command, 0.0)
