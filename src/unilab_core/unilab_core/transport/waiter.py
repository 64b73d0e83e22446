# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A thread that sleeps on a ring's futex word and calls a plain callable on news (ROS-free).

``RingReader.wait`` blocks until the writer commits (the futex protocol is
in ``ring_reader``; ``IoxTensorReader.wait`` sleeps in the iceoryx2
listener instead, with the same calls); a ``RingWaiter`` runs that wait on a thread of its own
and calls ``on_news()`` after each wake-up, until ``stop()``. Who reads the
ring then, and on which thread, is the caller's choice: the ROS
subscription either reads on this thread or schedules a task on its node's
executor and blocks here until the task is done.

Two options trade a busy core for latency:

* ``spin_s`` > 0 polls that long after each message before sleeping on the
  futex again (waking a sleeping thread costs far more than a poll; figures
  in docs/transport.md);
* ``prewake_s`` > 0 is for periodic streams (sensors at 20-100 Hz): the
  period is estimated from the arrivals (``pacing.ArrivalClock``), the
  thread sleeps until ``prewake_s`` before the next message is due and polls
  until ``prewake_s`` after it, so no message waits for a sleeping thread to
  wake (about ``2 * prewake_s`` of CPU per message); ``prewake_polled``
  counts the messages caught while polling.

Every futex wait is bounded by ``WAKE_TIMEOUT_S`` so the thread sees a stop
even without news; ``stop()`` also interrupts the wait.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Callable

from unilab_core.transport.iox_reader import IoxTensorReader
from unilab_core.transport.pacing import ArrivalClock
from unilab_core.transport.ring_reader import RingReader

#: how long a waiter sleeps in one futex wait before re-checking for a stop
WAKE_TIMEOUT_S = 0.5


class RingWaiter:
    """Own a thread that waits on ``ring`` and calls ``on_news()`` after each wake-up."""

    def __init__(self, ring: RingReader | IoxTensorReader, *, spin_s: float = 0.0,
                 prewake_s: float = 0.0,
                 name: str = 'unilab_wake', stats: collections.Counter | None = None):
        self.ring = ring
        self.spin_s = float(spin_s)
        self.prewake_s = float(prewake_s)
        #: counters (``prewake_polled``); a caller may pass its own Counter to count into
        self.stats = collections.Counter() if stats is None else stats
        self.name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, on_news: Callable[[], None]) -> None:
        """Start the thread; it calls ``on_news()`` each time the ring has news."""
        self._thread = threading.Thread(target=self._run, args=(on_news,), daemon=True,
                                        name=self.name)
        self._thread.start()

    def stopping(self) -> bool:
        """Return whether ``stop()`` was called."""
        return self._stop.is_set()

    def pause(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s`` unless stopped meanwhile; return whether stopping."""
        return self._stop.wait(timeout_s)

    def stop(self) -> None:
        """Ask the thread to end and interrupt its futex wait (returns at once)."""
        self._stop.set()
        self.ring.interrupt()

    def on_own_thread(self) -> bool:
        """Return whether the caller runs on this waiter's thread."""
        return threading.current_thread() is self._thread

    def join(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the thread to end (not from the thread itself)."""
        if self._thread is not None and not self.on_own_thread():
            self._thread.join(timeout_s)

    def wait_for_news(self, clock: ArrivalClock | None) -> bool:
        """Wait for news on the ring: futex, poll after a message, or poll ahead of the next."""
        ring = self.ring
        if clock is None:
            return ring.wait(WAKE_TIMEOUT_S, self.spin_s)
        sleep = clock.sleep_before_poll(time.monotonic(), self.prewake_s)
        if sleep is None:
            got = ring.wait(WAKE_TIMEOUT_S, self.spin_s)
        elif sleep > 0.0 and ring.wait(sleep):
            got = True  # earlier than due: woken on the futex
        else:
            # Poll from prewake before the due time to prewake after it (or spin_s when
            # longer), then sleep on the futex again.
            window = max(self.spin_s, 2.0 * self.prewake_s)
            t0 = time.monotonic()
            got = ring.wait(WAKE_TIMEOUT_S, window)
            if got and time.monotonic() - t0 <= window:
                self.stats['prewake_polled'] += 1  # caught while polling, no wake-up
        if got:
            clock.observe(time.monotonic())
        return got

    def _run(self, on_news: Callable[[], None]) -> None:
        clock = ArrivalClock() if self.prewake_s > 0.0 else None
        while not self._stop.is_set():
            try:
                if not self.wait_for_news(clock) or self._stop.is_set():
                    continue
            except (AttributeError, TypeError):
                return  # unmapped under us (closing)
            on_news()
