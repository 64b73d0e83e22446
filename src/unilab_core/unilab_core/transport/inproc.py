# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
In-process hand-off: subscribers in the publisher's process get the very same objects.

No serialisation and no copy: ``publish`` puts the publisher's own
arrays/tensors (numpy arrays made read-only first) into each in-process
subscriber's queue and calls its ``notify`` hook; the subscriber's executor
later drains the queue (the ROS wrapper uses a guard condition, as rclcpp's
intra-process manager uses a waitable). Delivery is queued rather than a
direct call so a lock-step graph (bridge -> ... -> bridge) does not recurse
through publish calls.

Ownership rule (the same as a loaned message): once published, the
publisher must not write into those arrays again; publish new ones.
Policies: ``latest`` keeps the newest ``depth`` items and counts the rest as
skipped; ``reliable`` never drops and counts each time the queue is longer
than ``depth`` as a stall (the publisher cannot wait for a consumer that runs
on its own thread).
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from typing import Any, Callable

import numpy as np


def freeze(tensors: dict[str, Any]) -> dict[str, Any]:
    """Make numpy arrays read-only in place (torch tensors have no such flag) and return them."""
    for arr in tensors.values():
        if isinstance(arr, np.ndarray) and arr.flags.writeable:
            arr.flags.writeable = False
    return tensors


@dataclasses.dataclass
class InprocStats:
    """Counters of one in-process subscriber."""

    delivered: int = 0
    skipped: int = 0
    stalls: int = 0


class InprocSubscriber:
    """A queue of items for one in-process subscriber."""

    def __init__(self, callback: Callable[[Any], None], depth: int = 1,
                 policy: str = 'latest', notify: Callable[[], None] | None = None,
                 alive: Callable[[], bool] | None = None):
        self.callback = callback
        self.alive = alive
        self.depth = max(1, int(depth))
        self.policy = policy
        self.notify = notify
        self.stats = InprocStats()
        self._queue: collections.deque = collections.deque()
        self._lock = threading.Lock()

    def offer(self, item: Any) -> None:
        """Queue ``item`` (called by the registry on publish)."""
        with self._lock:
            self._queue.append(item)
            if len(self._queue) > self.depth:
                if self.policy == 'latest':
                    self._queue.popleft()
                    self.stats.skipped += 1
                else:
                    self.stats.stalls += 1
        if self.notify is not None:
            self.notify()

    def drain(self) -> int:
        """Call the callback for every queued item, oldest first; return how many."""
        n = 0
        while True:
            with self._lock:
                if not self._queue:
                    return n
                item = self._queue.popleft()
            self.stats.delivered += 1
            n += 1
            self.callback(item)


class InprocRegistry:
    """Maps a key (ROS domain, topic) to the in-process subscribers of that topic."""

    def __init__(self):
        self._lock = threading.Lock()
        self._subs: dict[Any, list[InprocSubscriber]] = {}

    def subscribe(self, key: Any, sub: InprocSubscriber) -> InprocSubscriber:
        """Add ``sub`` for ``key`` and return it."""
        with self._lock:
            self._subs.setdefault(key, []).append(sub)
        return sub

    def unsubscribe(self, key: Any, sub: InprocSubscriber) -> None:
        """Remove ``sub``."""
        with self._lock:
            subs = self._subs.get(key, [])
            if sub in subs:
                subs.remove(sub)

    def _live(self, key: Any) -> list[InprocSubscriber]:
        # Subscribers whose owner is gone (node destroyed without close()) are dropped here,
        # or they would hide a remote reader from the publisher's count forever.
        with self._lock:
            subs = self._subs.get(key, [])
            dead = [s for s in subs if s.alive is not None and not s.alive()]
            for s in dead:
                subs.remove(s)
            return list(subs)

    def count(self, key: Any) -> int:
        """Return the number of live in-process subscribers of ``key``."""
        return len(self._live(key))

    def publish(self, key: Any, item: Any) -> int:
        """Hand ``item`` to every live subscriber of ``key``; return how many got it."""
        subs = self._live(key)
        for sub in subs:
            sub.offer(item)
        return len(subs)


#: The process-wide registry used by the ROS wrapper.
REGISTRY = InprocRegistry()
