# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Watchdog with explicit times."""

import pytest
from unilab_safety.watchdog import Watchdog


def test_expiry_and_stale_events():
    w = Watchdog(0.5)
    assert w.expired(0.0)  # never fed: no fresh command to trust
    assert w.stale_events == 0
    w.feed(10.0)
    assert not w.expired(10.5)  # exactly at the timeout is still fresh
    assert w.expired(10.51)
    assert w.expired(11.0)  # the same silence counts once
    assert w.stale_events == 1
    w.feed(11.0)
    assert not w.expired(11.2)
    assert w.expired(12.0)
    assert w.stale_events == 2
    assert w.age(12.0) == pytest.approx(1.0)


def test_reset_and_validation():
    w = Watchdog(1.0)
    w.feed(0.0)
    w.reset()
    assert w.expired(0.1) and w.stale_events == 0
    for bad in (0.0, -1.0, float('inf'), float('nan')):
        with pytest.raises(ValueError):
            Watchdog(bad)
