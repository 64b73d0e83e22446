# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Property test of the gate's contract: no command ever jumps further than the limits allow.

Hypothesis drives the pure loop (gate + watchdog, exactly what the node's RT
loop runs) with any sequence of actions (NaN, +-Inf, huge values, wrong
shapes), measured joint states (NaN, outside the limits, far from the
commands), episode starts, silences that trip the watchdog and e-stop
releases, on a robot (fallbacks applied) and in lock-step simulation. An
independent model of the contract (docs/safety.md) follows along: each row's
reference is its last command, or the measured position (clamped to the
range) at start, after an episode start, after an applied fallback and after
an e-stop release. Every output must be finite, inside the hard range, and at
most one step (``max_velocity * dt``) from that reference; a fallback must be
the hold and is never sent when there is nothing to hold. On a robot the
step is per control step of wall time: a command sooner than ``dt`` after the
last one moves at most ``max_velocity * elapsed`` (no publishing rate moves a
joint faster than its limit).
"""

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import numpy as np
import pytest

from unilab_safety.gate import SafetyGate
from unilab_safety.limits import load_joint_limits
from unilab_safety.loop import ActionIn, SafetyLoop
from unilab_safety.slots import LatestArray, LatestSlot, OutputRing

N, J, DT = 3, 2, 0.1
LIMITS = load_joint_limits({'joint_limits': {
    'j0': {'min_position': -1.0, 'max_position': 1.0, 'max_velocity': 2.0,
           'max_acceleration': 5.0},
    'j1': {'min_position': 0.5, 'max_position': 2.0, 'max_velocity': 1.0},
}}, ['j0', 'j1'])
LO, HI = LIMITS.pos_lo, LIMITS.pos_hi
STEP = LIMITS.vel_max * DT
EPS = 1e-9
PERIOD = 1_000_000
TIMEOUT_S = 0.01
JITTER = 0.25  # the loop's default jitter_allowance

values = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([1e300, -1e300, 1e-300, 0.0]),
                   st.floats(-3.0, 3.0))
good = hnp.arrays(np.float64, (N, J), elements=values)
bad = hnp.arrays(np.float64, st.sampled_from([(N, J + 1), (N + 1, J), (J,), (N, J, 1), (0, J)]),
                 elements=values)
positions = hnp.arrays(np.float64, (N, J), elements=st.one_of(
    st.floats(-3.0, 3.0), st.sampled_from([np.nan, np.inf, 1e300])))
events = st.lists(st.one_of(
    st.tuples(st.just('act'), st.one_of(good, good, bad)),
    st.tuples(st.just('state'), positions),
    st.tuples(st.just('start'), hnp.arrays(bool, (N,))),
    st.tuples(st.just('silence'), st.integers(1, 40)),
    st.tuples(st.just('estop_reset'), st.just(None)),
), min_size=1, max_size=30)


class Contract:
    """The reference rules of docs/safety.md, kept independently of the gate's code."""

    def __init__(self, lockstep):
        self.lockstep = lockstep
        self.gated_at = None  # robot: loop time (ns) of the last gated command
        self.credit = 0.0  # robot: control steps of motion earned and not used yet
        self.last = np.full((N, J), np.nan)  # NaN: no command (start, reset): measured
        self.remeasure = np.zeros(N, bool)  # after an applied fallback: measured
        self.measured = None
        self.next_is_hold = False  # the next command answers a wrong-shape batch: a hold

    def ref(self):
        ref = self.last.copy()
        if self.measured is not None:
            ok = np.all(np.isfinite(self.measured), axis=1)
            use = self.remeasure & ok | np.isnan(self.last).any(axis=1) & ok
            ref[use] = np.clip(self.measured[use], LO, HI)
        return ref

    def check_command(self, cmd, t):
        if self.next_is_hold:
            self.next_is_hold = False
            self.check_fallback(cmd, applied=True)  # every consumer applies a command
            return
        ref = self.ref()
        assert np.all(np.isfinite(ref)), 'a command was sent for a row without reference'
        # On a robot the motion is paid for with time: dt earns one step, at most
        # 1 + JITTER steps are kept, a command uses at most one.
        step, share = STEP, 1.0
        if not self.lockstep and self.gated_at is not None:
            credit = min(self.credit + (t - self.gated_at) * 1e-9 / DT, 1.0 + JITTER)
            share = min(credit, 1.0)
            self.credit = credit - share
        else:
            self.credit = 0.0
        step = STEP * share
        assert np.all(np.abs(cmd - ref) <= step + EPS), (ref, cmd, step)
        self.last, self.remeasure = cmd.copy(), np.zeros(N, bool)
        self.gated_at = t

    def check_fallback(self, cmd, applied):
        hold = np.where(np.isnan(self.last), self.ref(), self.last)
        np.testing.assert_array_equal(cmd, hold)  # the hold, nothing new
        if applied:
            self.last, self.remeasure = cmd.copy(), np.ones(N, bool)


@pytest.mark.parametrize('lockstep', [False, True])
@settings(max_examples=150, deadline=None, derandomize=True)
@given(evts=events)
def test_no_command_leaves_the_limits_or_jumps_from_its_reference(lockstep, evts):
    gate = SafetyGate(LIMITS, 'position', DT)
    slot, ring, state = LatestSlot(), OutputRing(1024, N, J), LatestArray()
    loop = SafetyLoop(gate, N, slot, ring, TIMEOUT_S, 'hold', lockstep=lockstep, state=state)
    model = Contract(lockstep)
    t, seq, start = 0, 0, None

    def tick():
        nonlocal t
        t += PERIOD
        loop.cycle(t)
        while (out := ring.pop()) is not None:
            cmd = out.command
            assert out.kind in ('command', 'fallback')
            assert cmd.shape == (N, J) and np.all(np.isfinite(cmd))
            assert np.all(cmd >= LO) and np.all(cmd <= HI)
            if out.kind == 'command':
                model.check_command(cmd, t)
            else:
                model.check_fallback(cmd, applied=not lockstep)

    for kind, value in evts:
        if kind == 'state':
            state.put(value.copy())
            model.measured = value.copy()
        elif kind == 'start':
            start = value
        elif kind == 'estop_reset':
            loop.request_reset()
            model.last[:] = np.nan  # forgotten: the robot is wherever it stopped
            model.gated_at = None
            tick()
        elif kind == 'silence':
            for _ in range(value):
                tick()
        else:
            if start is not None:
                model.last[start] = np.nan  # a new episode: from the measured position
            model.next_is_hold = value.shape != (N, J)
            slot.put(ActionIn(seq, 0, 0, value, start, value.shape == (N, J)))
            start = None
            seq += 1
            tick()
    for _ in range(20):  # let a waiting action time out or go through
        tick()
    c = loop.counters()
    assert c['passed'] + c['clamped'] + c['rejected'] == c['batches'] * N
    assert ring.overruns == 0
