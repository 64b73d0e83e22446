# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Rehearsal: the chain's steps run once per input, lead_s before it is due, never late."""

import pytest
from unilab_core.rehearsal import Rehearsal
from unilab_core.ros.runtime import chain_rehearsal


def _periodic(r, period=0.02, n=3, t0=10.0):
    for k in range(n):
        r.observe(t0 + k * period)
    return t0 + (n - 1) * period + period  # the next due time


def test_nothing_is_due_before_a_period_is_known_or_without_steps():
    r = Rehearsal(0.004)
    assert r.wait_s(0.0) is None
    r.observe(1.0)
    r.add(lambda: None)
    assert r.wait_s(1.001) is None and not r.run(1.5)


def test_runs_once_per_input_lead_s_before_it_is_due():
    calls = []
    r = Rehearsal(0.004)
    r.add(lambda: calls.append('a'))
    r.add(lambda: calls.append('b'))
    due = _periodic(r)
    assert r.wait_s(due - 0.010) == pytest.approx(0.006)
    assert not r.run(due - 0.010) and calls == []  # too early: nothing runs
    assert r.wait_s(due - 0.003) == 0.0
    assert r.run(due - 0.003) and calls == ['a', 'b']  # the steps in the chain's order
    assert r.wait_s(due - 0.002) is None and not r.run(due - 0.002)  # once per input
    r.observe(due)  # the input came: the next one is rehearsed again
    assert r.run(due + 0.017) and calls == ['a', 'b', 'a', 'b']
    assert r.counters == {'rehearsals': 2, 'rehearsals_late': 0, 'rehearsal_errors': 0}


@pytest.mark.parametrize('late_s', [-0.0019, 0.001])
def test_a_rehearsal_too_close_to_its_input_is_skipped_not_run(late_s):
    """Past the first half of the lead it could still run when the input comes."""
    calls = []
    r = Rehearsal(0.004)
    r.add(lambda: calls.append(1))
    due = _periodic(r)
    assert not r.run(due + late_s) and calls == []
    assert r.counters['rehearsals_late'] == 1
    assert r.wait_s(due + late_s) is None  # skipped for this input, counted once


def test_a_stream_faster_than_twice_the_lead_is_not_rehearsed():
    r = Rehearsal(0.004)
    r.add(lambda: None)
    due = _periodic(r, period=0.002)  # joint states at 500 Hz
    assert r.wait_s(due - 0.001) is None and not r.run(due - 0.001)


def test_a_failing_step_is_counted_and_the_others_still_run():
    calls, counters, said = [], {'published': 3}, []

    def bad():
        raise RuntimeError('no goal')
    r = Rehearsal(0.004, counters=counters, log=said.append)
    r.add(bad)
    r.add(lambda: calls.append(1))
    due = _periodic(r)
    assert r.run(due - 0.004) and calls == [1]
    assert counters == {'published': 3, 'rehearsals': 1, 'rehearsals_late': 0,
                        'rehearsal_errors': 1}
    r.observe(due)
    assert r.run(due + 0.016) and calls == [1, 1] and counters['rehearsal_errors'] == 2
    assert len(said) == 1 and 'bad' in said[0] and 'no goal' in said[0]  # said once


def test_a_lead_must_be_positive():
    with pytest.raises(ValueError, match='lead_s'):
        Rehearsal(0.0)


class _Node:
    def __init__(self, calls, name, rehearsal=None):
        self.rehearsal = rehearsal
        self.rehearse = lambda: calls.append(name)


def test_the_executor_takes_every_nodes_rehearse_in_the_nodes_order():
    calls = []
    r = Rehearsal(0.004)
    nodes = [_Node(calls, 'perception', r), _Node(calls, 'policy'), object(),
             _Node(calls, 'safety')]
    assert chain_rehearsal(nodes) is r
    due = _periodic(r)
    r.run(due - 0.004)
    assert calls == ['perception', 'policy', 'safety']
    assert chain_rehearsal([_Node(calls, 'policy'), object()]) is None
