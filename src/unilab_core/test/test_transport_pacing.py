# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""ArrivalClock: the due time of a periodic stream's next message, from its arrivals."""

import numpy as np
import pytest
from unilab_core.transport.pacing import ArrivalClock


def test_period_from_jittered_arrivals_and_sleep_before_poll():
    rng = np.random.default_rng(0)
    clock = ArrivalClock()
    assert clock.due() is None and clock.sleep_before_poll(0.0, 0.001) is None
    t = 10.0
    for _ in range(200):  # 20 Hz with +-1 ms jitter
        clock.observe(t + rng.uniform(-1e-3, 1e-3))
        t += 0.05
    assert clock.period == pytest.approx(0.05, abs=5e-4)
    due = clock.due()
    assert due == pytest.approx(clock.last + clock.period)
    # Sleep until 2 ms before the due time, then poll; past that point poll at once.
    assert clock.sleep_before_poll(clock.last, 0.002) == pytest.approx(clock.period - 0.002)
    assert clock.sleep_before_poll(due - 0.001, 0.002) == 0.0


def test_rate_change_restarts_and_pause_forgets():
    clock = ArrivalClock(max_period_s=1.0)
    for i in range(10):
        clock.observe(i * 0.01)  # 100 Hz
    assert clock.period == pytest.approx(0.01)
    last = clock.last
    clock.observe(last + 0.05)  # 5x the period: a new rate, taken as is
    assert clock.period == pytest.approx(0.05)
    clock.observe(clock.last + 2.0)  # longer than max_period_s: not periodic now
    assert clock.period is None and clock.due() is None
    clock.observe(clock.last + 0.02)
    assert clock.period == pytest.approx(0.02)
    clock.observe(clock.last)  # same instant (two messages drained at once): forget
    assert clock.period is None


def test_bad_arguments():
    with pytest.raises(ValueError, match='alpha'):
        ArrivalClock(alpha=0.0)
    with pytest.raises(ValueError, match='max_period_s'):
        ArrivalClock(max_period_s=0.0)
