# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A command watchdog with the clock passed in, so that tests need no sleeping."""

import math


class Watchdog:
    """
    Expire when no feed() came within ``timeout_s`` of ``now``.

    It starts expired (nothing received yet is not a fresh command).
    ``stale_events`` counts fed-to-expired transitions seen by expired(), once
    per episode of silence, not once per poll.
    """

    def __init__(self, timeout_s):
        if not timeout_s > 0 or math.isinf(timeout_s):
            raise ValueError(f'timeout_s must be a finite number > 0, got {timeout_s}')
        self.timeout_s = float(timeout_s)
        self.last_feed = None
        self.stale_events = 0
        self._stale = True

    def feed(self, now):
        """Record a fresh command received at time ``now`` (seconds)."""
        self.last_feed = float(now)
        self._stale = False

    def age(self, now):
        """Return seconds since the last feed, or inf if never fed."""
        return math.inf if self.last_feed is None else now - self.last_feed

    def expired(self, now):
        """Return True if the last feed is older than the timeout (or never happened)."""
        stale = self.age(now) > self.timeout_s
        if stale and not self._stale:
            self.stale_events += 1
        self._stale = stale
        return stale

    def reset(self):
        """Forget the last feed; the watchdog is expired again until fed."""
        self.last_feed = None
        self._stale = True
