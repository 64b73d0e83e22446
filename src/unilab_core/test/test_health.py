# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The health levels from fabricated counters: shares per period, errors, peers, GPU."""

import math

import pytest
from unilab_core.config import HealthSection
from unilab_core.health import (assess, ERROR, gpu_values, OK, PeerWatch, period_shares,
                                RUN_METRICS, RunMetrics, transport_counters, WARN)

CFG = HealthSection()


def gate(rows, clamped, rejected=0, commands=None, fallbacks=0, cycles=1000, misses=0):
    """Fabricated cumulative safety counters under the common names."""
    return {'rows': rows, 'clamped': clamped, 'rejected': rejected,
            'outputs': (rows if commands is None else commands) + fallbacks,
            'fallbacks': fallbacks, 'cycles': cycles, 'deadline_misses': misses}


def test_quiet_counters_are_ok():
    verdict = assess({}, gate(rows=100, clamped=5), CFG)
    assert (verdict.level, verdict.message) == (OK, 'ok')
    assert verdict.shares['clamp_share'] == pytest.approx(0.05)


def test_mostly_clamped_rows_warn_and_name_the_threshold():
    # The run: 98 % of the rows clamped was reported as OK "ok".
    verdict = assess({}, gate(rows=1000, clamped=980), CFG)
    assert verdict.level == WARN
    assert verdict.message == ('98.0 % of action rows clamped (> 20 %, '
                               'health.clamp_share_warn)')


def test_shares_are_per_period():
    before = gate(rows=1000, clamped=980)
    now = gate(rows=1100, clamped=985)  # 5 of the last 100 rows
    verdict = assess(before, now, CFG)
    assert verdict.shares['clamp_share'] == pytest.approx(0.05)
    assert verdict.level == OK


def test_a_share_with_nothing_in_the_period_is_left_out():
    c = gate(rows=10, clamped=10)
    assert 'clamp_share' not in period_shares(c, c)
    assert assess(c, c, CFG).level == OK


def test_fallbacks_and_deadline_misses_warn_past_their_rates():
    c = gate(rows=100, clamped=0, fallbacks=10, cycles=1000, misses=20)
    verdict = assess({}, c, CFG)
    assert verdict.shares['fallback_share'] == pytest.approx(10 / 110)
    assert verdict.shares['deadline_miss_share'] == pytest.approx(0.02)
    assert verdict.level == WARN
    assert 'watchdog fallbacks' in verdict.message and 'deadline' in verdict.message


def test_thresholds_come_from_the_config():
    c = gate(rows=100, clamped=50)
    assert assess({}, c, HealthSection(clamp_share_warn=0.6)).level == OK
    assert assess({}, c, HealthSection(clamp_share_warn=0.4)).level == WARN


def test_any_reject_warns_by_default():
    verdict = assess({}, gate(rows=1000, clamped=0, rejected=1), CFG)
    assert verdict.level == WARN and 'rejected' in verdict.message


def test_drops_and_stale_input_warn():
    now = {'messages': 200, 'dropped': 4, 'stale': 20}
    verdict = assess({}, now, CFG)
    assert verdict.shares == {'drop_share': 0.02, 'stale_share': 0.1}
    assert verdict.level == WARN
    assert assess({}, {'messages': 200, 'dropped': 1, 'stale': 2}, CFG).level == OK


def test_errors_win_over_warnings_and_both_are_listed():
    verdict = assess({}, gate(rows=10, clamped=10), CFG, errors=['E-STOP latched'],
                     warnings=['overload'])
    assert verdict.level == ERROR
    assert verdict.message.startswith('E-STOP latched; overload; 100.0 %')
    assert verdict.level_name == 'ERROR'


def test_transport_counters_sum_deliveries_losses_and_errors():
    subs = [{'inproc': 10, 'shm': 5, 'shm_skipped': 2, 'error_torn': 1, 'wake_threads': 1},
            {'standard': 3, 'inproc_skipped': 1, 'foreign_host': 2}]
    pubs = [{'inproc': 10, 'descriptors': 4, 'ring_full': 1, 'dropped_all_pinned': 2,
             'serialised_unmapped': 3}]
    assert transport_counters(subs, pubs) == {
        'transport_received': 18, 'transport_sent': 17, 'transport_dropped': 6,
        'transport_errors': 1, 'transport_cross_host': 5}


def test_a_peer_not_seen_yet_warns_then_errs_and_a_gone_one_errs_at_once():
    watch = PeerWatch(['/bridge', '/policy'], timeout_s=10.0, start_s=100.0)
    assert watch.check(['/policy'], now_s=105.0) == ([], ['waiting for peer /bridge'])
    assert watch.check(['/policy'], now_s=111.0) == (
        ['peer /bridge not on the graph after 10 s'], [])
    assert watch.check(['/bridge'], now_s=112.0) == (['peer /policy left the graph'], [])
    assert watch.check(['/bridge', '/policy'], now_s=113.0) == ([], [])


def test_no_gpu_is_one_ok_line():
    assert gpu_values(None) == ({'gpu': 'no GPU in use'}, [])
    values, warn = gpu_values(None, 'NVML unavailable: no driver')
    assert values == {'gpu': 'NVML unavailable: no driver'} and warn == []


def _gpu(**changes):
    g = {'name': 'Fake GPU', 'temperature_c': 60, 'temperature_slowdown_c': 90,
         'power_w': 200.0, 'power_limit_w': 300.0, 'utilization_gpu_pct': 80,
         'utilization_memory_pct': 30, 'memory_used_bytes': 1 << 30,
         'memory_total_bytes': 8 << 30, 'throttle_reasons': []}
    g.update(changes)
    return g


def test_gpu_values_and_slowdown_warnings():
    values, warn = gpu_values(_gpu())
    assert values['gpu.temperature_c'] == '60' and values['gpu.name'] == 'Fake GPU'
    assert warn == []
    _, warn = gpu_values(_gpu(throttle_reasons=['gpu_idle', 'hw_thermal_slowdown']))
    assert warn == ['GPU slowed down: hw_thermal_slowdown']
    _, warn = gpu_values(_gpu(temperature_c=91))
    assert warn == ['GPU at 91 C, slowdown threshold 90 C']
    # The power cap at idle is NVML's normal answer, not a slowdown.
    _, warn = gpu_values(_gpu(throttle_reasons=['sw_power_cap'], utilization_gpu_pct=0))
    assert warn == []


def test_run_metrics_are_rates_between_rows_summed_over_the_nodes():
    m = RunMetrics()
    nan_row = m.row()  # nothing reported yet
    assert set(nan_row) == set(RUN_METRICS)
    assert math.isnan(nan_row['episodes/success_rate'])
    assert math.isnan(nan_row['safety/clamp_share']) and nan_row['transport/dropped'] == 0
    # As published: strings, with other keys beside the counters.
    m.observe('/safety', {'rows': '100', 'clamped': '98', 'rejected': '0', 'outputs': '120',
                          'fallbacks': '20', 'transport_received': '100',
                          'transport_sent': '100', 'transport_dropped': '0',
                          'rt_loop': 'running'})
    m.observe('/bridge', {'episodes_judged': '8', 'episodes_succeeded': '2',
                          'transport_received': '50', 'transport_sent': '50',
                          'transport_dropped': '3'})
    row = m.row()
    assert row['safety/clamp_share'] == pytest.approx(0.98)
    assert row['safety/fallback_share'] == pytest.approx(20 / 120)
    assert row['safety/reject_share'] == 0.0
    assert row['episodes/success_rate'] == pytest.approx(0.25)
    assert row['transport/dropped'] == 3 and row['transport/drop_share'] == pytest.approx(0.01)
    # The next row covers only what happened since: 8 more episodes, all successes.
    m.observe('/bridge', {'episodes_judged': '16', 'episodes_succeeded': '10',
                          'transport_received': '50', 'transport_sent': '50',
                          'transport_dropped': '3'})
    row = m.row()
    assert row['episodes/success_rate'] == 1.0 and row['transport/dropped'] == 0
    assert math.isnan(row['safety/clamp_share'])  # no rows gated in between
