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
reader can verify every byte it was handed. ``--backend iceoryx2`` runs the
``write``, ``hold`` and ``own`` roles on the iceoryx2 backend (NAME is then
the topic, ``--domain`` its ROS domain).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import subprocess
import sys
import time

import numpy as np
from unilab_core.transport.iox_layout import DESCRIPTOR_PREFIX, service_name
from unilab_core.transport.iox_reader import IoxTensorReader
from unilab_core.transport.iox_writer import IoxTensorWriter
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


def spawn(*args: str, stdin=None) -> subprocess.Popen:
    """Start ``python -m unilab_core.transport.stress ARGS`` (stdout piped, text)."""
    return subprocess.Popen([sys.executable, '-m', 'unilab_core.transport.stress', *args],
                            stdout=subprocess.PIPE, stdin=stdin, text=True,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))


def expect_line(proc: subprocess.Popen, prefix: str, timeout_s: float = 30.0) -> str:
    """Return the helper's next line; AssertionError (helper killed) unless it starts so."""
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    if not ready:
        proc.kill()
        raise AssertionError(f'helper said nothing within {timeout_s} s (expected {prefix!r})')
    line = proc.stdout.readline()
    assert line.startswith(prefix), f'helper said {line!r}'
    return line


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
    p.add_argument('--backend', choices=('ring', 'iceoryx2'), default='ring')
    p.add_argument('--domain', type=int, default=0)
    a = p.parse_args(argv)
    if a.backend == 'iceoryx2':
        return _iox_role(a)
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


def _iox_role(a) -> int:
    """Run the ``write``, ``hold`` or ``own`` role on the iceoryx2 backend."""
    if a.role == 'hold':
        deadline = time.monotonic() + 20
        while True:
            try:
                reader = IoxTensorReader(DESCRIPTOR_PREFIX + service_name(a.domain, a.name))
                break
            except ValueError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        print('subscribed', flush=True)
        got = None
        while got is None:
            reader.wait(0.1)
            got = reader.read()
        print(f'held 0 {got.descriptor.slot_seq}', flush=True)
        _sleep_while_parent_lives()  # "mid-read": the test SIGKILLs us here
        return 0
    rng = random.Random(a.seed)
    w = IoxTensorWriter(a.name, a.capacity, a.slots, a.policy, timeout_s=a.timeout_s,
                        domain=a.domain)
    print('ready', flush=True)
    if a.role == 'own':
        _sleep_while_parent_lives()
        return 0
    if a.wait_readers and not w.wait_for_readers(a.wait_readers, a.timeout_s):
        print('no reader', file=sys.stderr)
        return 3
    pause = a.split_pause_us * 1e-6
    shapes = {'p': ((a.capacity,), np.uint8)}
    for i in range(a.count):
        loan = w.loan(shapes)
        fill_pattern(loan.tensors['p'], i, pause * rng.random() if pause else 0.0)
        loan.publish('p', i)
        if a.max_sleep_us:
            time.sleep(rng.random() * a.max_sleep_us * 1e-6)
    if a.wait_readers:  # keep the service until the readers have seen the end
        deadline = time.monotonic() + a.timeout_s
        while time.monotonic() < deadline and w.reader_count() and min(
                nxt for nxt, _ in w.cursors.values()) < a.count:
            time.sleep(0.001)
    else:
        sys.stdin.readline()
    print(json.dumps(w.stats.__dict__), flush=True)
    w.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
