# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The adapter's pacer: its work sleeps through the quiet windows around control steps."""

import pytest
from unilab_adapt.pacer import ControlPacer, STALE_S

MS = 1_000_000


class FakeTime:
    """A wall clock the test moves; ``sleep`` advances it and records the naps."""

    def __init__(self, now_ns: int = 10_000 * MS):
        self.now = now_ns
        self.naps: list[float] = []

    def clock(self) -> int:
        return self.now

    def sleep(self, s: float) -> None:
        self.naps.append(s)
        self.now += round(s * 1e9)


def pacer(rate_hz=50.0, before_ms=4.0, after_ms=1.0):
    t = FakeTime()
    return ControlPacer(rate_hz, before_ms / 1e3, after_ms / 1e3, clock=t.clock,
                        sleep=t.sleep), t


def test_no_phase_known_means_no_pause():
    p, t = pacer()
    assert p.enabled
    p.pause()
    assert t.naps == [] and p.counters() == {'pauses': 0, 'paused_s': 0.0, 'future_stamps': 0}


@pytest.mark.parametrize('since_end_ms, left_ms', [
    (0.0, 1.0),     # a step just ended: 1 ms after it is quiet
    (0.5, 0.5),
    (1.0, 0.0),     # the window's end
    (5.0, 0.0),     # between steps: work
    (15.9, 0.0),
    (16.0, 5.0),    # 4 ms before the next step's end (20 ms period) until 1 ms after it
    (19.0, 2.0),
    (20.0, 1.0),
    (41.0, 0.0),    # two periods on, the same pattern
    (37.5, 3.5),
])
def test_quiet_windows_repeat_every_period_around_the_steps_ends(since_end_ms, left_ms):
    p, t = pacer()
    p.observe(t.now)
    assert p.quiet_left_ns(t.now + round(since_end_ms * MS)) == round(left_ms * MS)


def test_pause_sleeps_to_the_windows_end_and_counts_it():
    p, t = pacer()
    p.observe(t.now - 17 * MS)  # the next step is due to end in 3 ms
    p.pause()
    assert t.naps == [pytest.approx(0.004)]
    p.pause()  # out of the window now: no second nap
    assert len(t.naps) == 1
    assert p.counters() == {'pauses': 1, 'paused_s': 0.004, 'future_stamps': 0}


def test_the_newest_stamp_sets_the_phase_and_unstamped_chunks_are_ignored():
    p, t = pacer()
    p.observe(t.now - 7 * MS)
    p.observe(t.now - 10 * MS - 20 * MS)  # an older chunk arriving late: ignored
    p.observe(0)                          # unstamped: says nothing
    assert p.last_end_ns == t.now - 7 * MS
    assert p.quiet_left_ns(t.now) == 0
    assert p.quiet_left_ns(t.now + 11 * MS) == 3 * MS  # 2 ms before the next end


def test_a_stale_phase_does_not_pause():
    p, t = pacer()
    p.observe(t.now - round(STALE_S * 1e9) - 20 * MS)  # on the phase, but too old
    p.pause()
    assert t.naps == []


@pytest.mark.parametrize('rate_hz, before_ms, after_ms, why', [
    (0.0, 4.0, 1.0, 'control rate unknown'),
    (500.0, 4.0, 3.0, 'over 0.75 of the period'),   # 2 ms period
    (100.0, 6.0, 2.0, 'over 0.75 of the period'),   # 8 ms of 10
    (50.0, 0.0, 0.0, 'switched off'),
])
def test_yielding_is_off_where_it_cannot_help(rate_hz, before_ms, after_ms, why):
    p, t = pacer(rate_hz, before_ms, after_ms)
    assert not p.enabled and why in p.describe()
    p.observe(t.now - 18 * MS)
    p.pause()
    assert t.naps == []


def test_describe_says_the_window():
    p, _ = pacer(100.0, 4.0, 3.0)  # the defaults at 100 Hz: 7 ms of each 10 quiet
    assert p.enabled
    assert p.describe() == ('yielding 4 ms before to 3 ms after each control step '
                            '(period 10 ms)')


def test_a_stamp_from_the_future_is_counted_not_taken():
    # Another host's clock or a broken sender must not switch yielding off for good.
    p, t = pacer()
    p.observe(t.now - 17 * MS)
    p.observe(t.now + 10**12)  # 1000 s ahead
    assert p.last_end_ns == t.now - 17 * MS and p.counters()['future_stamps'] == 1
    p.pause()
    assert t.naps == [pytest.approx(0.004)]
    p.observe(t.now + 5 * MS)  # within a period: this host's own jitter, taken
    assert p.last_end_ns == t.now + 5 * MS and p.counters()['future_stamps'] == 1
