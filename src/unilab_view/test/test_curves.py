# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The training curves from the graph's status values, one point per trainer status that moved."""

import math

import numpy as np
import pytest
from unilab_view.curves import CURVES, is_trainer_status, TrainingCurves


def trainer(updates, env_steps, ret='nan'):
    # As the trainer publishes them: str() of each value.
    return {'updates': str(updates), 'env_steps': str(env_steps), 'chunks_bad': '0',
            'charts/mean_return': str(ret)}


def gate(rows, clamped):
    return {'armed': '1', 'rows': str(rows), 'clamped': str(clamped), 'passed': '0'}


def bridge(judged, succeeded):
    return {'episodes_judged': str(judged), 'episodes_succeeded': str(succeeded)}


def test_only_the_trainer_status_makes_a_point():
    assert is_trainer_status(trainer(1, 128))
    assert not is_trainer_status(gate(10, 3))
    curves = TrainingCurves()
    assert not curves.observe('/safety', gate(10, 3)) and curves.count == 0
    assert set(CURVES) == {'charts/mean_return', 'episodes/success_rate',
                           'safety/clamp_share'}


def test_rates_over_the_interval_between_points_and_the_trainers_return():
    curves = TrainingCurves()
    assert not curves.observe('/trainer', trainer(0, 0))  # before the first update
    curves.observe('/safety', gate(rows=100, clamped=50))
    assert curves.observe('/trainer', trainer(1, 128, ret=1.5))
    assert not curves.observe('/trainer', trainer(1, 128, ret=1.5))  # nothing moved
    # Next interval: 100 more rows of which 10 clamped; 4 episodes judged, 3 reached.
    curves.observe('/safety', gate(rows=200, clamped=60))
    curves.observe('/bridge', bridge(judged=4, succeeded=3))
    assert curves.observe('/trainer', trainer(30, 3840, ret=2.5))
    x, ret = curves.series('charts/mean_return')
    np.testing.assert_array_equal(x, [128.0, 3840.0])
    np.testing.assert_array_equal(ret, [1.5, 2.5])
    _, clamp = curves.series('safety/clamp_share')
    np.testing.assert_allclose(clamp, [0.5, 0.1])
    _, success = curves.series('episodes/success_rate')
    assert math.isnan(success[0]) and success[1] == 0.75  # NaN kept: a gap in the plot
    # An interval in which the gate's counters did not move: no share (a gap).
    assert curves.observe('/trainer', trainer(31, 3968, ret=2.5))
    assert math.isnan(curves.series('safety/clamp_share')[1][-1])


def test_a_restarted_trainer_starts_the_curves_again():
    curves = TrainingCurves()
    for u in (1, 2, 3):
        curves.observe('/trainer', trainer(u, 100 * u))
    assert curves.observe('/trainer', trainer(1, 50))
    x, _ = curves.series('safety/clamp_share')
    np.testing.assert_array_equal(x, [50.0])


def test_full_curves_halve_their_resolution_and_keep_the_span():
    curves = TrainingCurves(capacity=4)
    for u in range(1, 6):
        assert curves.observe('/trainer', trainer(u, 10 * u, ret=u))
    x, ret = curves.series('charts/mean_return')
    # 10, 20, 30, 40 full -> 10, 30 kept, then 50 appended.
    np.testing.assert_array_equal(x, [10.0, 30.0, 50.0])
    np.testing.assert_array_equal(ret, [1.0, 3.0, 5.0])
    with pytest.raises(ValueError):
        TrainingCurves(capacity=1)
