# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The gate panel's state and colour from the gate's diagnostic values."""

from unilab_view.gate import COLOURS, gate_state, is_gate_status

OK, ERROR = 0, 2


def values(armed=1, estopped=0, passed=0, clamped=0, rejected=0):
    # As the gate publishes them: str() of each counter.
    return {'armed': str(armed), 'estopped': str(estopped), 'passed': str(passed),
            'clamped': str(clamped), 'rejected': str(rejected)}


def test_only_the_gate_status_is_taken():
    assert is_gate_status(values())
    assert not is_gate_status({'rows': '3', 'outputs': '2'})


def test_disarmed_is_grey_whatever_passed():
    g = gate_state(OK, 'ok', values(armed=0, passed=10), None)
    assert (g.state, g.colour, g.armed) == ('disarmed', COLOURS['disarmed'], False)


def test_armed_and_passing_is_green():
    g = gate_state(OK, 'ok', values(passed=20), values(passed=10))
    assert (g.state, g.colour, g.clamped_share) == ('armed', COLOURS['armed'], 0.0)


def test_a_clamp_in_the_period_is_an_intervention():
    # 6 rows in the period (10 -> 14 passed, 0 -> 2 clamped): 2 of 6 clamped.
    g = gate_state(OK, 'ok', values(passed=14, clamped=2), values(passed=10))
    assert g.state == 'intervening' and g.colour == COLOURS['intervening']
    assert abs(g.clamped_share - 2 / 6) < 1e-12
    # The next period without clamps is green again (the counter did not move).
    g = gate_state(OK, 'ok', values(passed=20, clamped=2), values(passed=14, clamped=2))
    assert g.state == 'armed'


def test_refusals_count_and_intervene():
    g = gate_state(OK, 'ok', values(passed=5, rejected=3), values(passed=5, rejected=1))
    assert (g.state, g.refused) == ('intervening', 3)


def test_estop_and_error_level_are_red():
    assert gate_state(OK, 'ok', values(estopped=1), None).colour == COLOURS['estop']
    assert gate_state(ERROR, 'loop stopped', values(), None).state == 'estop'


def test_colours_differ():
    assert len(set(COLOURS.values())) == len(COLOURS)


def test_the_mode_the_view_logs_ignores_interventions_and_names_a_missing_status():
    from unilab_view.gate import GateState
    assert GateState().mode == 'no status'
    passing = {'armed': 'True', 'clamped': '0', 'passed': '10', 'rejected': '0'}
    clamping = dict(passing, clamped='3')
    assert gate_state(0, '', passing, None).mode == 'armed'
    assert gate_state(0, '', clamping, passing).state == 'intervening'
    assert gate_state(0, '', clamping, passing).mode == 'armed'
    assert gate_state(0, '', dict(passing, armed='False'), None).mode == 'disarmed'
    assert gate_state(2, 'fault', passing, None).mode == 'estop'
