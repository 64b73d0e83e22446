# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Helper processes for the transport's reliability tests (and for trying it by hand).

``python -m unilab_core.transport.stress write NAME ...`` writes patterned
payloads at random speeds; ``hold NAME`` takes one message and sleeps with it
(to be SIGKILLed mid-read); ``own NAME`` creates a ring and sleeps (to be
killed as a writer); ``sleep NAME`` registers a reader and blocks in the
ring's futex wait, printing ``woke`` and the message index it then reads.
Every payload is a uint64 pattern derived from its message index, so a
reader can verify every byte it was handed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time

import numpy as np
from unilab_core.transport.ring_reader import RingReader
from unilab_core.transport.ring_writer import RingWriter

#: Odd 64-bit constant (golden ratio, Knuth) so consecutive indices give unrelated words.
K = np.uint64(0x9E3779B97F4A7C15)


def fill_pattern(view: np.ndarray, index: int, pause_s: float = 0.0) -> None:
    """Write the pattern of message ``index`` into a uint8 ``view`` (optionally in two halves)."""
    words = view.view(np.uint64)
    half = words.size // 2
    with np.errstate(over='ignore'):
        base = np.uint64(index) * K
        words[:half] = base + np.arange(half, dtype=np.uint64)
        if pause_s:
            time.sleep(pause_s)  # widen the window in which a copying reader can be torn
        words[half:] = base + np.arange(half, words.size, dtype=np.uint64)


def check_pattern(view: np.ndarray, index: int) -> bool:
    """Return whether ``view`` holds exactly the pattern of message ``index``."""
    words = view.view(np.uint64)
    with np.errstate(over='ignore'):
        expect = np.uint64(index) * K + np.arange(words.size, dtype=np.uint64)
    return bool(np.array_equal(words, expect))


def _wait_segment(name: str, timeout_s: float = 20.0, **kw) -> RingReader:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return RingReader(name, **kw)
        except (FileNotFoundError, RuntimeError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _sleep_while_parent_lives(limit_s: float = 120.0) -> None:
    # Never outlive a test run that died without killing us.
    parent = os.getppid()
    deadline = time.monotonic() + limit_s
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.2)


def main(argv=None) -> int:
    """Run one helper role."""
    p = argparse.ArgumentParser(prog='unilab_core.transport.stress')
    p.add_argument('role', choices=('write', 'hold', 'own', 'sleep'))
    p.add_argument('name')
    p.add_argument('--count', type=int, default=1000)
    p.add_argument('--capacity', type=int, default=65536)
    p.add_argument('--slots', type=int, default=4)
    p.add_argument('--policy', default='latest')
    p.add_argument('--max-sleep-us', type=float, default=100.0)
    p.add_argument('--split-pause-us', type=float, default=0.0)
    p.add_argument('--wait-readers', type=int, default=0)
    p.add_argument('--timeout-s', type=float, default=10.0)
    p.add_argument('--seed', type=int, default=0)
    a = p.parse_args(argv)
    if a.role == 'own':
        RingWriter(a.name, a.capacity, a.slots, a.policy)
        print('ready', flush=True)
        _sleep_while_parent_lives()
        return 0
    if a.role == 'sleep':
        reader = _wait_segment(a.name, start=None)
        print('waiting', flush=True)
        while not reader.wait(a.timeout_s):
            pass
        msg = reader.read_next() if reader.policy == 'reliable' else reader.read_latest()
        print(f'woke {msg.index} {check_pattern(msg.data, msg.index)}', flush=True)
        msg.release()
        _sleep_while_parent_lives()
        return 0
    if a.role == 'hold':
        reader = _wait_segment(a.name, start=0)  # reliable: take the first message there is
        msg = (reader.read_next() if reader.policy == 'reliable' else reader.read_latest())
        while msg is None:
            time.sleep(0.001)
            msg = (reader.read_next() if reader.policy == 'reliable' else reader.read_latest())
        print(f'held {msg.slot} {msg.index}', flush=True)
        _sleep_while_parent_lives()  # "mid-read": the test SIGKILLs us here
        return 0
    rng = random.Random(a.seed)
    w = RingWriter(a.name, a.capacity, a.slots, a.policy, timeout_s=a.timeout_s)
    print('ready', flush=True)
    if a.wait_readers and not w.wait_for_readers(a.wait_readers, a.timeout_s):
        print('no reader', file=sys.stderr)
        return 3
    pause = a.split_pause_us * 1e-6
    for i in range(a.count):
        w.write(nbytes=a.capacity, fill=lambda v, i=i: fill_pattern(
            v, i, pause * rng.random() if pause else 0.0))
        if a.max_sleep_us:
            time.sleep(rng.random() * a.max_sleep_us * 1e-6)
    # keep the segment until the readers have seen the end (they stop on their own)
    if a.wait_readers:
        deadline = time.monotonic() + a.timeout_s
        while time.monotonic() < deadline:
            slowest = w.min_cursor()
            if slowest is None or slowest >= a.count:
                break
            time.sleep(0.001)
    else:
        sys.stdin.readline()  # the test closes our stdin when it is done reading
    print(json.dumps(w.stats.__dict__), flush=True)
    w.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
