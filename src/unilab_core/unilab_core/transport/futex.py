# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Linux futex wait / wake on a 32-bit word in shared memory, through ctypes.

A ring's header holds a *notify* word that the writer bumps on every commit;
a reader that found nothing new sleeps in ``FUTEX_WAIT`` on that word and
the writer's ``FUTEX_WAKE`` ends the sleep (futex(2)). The operations are
the *shared* ones (no ``FUTEX_PRIVATE_FLAG``): the kernel keys the wait
queue by the mapped file and offset, so a waiter and a waker in different
processes that map the same segment meet (futex(7), "shared futexes").

``ctypes.CDLL`` functions release the GIL for the duration of the call, so a
thread blocked in ``wait`` does not stop the rest of the interpreter.
``FUTEX_WAIT`` compares the word with the expected value inside the kernel
and returns ``EAGAIN`` at once if it differs, so a wake between the
reader's check and its sleep is never lost.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import platform

FUTEX_WAIT = 0
FUTEX_WAKE = 1
#: syscall numbers (asm/unistd.h): x86-64 202, AArch64 (generic table) 98.
_SYS_FUTEX = {'x86_64': 202, 'amd64': 202, 'aarch64': 98, 'arm64': 98}
INT_MAX = 2 ** 31 - 1


class _Timespec(ctypes.Structure):
    _fields_ = [('tv_sec', ctypes.c_long), ('tv_nsec', ctypes.c_long)]


def _load():
    nr = _SYS_FUTEX.get(platform.machine().lower())
    if nr is None or not os.path.exists('/proc/self'):
        return None, None
    libc = ctypes.CDLL(ctypes.util.find_library('c') or 'libc.so.6', use_errno=True)
    fn = libc.syscall
    fn.restype = ctypes.c_long
    fn.argtypes = [ctypes.c_long, ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    return fn, nr


_SYSCALL, _NR = _load()


def available() -> bool:
    """Return whether futexes can be used here (Linux on x86-64 or AArch64)."""
    return _SYSCALL is not None


def wait(addr: int, expected: int, timeout_s: float) -> bool:
    """
    Sleep while the 32-bit word at ``addr`` equals ``expected``, at most ``timeout_s``.

    Return True if woken or the word already differed, False on timeout.
    Signals (EINTR) count as a wake: the caller re-checks its condition anyway.
    """
    sec = int(timeout_s)
    ts = _Timespec(sec, int((timeout_s - sec) * 1e9))
    r = _SYSCALL(_NR, addr, FUTEX_WAIT, ctypes.c_int32(expected & 0xFFFFFFFF).value,
                 ctypes.addressof(ts), None, 0)
    if r == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EAGAIN, errno.EINTR):
        return True
    if err == errno.ETIMEDOUT:
        return False
    raise OSError(err, f'futex wait: {os.strerror(err)}')


def wake(addr: int, n: int = INT_MAX) -> int:
    """Wake up to ``n`` waiters on the word at ``addr`` (any process); return how many."""
    r = _SYSCALL(_NR, addr, FUTEX_WAKE, n, None, None, 0)
    if r < 0:
        err = ctypes.get_errno()
        raise OSError(err, f'futex wake: {os.strerror(err)}')
    return int(r)
