# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Episode starts are applied only with the measured positions of the same step."""

import numpy as np
from unilab_safety.references import EpisodeStarts


def test_a_start_comes_with_the_positions_of_its_own_step():
    e = EpisodeStarts(2, 3)
    e.joint_state(100, np.full((2, 3), 1.0))
    e.joint_state(200, np.full((2, 3), 2.0))
    assert e.task_state(7, 200, [0.0, 1.0], [0.0, 0.0])
    starts, positions = e.for_step(7)
    assert starts.tolist() == [False, True]
    np.testing.assert_array_equal(positions, 2.0)  # the step's stamp, not the newest
    assert e.verified == 1 and e.unverified == 0


def test_no_start_and_unknown_steps_give_nothing():
    e = EpisodeStarts(2, 1)
    e.joint_state(5, np.zeros((2, 1)))
    assert e.task_state(1, 5, [0.0, 0.0], [0.0, 0.0])
    assert e.for_step(1) == (None, None) and e.for_step(2) == (None, None)
    assert e.verified == e.unverified == 0


def test_a_start_without_its_positions_is_refused_and_counted():
    e = EpisodeStarts(2, 1)
    e.joint_state(5, np.zeros((2, 1)))
    assert e.task_state(3, 6, [1.0, 0.0], [0.0, 1.0])  # stamp 6: no joint state
    assert e.for_step(3) == (None, None) and e.unverified == 1


def test_malformed_flags_are_counted_and_memory_stays_bounded():
    e = EpisodeStarts(2, 1, keep=4)
    assert not e.task_state(1, 1, [1.0], [0.0]) and e.bad == 1
    assert not e.task_state(1, 1, [np.nan, 0.0], [0.0, 0.0]) and e.bad == 2
    for k in range(100):
        e.joint_state(k, np.zeros((2, 1)))
        e.task_state(k, k, [0.0, 0.0], [0.0, 0.0])
    assert len(e._positions) == 4 and len(e._starts) == 4


def test_an_action_before_its_task_state_is_expected_and_a_missed_step_counted():
    # The simulator publishes step 3's task state: step 4's is on its way, step 6's not yet.
    e = EpisodeStarts(2, 1)
    assert not e.expects(0)  # no task state seen yet: nothing to wait for
    assert e.task_state(3, 30, [0.0, 0.0], [0.0, 0.0])
    assert e.expects(4) and not e.expects(3) and not e.expects(6)
    # Gated without its task state (it never came): the starts are unknown, counted.
    assert e.for_step(4) == (None, None)
    assert e.missing == 1 and e.verified == e.unverified == 0
    # Once it is here the step is no longer expected, and its starts apply.
    e.joint_state(40, np.ones((2, 1)))
    assert e.task_state(4, 40, [1.0, 0.0], [0.0, 0.0])
    assert not e.expects(4) and e.expects(5)
    starts, positions = e.for_step(4)
    assert starts.tolist() == [True, False] and e.verified == 1 and e.missing == 1
