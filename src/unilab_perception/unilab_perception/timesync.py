# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Time alignment across sensors (no ROS).

- :class:`SensorBuffer` keeps the recent messages of one sensor in stamp
  order and applies the late / out-of-order policy: a message whose latency
  (arrival - stamp) exceeds ``max_latency_ns`` is dropped as late; one older
  than the newest is re-ordered into place when it is within ``window_ns``
  (policy ``reorder``) or dropped (policy ``drop``, or outside the window). It
  counts every outcome and keeps latency samples per sensor. It also
  remembers the stamps of recent messages that were *rejected* as invalid
  (:meth:`SensorBuffer.reject`): :meth:`SensorBuffer.replaces_rejected` tells
  whether serving a stamp from the kept messages would silently put a
  neighbour in the place of a rejected one.
- :func:`match_nearest` is approximate-time matching driven by one sensor
  (the point cloud): the nearest stamp of each other sensor within ``slop``.
  This is the pivot form of message_filters' ApproximateTime policy; with one
  slow pivot sensor (a 10-20 Hz lidar) and fast partners it picks the same
  sets.
- :func:`interpolate_vector` / :func:`interpolate_quaternion` bring joint states
  and IMU samples to the pivot stamp (linear; slerp for orientations).
"""

from __future__ import annotations

import bisect
from typing import Any

import numpy as np

from unilab_perception.cloud_ops import slerp


class SensorBuffer:
    """Stamp-ordered recent messages of one sensor, with policy and counters."""

    def __init__(self, name: str, capacity: int = 64, window_ns: int = 100_000_000,
                 policy: str = 'reorder', max_latency_ns: int | None = None,
                 latency_samples: int = 1024):
        if policy not in ('reorder', 'drop'):
            raise ValueError(f'policy must be `reorder` or `drop`, got `{policy}`')
        self.name = name
        self.capacity = int(capacity)
        self.window_ns = int(window_ns)
        self.policy = policy
        self.max_latency_ns = max_latency_ns
        self.stamps: list[int] = []
        self.values: list[Any] = []
        self.counters = {'received': 0, 'accepted': 0, 'reordered': 0, 'dropped_late': 0,
                         'dropped_out_of_order': 0, 'duplicate': 0, 'evicted': 0,
                         'rejected': 0}
        #: Stamps of recent invalid messages (sorted, at most ``capacity``).
        self.rejected: list[int] = []
        self._latency = np.zeros(latency_samples, np.float64)
        self._latency_n = 0

    def push(self, stamp_ns: int, value: Any, arrival_ns: int | None = None) -> str:
        """
        Insert one message; return what happened.

        One of ``accepted``, ``reordered``, ``dropped_late``,
        ``dropped_out_of_order`` or ``duplicate`` (same stamp as a kept message:
        a re-send, the first copy is kept).
        """
        self.counters['received'] += 1
        if arrival_ns is not None:
            lat = arrival_ns - stamp_ns
            self._latency[self._latency_n % self._latency.size] = lat * 1e-6
            self._latency_n += 1
            if self.max_latency_ns is not None and lat > self.max_latency_ns:
                return self._count('dropped_late')
        newest = self.stamps[-1] if self.stamps else None
        if newest is not None and stamp_ns <= newest:
            j = bisect.bisect_left(self.stamps, stamp_ns)
            if j < len(self.stamps) and self.stamps[j] == stamp_ns:
                return self._count('duplicate')
            if self.policy == 'drop' or newest - stamp_ns > self.window_ns:
                return self._count('dropped_out_of_order')
            self.stamps.insert(j, stamp_ns)
            self.values.insert(j, value)
            outcome = self._count('reordered')
        else:
            self.stamps.append(stamp_ns)
            self.values.append(value)
            outcome = self._count('accepted')
        if self.rejected:  # a valid re-send takes the place of a rejected message
            k = bisect.bisect_left(self.rejected, stamp_ns)
            if k < len(self.rejected) and self.rejected[k] == stamp_ns:
                del self.rejected[k]
        while len(self.stamps) > self.capacity:
            del self.stamps[0]
            del self.values[0]
            self.counters['evicted'] += 1
        return outcome

    def reject(self, stamp_ns: int) -> None:
        """
        Remember that a message of ``stamp_ns`` was invalid (counted as ``rejected``).

        A stamp whose valid message is kept already stays served by it.
        """
        self.counters['rejected'] += 1
        j = bisect.bisect_left(self.stamps, stamp_ns)
        if j < len(self.stamps) and self.stamps[j] == stamp_ns:
            return
        k = bisect.bisect_left(self.rejected, stamp_ns)
        if k == len(self.rejected) or self.rejected[k] != stamp_ns:
            self.rejected.insert(k, stamp_ns)
        del self.rejected[:-self.capacity]

    def replaces_rejected(self, stamp_ns: int, used: tuple[int, ...]) -> bool:
        """
        Return True if serving ``stamp_ns`` from the kept stamps ``used`` skips a rejected one.

        One stamp used (nearest / hold): a rejected stamp at least as near to
        ``stamp_ns`` was the right message. Two (interpolation): a rejected
        stamp between them is a sample the interpolation silently bridges.
        """
        if not self.rejected:
            return False
        lo, hi = min(used), max(used)
        if lo == hi:
            reach = abs(lo - stamp_ns)
            return any(abs(r - stamp_ns) <= reach for r in self.rejected)
        return any(lo < r < hi for r in self.rejected)

    def _count(self, outcome: str) -> str:
        self.counters[outcome] += 1
        return outcome

    def latency_ms(self) -> dict[str, float]:
        """Return latency p50 / p99 / max (ms) over the recent samples (empty if none)."""
        n = min(self._latency_n, self._latency.size)
        if n == 0:
            return {}
        lat = self._latency[:n]
        return {'p50': float(np.percentile(lat, 50)), 'p99': float(np.percentile(lat, 99)),
                'max': float(lat.max())}

    def nearest(self, stamp_ns: int, slop_ns: int) -> tuple[int, Any] | None:
        """Return ``(stamp, value)`` nearest to ``stamp_ns`` within ``slop_ns``, else None."""
        if not self.stamps:
            return None
        j = bisect.bisect_left(self.stamps, stamp_ns)
        best = None
        for c in (j - 1, j):
            if 0 <= c < len(self.stamps):
                d = abs(self.stamps[c] - stamp_ns)
                if d <= slop_ns and (best is None or d < abs(self.stamps[best] - stamp_ns)):
                    best = c
        return None if best is None else (self.stamps[best], self.values[best])

    def prune_before(self, stamp_ns: int) -> int:
        """Forget messages older than ``stamp_ns``; return how many."""
        j = bisect.bisect_left(self.stamps, stamp_ns)
        del self.stamps[:j]
        del self.values[:j]
        return j

    def bracket(self, stamp_ns: int) -> tuple[int, int] | None:
        """Return indices ``(i, i + 1)`` whose stamps enclose ``stamp_ns``, else None."""
        j = bisect.bisect_right(self.stamps, stamp_ns)
        if j == 0 or j == len(self.stamps):
            if self.stamps and self.stamps[-1] == stamp_ns:
                return (len(self.stamps) - 1, len(self.stamps) - 1)
            return None
        return j - 1, j


def match_nearest(pivot_ns: int, buffers: dict[str, SensorBuffer],
                  slop_ns: int) -> dict[str, tuple[int, Any]] | None:
    """Return each buffer's nearest message within ``slop_ns`` of the pivot, or None."""
    out = {}
    for name, buf in buffers.items():
        hit = buf.nearest(pivot_ns, slop_ns)
        if hit is None:
            return None
        out[name] = hit
    return out


def _weight(buf: SensorBuffer, stamp_ns: int, slop_ns: int):
    br = buf.bracket(stamp_ns)
    if br is None:
        # Outside the samples: hold the nearest one if it is within slop.
        hit = buf.nearest(stamp_ns, slop_ns)
        if hit is None:
            return None
        i = buf.stamps.index(hit[0])
        return i, i, 0.0
    i, j = br
    span = buf.stamps[j] - buf.stamps[i]
    return i, j, (0.0 if span == 0 else (stamp_ns - buf.stamps[i]) / span)


def used_stamps(buf: SensorBuffer, stamp_ns: int, slop_ns: int = 0) -> tuple[int, ...] | None:
    """Return the stamps :func:`interpolate_vector` would use for ``stamp_ns`` (None: none)."""
    w = _weight(buf, stamp_ns, slop_ns)
    return None if w is None else (buf.stamps[w[0]], buf.stamps[w[1]])


def interpolate_vector(buf: SensorBuffer, stamp_ns: int, slop_ns: int = 0,
                       key=lambda v: v) -> np.ndarray | None:
    """Linearly interpolate ``key(value)`` arrays to ``stamp_ns``; None when not covered."""
    w = _weight(buf, stamp_ns, slop_ns)
    if w is None:
        return None
    i, j, a = w
    v0 = np.asarray(key(buf.values[i]), np.float64)
    v1 = np.asarray(key(buf.values[j]), np.float64)
    return (1.0 - a) * v0 + a * v1


def interpolate_quaternion(buf: SensorBuffer, stamp_ns: int, slop_ns: int = 0,
                           key=lambda v: v) -> np.ndarray | None:
    """Slerp ``key(value)`` quaternions (x, y, z, w) to ``stamp_ns``; None when not covered."""
    w = _weight(buf, stamp_ns, slop_ns)
    if w is None:
        return None
    i, j, a = w
    q0 = np.asarray(key(buf.values[i]), np.float64)
    q1 = np.asarray(key(buf.values[j]), np.float64)
    return slerp(q0[None], q1[None], np.array([a]))[0]
