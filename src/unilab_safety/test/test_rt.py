# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The deadline-scheduled loop: behaviour, never wall-clock thresholds."""

import os
import threading
import time

import numpy as np
import pytest

from unilab_safety.rt import AbsoluteSleeper, apply_rt_settings, PeriodStats, RtLoop


def test_absolute_sleep_never_wakes_before_the_deadline():
    s = AbsoluteSleeper()
    for _ in range(5):
        target = time.monotonic_ns() + 200_000
        s.sleep_until(target)
        assert time.monotonic_ns() >= target
    s.sleep_until(time.monotonic_ns() - 1_000_000)  # a past deadline returns at once


def test_rt_settings_report_every_feature_and_never_raise():
    out = {}

    def body():
        # A CPU that does not exist is refused; the other features are off here.
        out.update(apply_rt_settings(priority=0, cpus=(4096,), mlock=False))

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert out['mlockall'] == 'off' and out['sched_fifo'] == 'off'
    assert out['cpu_affinity'].startswith('refused')


def test_rt_settings_answer_granted_or_refused():
    out = {}

    def body():
        out.update(apply_rt_settings(priority=10, cpus=(sorted(os.sched_getaffinity(0))[0],)))

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert out['cpu_affinity'] == 'granted'
    assert out['sched_fifo'] == 'granted' or out['sched_fifo'].startswith('refused')


def test_loop_passes_consecutive_deadlines_and_stops():
    deadlines = []
    loop = RtLoop(deadlines.append, rate_hz=2000.0, priority=0, mlock=False)
    granted = loop.start()
    assert set(granted) == {'mlockall', 'sched_fifo', 'cpu_affinity'}
    t_end = time.monotonic() + 10.0
    while len(deadlines) < 50 and time.monotonic() < t_end:
        time.sleep(0.005)
    loop.stop()
    assert not loop.alive and loop.error is None
    d = np.diff(np.array(deadlines[:50]))
    # Logical deadlines advance by whole periods: one, or more after a missed deadline.
    assert np.all(d % loop.period_ns == 0) and np.all(d > 0)
    assert loop.stats.count >= 50
    assert np.all(loop.stats.window() >= 0)  # never woken before its deadline
    assert loop.cycles + loop.deadline_misses >= (deadlines[-1] - deadlines[0]) // loop.period_ns


def test_loop_records_the_exception_of_its_function():
    def boom(_):
        raise RuntimeError('bug')

    loop = RtLoop(boom, rate_hz=1000.0)
    loop.start()
    loop._thread.join(5.0)
    assert isinstance(loop.error, RuntimeError) and not loop.alive


def test_busy_wait_must_fit_in_a_period():
    with pytest.raises(ValueError):
        RtLoop(lambda _: None, rate_hz=1000.0, busy_wait_us=1000.0)
    with pytest.raises(ValueError):
        RtLoop(lambda _: None, rate_hz=0.0)


def test_period_stats_percentiles_over_the_window():
    s = PeriodStats(size=8)
    for v in range(1, 11):  # 1..10 us; the window keeps the last 8 (3..10)
        s.record(v * 1000)
    assert sorted(s.window().tolist()) == [i * 1000 for i in range(3, 11)]
    out = s.summary()
    assert out['period_error_max_us'] == 10.0
    assert out['period_error_p50_us'] == 6.5
    assert 9.9 <= out['period_error_p99_us'] <= 10.0
