# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Property test: whatever arrives as an action, only safe commands or the fallback leave.

Hypothesis drives the pure loop (gate + watchdog, exactly what the node's RT
thread runs) with arbitrary arrays: NaN, +-Inf, huge values, wrong shapes, and
silences that trip the watchdog. Every output must be finite, inside the hard
range, and either a rate- and acceleration-limited step from the last command
or the hold (the last command itself); nothing else may be emitted.
"""

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
import numpy as np

from unilab_safety.gate import SafetyGate
from unilab_safety.limits import load_joint_limits
from unilab_safety.loop import ActionIn, SafetyLoop
from unilab_safety.slots import LatestSlot, OutputRing

N, J, DT = 3, 2, 0.1
LIMITS = load_joint_limits({'joint_limits': {
    'j0': {'min_position': -1.0, 'max_position': 1.0, 'max_velocity': 2.0,
           'max_acceleration': 5.0},
    'j1': {'min_position': 0.5, 'max_position': 2.0, 'max_velocity': 1.0},
}}, ['j0', 'j1'])
LO, HI = LIMITS.pos_lo, LIMITS.pos_hi
STEP = LIMITS.vel_max * DT
ACC = LIMITS.acc_max * DT * DT
EPS = 1e-9
PERIOD = 1_000_000

values = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([1e300, -1e300, 1e-300, 0.0]),
                   st.floats(-3.0, 3.0))
good = hnp.arrays(np.float64, (N, J), elements=values)
bad = hnp.arrays(np.float64, st.sampled_from([(N, J + 1), (N + 1, J), (J,), (N, J, 1), (0, J)]),
                 elements=values)
events = st.lists(st.one_of(good, good, bad, st.integers(1, 40)), min_size=1, max_size=25)


def _check_step(prev, prev2, cmd):
    """Return the rows of ``cmd`` that are neither a hold of ``prev`` nor a limited step."""
    held = np.all(cmd == prev, axis=1)
    d = cmd - prev
    ok = np.all(np.abs(d) <= STEP + EPS, axis=1)
    if prev2 is not None:
        # The hard position range is applied last and wins (gate.py): a joint that
        # lands on its bound may brake harder than max_acceleration allows.
        at_bound = (np.abs(cmd - LO) <= EPS) | (np.abs(cmd - HI) <= EPS)
        ok &= np.all((np.abs(d - (prev - prev2)) <= ACC + EPS) | at_bound, axis=1)
    return ~(held | ok)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(events)
def test_only_safe_commands_or_the_fallback_are_emitted(evts):
    gate = SafetyGate(LIMITS, 'position', DT)
    slot, ring = LatestSlot(), OutputRing(1024, N, J)
    loop = SafetyLoop(gate, N, slot, ring, 0.01, 'hold', lockstep=True)
    t, seq, actions = 0, 0, 0
    for e in evts:
        if isinstance(e, int):  # silence of e ticks
            for _ in range(e):
                t += PERIOD
                loop.cycle(t)
            continue
        slot.put(ActionIn(seq, 0, 0, e, None, e.shape == (N, J)))
        seq += 1
        actions += 1
        t += PERIOD
        loop.cycle(t)
    kinds = []
    prev = prev2 = None
    while (out := ring.pop()) is not None:
        kinds.append(out.kind)
        cmd = out.command
        assert out.kind in ('command', 'fallback')
        assert cmd.shape == (N, J) and np.all(np.isfinite(cmd))
        assert np.all(cmd >= LO) and np.all(cmd <= HI)
        if out.kind == 'fallback':
            assert prev is not None
            np.testing.assert_array_equal(cmd, prev)  # the hold, nothing new
            continue
        if prev is not None:
            bad_rows = _check_step(prev, prev2, cmd)
            assert not bad_rows.any(), (prev2, prev, cmd)
        prev2, prev = prev, cmd
    assert kinds.count('command') == actions
    c = loop.counters()
    assert c['passed'] + c['clamped'] + c['rejected'] == c['batches'] * N == actions * N
    assert c['fallbacks'] == kinds.count('fallback') and ring.overruns == 0
