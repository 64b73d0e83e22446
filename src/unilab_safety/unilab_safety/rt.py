# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A deadline-scheduled periodic thread for the safety loop (Linux).

Each cycle sleeps to an absolute deadline on CLOCK_MONOTONIC with
``clock_nanosleep(TIMER_ABSTIME)`` (ctypes: Python 3.11 has no
``time.clock_nanosleep``), so errors do not accumulate the way relative
sleeps do (POSIX clock_nanosleep(3); the pattern of the PREEMPT_RT
"cyclictest" tool). An optional busy-wait tail absorbs the wake-up latency of
the last microseconds. At start the thread asks for ``mlockall``, SCHED_FIFO
and a CPU affinity; each is recorded as granted or refused (with the reason)
and the loop runs either way. Period errors go to a preallocated ring; the
percentiles are computed by the reader, off the hot path.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import select
import threading
import time

import numpy as np

CLOCK_MONOTONIC = 1  # <linux/time.h>
TIMER_ABSTIME = 1
MCL_CURRENT, MCL_FUTURE = 1, 2  # <sys/mman.h>


class _Timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


_libc = ctypes.CDLL(ctypes.util.find_library('c') or None, use_errno=True)
_clock_nanosleep = getattr(_libc, 'clock_nanosleep', None)
if _clock_nanosleep is not None:
    _clock_nanosleep.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Timespec),
                                 ctypes.POINTER(_Timespec)]
    _clock_nanosleep.restype = ctypes.c_int


_timerfd_create = getattr(_libc, 'timerfd_create', None)
_timerfd_settime = getattr(_libc, 'timerfd_settime', None)
TFD_TIMER_ABSTIME = 1  # <sys/timerfd.h>
TFD_CLOEXEC, TFD_NONBLOCK = os.O_CLOEXEC, os.O_NONBLOCK


class _Itimerspec(ctypes.Structure):
    _fields_ = [('it_interval', _Timespec), ('it_value', _Timespec)]


if _timerfd_settime is not None:
    _timerfd_settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec),
                                 ctypes.POINTER(_Itimerspec)]
    _timerfd_settime.restype = ctypes.c_int


class WakeableSleeper:
    """
    Sleep until an absolute deadline or until an eventfd is written, whichever comes first.

    A CLOCK_MONOTONIC timerfd armed with TFD_TIMER_ABSTIME (timerfd_create(2)) and
    the eventfd are polled together with no timeout, so the deadline keeps
    nanosecond resolution (poll's own timeout is whole milliseconds) and an
    arriving action wakes the loop at once. Without timerfd (not Linux) it falls
    back to a millisecond poll timeout.
    """

    def __init__(self, wake_fd):
        self.wake_fd = wake_fd
        self._poll = select.poll()
        self._poll.register(wake_fd, select.POLLIN)
        self.timer_fd = -1
        if _timerfd_create is not None and _timerfd_settime is not None:
            fd = _timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)
            if fd >= 0:
                self.timer_fd = fd
                self._poll.register(fd, select.POLLIN)
        self._spec = _Itimerspec()  # preallocated, reused every cycle
        self._ref = ctypes.byref(self._spec)

    def wait(self, t_ns):
        """Block until ``t_ns`` or a wake; return True if woken early by the eventfd."""
        if self.timer_fd < 0:
            wait_ms = max(0, -(-(t_ns - time.monotonic_ns()) // 1_000_000))
            if self._poll.poll(wait_ms):
                os.eventfd_read(self.wake_fd)
                return True
            return False
        if t_ns <= time.monotonic_ns():
            return False
        v = self._spec.it_value
        v.tv_sec, v.tv_nsec = divmod(t_ns, 1_000_000_000)
        _timerfd_settime(self.timer_fd, TFD_TIMER_ABSTIME, self._ref, None)
        while True:
            try:
                events = self._poll.poll()
                break
            except InterruptedError:  # pragma: no cover - PEP 475 retries already
                continue
        woken = False
        for fd, _ in events:
            if fd == self.wake_fd:
                os.eventfd_read(self.wake_fd)
                woken = True
        if woken:
            return True
        try:
            os.read(self.timer_fd, 8)  # expiration count: clears the readiness
        except BlockingIOError:
            pass
        return False

    def close(self):
        """Close the timerfd (the eventfd belongs to the caller)."""
        if self.timer_fd >= 0:
            os.close(self.timer_fd)
            self.timer_fd = -1


class AbsoluteSleeper:
    """Sleep until an absolute CLOCK_MONOTONIC time in ns (time.monotonic_ns's clock)."""

    def __init__(self):
        self._ts = _Timespec()  # preallocated: the loop reuses it every cycle
        self._ref = ctypes.byref(self._ts)
        self.native = _clock_nanosleep is not None

    def sleep_until(self, t_ns):
        """Block until ``t_ns``; ctypes releases the GIL for the call."""
        if not self.native:  # not Linux/glibc: relative sleep, still deadline-corrected
            dt = t_ns - time.monotonic_ns()
            if dt > 0:
                time.sleep(dt * 1e-9)
            return
        self._ts.tv_sec, self._ts.tv_nsec = divmod(t_ns, 1_000_000_000)
        while _clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, self._ref, None) == errno.EINTR:
            pass


def apply_rt_settings(priority=0, cpus=(), mlock=False):
    """
    Request RT features for the calling thread; return ``{feature: answer}``.

    Each answer is ``'granted'``, ``'refused: <reason>'`` or ``'off'`` (not asked).

    On Linux ``sched_setscheduler(0, ...)`` and ``sched_setaffinity(0, ...)`` act on
    the calling thread only; ``mlockall`` acts on the whole process.
    """
    out = {}
    if mlock:
        rc = _libc.mlockall(MCL_CURRENT | MCL_FUTURE) if hasattr(_libc, 'mlockall') else -1
        out['mlockall'] = 'granted' if rc == 0 else f'refused: {os.strerror(ctypes.get_errno())}'
    else:
        out['mlockall'] = 'off'
    if priority > 0:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(priority)))
            out['sched_fifo'] = 'granted'
        except (OSError, AttributeError) as exc:
            out['sched_fifo'] = f'refused: {exc}'
    else:
        out['sched_fifo'] = 'off'
    if cpus:
        try:
            os.sched_setaffinity(0, set(cpus))
            out['cpu_affinity'] = 'granted'
        except (OSError, ValueError, AttributeError) as exc:
            out['cpu_affinity'] = f'refused: {exc}'
    else:
        out['cpu_affinity'] = 'off'
    return out


class PeriodStats:
    """
    Wake-up errors (actual wake minus deadline, ns) in a preallocated ring.

    ``record`` is the hot-path half (no allocation); ``summary`` copies the
    ring and computes percentiles in the caller's thread.
    """

    def __init__(self, size=1 << 16, buffer=None):
        if size & (size - 1):
            raise ValueError('size must be a power of two')
        # ``buffer``: an int64 array of ``size`` (shared memory for the RT process).
        self.errors_ns = np.zeros(size, dtype=np.int64) if buffer is None else buffer
        self._mask = size - 1
        self.count = 0
        self.max_ns = 0

    def record(self, err_ns):
        """Store one wake-up error."""
        self.errors_ns[self.count & self._mask] = err_ns
        self.count += 1
        if err_ns > self.max_ns:
            self.max_ns = err_ns

    def window(self):
        """Return a copy of the stored errors (the last ``size`` cycles at most)."""
        n = min(self.count, len(self.errors_ns))
        return self.errors_ns[:n].copy()

    def summary(self):
        """Return p50/p99/p99.9 of the stored window and the all-time max, in microseconds."""
        w = self.window()
        if not len(w):
            return {'period_error_p50_us': 0.0, 'period_error_p99_us': 0.0,
                    'period_error_p999_us': 0.0, 'period_error_max_us': 0.0}
        p50, p99, p999 = np.percentile(w, [50.0, 99.0, 99.9]) / 1e3
        return {'period_error_p50_us': round(float(p50), 1),
                'period_error_p99_us': round(float(p99), 1),
                'period_error_p999_us': round(float(p999), 1),
                'period_error_max_us': round(self.max_ns / 1e3, 1)}


class RtLoop:
    """
    Call ``fn(deadline_ns)`` every ``1 / rate_hz`` s in a dedicated thread.

    ``fn`` receives the cycle's deadline (logical time), so what it computes
    does not depend on how late the thread woke. A cycle that ends after the
    next deadline skips the deadlines already past (counted in
    ``deadline_misses``) instead of running a burst of catch-up cycles.
    ``granted`` holds apply_rt_settings' answer once the thread has started.
    """

    def __init__(self, fn, rate_hz, busy_wait_us=0.0, priority=0, cpus=(), mlock=False,
                 name='unilab_safety_rt', stats_size=1 << 16, wake_fd=None, stats=None):
        if not rate_hz > 0:
            raise ValueError(f'rate_hz must be > 0, got {rate_hz}')
        self.period_ns = int(round(1e9 / rate_hz))
        self.busy_ns = int(busy_wait_us * 1e3)
        if not 0 <= self.busy_ns < self.period_ns:
            raise ValueError(f'busy_wait_us must be in [0, period), got {busy_wait_us}')
        self.fn = fn
        # Optional eventfd: a write wakes the loop at once and ``fn`` runs right away
        # (lock-step training, where each step waits for the gate); timed ticks go on.
        self.wake_fd = wake_fd
        self.early_cycles = 0
        self.priority, self.cpus, self.mlock = priority, tuple(cpus), mlock
        self.stats = PeriodStats(stats_size) if stats is None else stats
        self.deadline_misses = 0
        self.cycles = 0
        self.granted = None
        self.error = None
        self._stop = False
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self, timeout_s=5.0):
        """Start the thread and wait until it has applied its RT settings."""
        self._thread.start()
        self._started.wait(timeout_s)
        return self.granted

    def stop(self, timeout_s=2.0):
        """Ask the loop to stop and join it."""
        self._stop = True
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    @property
    def alive(self):
        """Return True while the loop thread runs."""
        return self._thread.is_alive()

    def run_here(self):
        """Run the loop in the calling thread until ``stop`` (the RT process's main thread)."""
        self._run()
        if self.error is not None:
            raise self.error

    def _run(self):
        try:
            self.granted = apply_rt_settings(self.priority, self.cpus, self.mlock)
        finally:
            self._started.set()
        sleeper = AbsoluteSleeper()
        clock = time.monotonic_ns
        period, busy, stats, fn = self.period_ns, self.busy_ns, self.stats, self.fn
        deadline = clock() + period
        waiter = WakeableSleeper(self.wake_fd) if self.wake_fd is not None else None
        try:
            while not self._stop:
                if waiter is not None:
                    if waiter.wait(deadline - busy):
                        # An action arrived: answer it now (lock-step simulation waits for
                        # every answer); the timed ticks go on from the same deadline.
                        fn(deadline)
                        self.early_cycles += 1
                        continue
                else:
                    sleeper.sleep_until(deadline - busy)
                if busy:
                    while clock() < deadline:
                        pass
                stats.record(clock() - deadline)
                fn(deadline)
                self.cycles += 1
                deadline += period
                now = clock()
                if now > deadline:
                    skipped = (now - deadline) // period + 1
                    self.deadline_misses += skipped
                    deadline += skipped * period
        except BaseException as exc:  # noqa: B902 - reported to the node, never silent
            self.error = exc
        finally:
            if waiter is not None:
                waiter.close()
