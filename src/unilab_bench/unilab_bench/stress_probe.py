# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The cyclictest-style probe of ``bench stress``, in its own process.

A thread sleeps to absolute deadlines 1 ms apart (``clock_nanosleep`` on
CLOCK_MONOTONIC, the safety loop's ``unilab_safety.rt.RtLoop`` with nothing to
do) and records how late it woke. Every ``interval`` seconds one JSON line goes
to the output file: the wake-up latency p50/p99/max (microseconds) of that
interval and the cycles counted. Its own process, so no other Python thread
holds the interpreter lock it needs to wake; it is what any control thread of
this machine gets at the same (normal) priority.

``python -m unilab_bench.stress_probe OUT.jsonl INTERVAL_S``; ends on SIGINT/SIGTERM.
"""

from __future__ import annotations

import json
import signal
import sys
import threading

import numpy as np
from unilab_safety.rt import RtLoop

RATE_HZ = 1000.0


def interval_figures(errors_ns: np.ndarray) -> dict:
    """Return the p50/p99/max wake-up latency (us) and the count of ``errors_ns``."""
    if not len(errors_ns):
        return {'cycles': 0, 'p50_us': None, 'p99_us': None, 'max_us': None}
    p50, p99 = np.percentile(errors_ns, [50.0, 99.0]) / 1e3
    return {'cycles': int(len(errors_ns)), 'p50_us': round(float(p50), 1),
            'p99_us': round(float(p99), 1), 'max_us': round(float(errors_ns.max()) / 1e3, 1)}


def main(out: str, interval_s: float) -> int:
    """Run the probe, appending one line per interval to ``out`` until a signal."""
    import time
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    loop = RtLoop(lambda deadline: None, RATE_HZ, name='unilab_stress_probe',
                  stats_size=1 << 16)
    loop.start()
    seen = 0
    t0 = time.monotonic()
    with open(out, 'a') as f:
        while not stop.wait(interval_s):
            stats = loop.stats
            count = stats.count
            n = min(count - seen, len(stats.errors_ns))
            idx = np.arange(count - n, count) & (len(stats.errors_ns) - 1)
            seen = count
            row = {'t': round(time.monotonic() - t0, 3), **interval_figures(stats.errors_ns[idx]),
                   'deadline_misses': loop.deadline_misses}
            f.write(json.dumps(row) + '\n')
            f.flush()
    loop.stop()
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], float(sys.argv[2])))
