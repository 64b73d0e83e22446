# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench safety``: wake-up timing of the safety loop against an rclpy timer.

Four variants, each ``--duration`` seconds at ``--rate`` Hz (1 kHz, 30 s by
default), all in one run: the UniLab RT loop (rt.RtLoop: clock_nanosleep to
absolute deadlines, SCHED_FIFO, CPU affinity, mlockall) and an rclpy timer on
a steady clock spun by a SingleThreadedExecutor in a thread with the same
SCHED_FIFO priority and affinity; each without and with a CPU load generator
(one busy-loop subprocess pinned to every other CPU). Both run the same work
per tick: one SafetyLoop cycle (6-joint gate + watchdog) while a feeder thread
hands in a fresh action every millisecond, as the node's callback would.

Period error = actual wake minus deadline; a tick that ends after the next
deadline skips the deadlines already past (``deadline_misses``), for both.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import threading
import time

import numpy as np

JOINTS = 6


def _safety_loop():
    from unilab_safety.gate import SafetyGate
    from unilab_safety.limits import load_joint_limits
    from unilab_safety.loop import SafetyLoop
    from unilab_safety.slots import LatestSlot, OutputRing
    spec = {f'j{i}': {'min_position': -3.0, 'max_position': 3.0, 'max_velocity': 3.0,
                      'max_acceleration': 50.0} for i in range(JOINTS)}
    names = list(spec)
    gate = SafetyGate(load_joint_limits({'joint_limits': spec}, names), 'position', 0.001)
    slot, ring = LatestSlot(), OutputRing(1024, 1, JOINTS)
    return SafetyLoop(gate, 1, slot, ring, 0.02, 'hold', lockstep=False), slot, ring


class _Feeder:
    """Hand in a fresh action about every millisecond (a normal-priority thread)."""

    def __init__(self, slot):
        from unilab_safety.loop import ActionIn
        self.slot, self._stop = slot, False
        rng = np.random.default_rng(0)
        self._actions = [ActionIn(i, 0, 0, rng.normal(0, 1, (1, JOINTS)).astype(np.float32),
                                  None, True) for i in range(256)]
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        i = 0
        while not self._stop:
            self.slot.put(self._actions[i & 255])
            i += 1
            time.sleep(0.001)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self._stop = True
        self.thread.join()


def _drain(ring):
    n = 0
    while ring.pop() is not None:
        n += 1
    return n


def _run_unilab(rate, duration, priority, cpus, busy_us):
    from unilab_safety.rt import RtLoop
    loop, slot, ring = _safety_loop()
    rt = RtLoop(loop.cycle, rate, busy_us, priority, cpus, mlock=False,
                stats_size=1 << 20)
    with _Feeder(slot):
        granted = rt.start()
        t_end = time.monotonic() + duration
        emitted = 0
        while time.monotonic() < t_end:
            time.sleep(0.05)
            emitted += _drain(ring)
        rt.stop()
    emitted += _drain(ring)
    return _result(rt.stats.window(), rt.deadline_misses, rt.cycles, granted, loop, emitted)


def _run_rclpy(rate, duration, priority, cpus):
    import rclpy
    from rclpy.clock import Clock, ClockType
    from rclpy.executors import SingleThreadedExecutor
    from unilab_safety.rt import apply_rt_settings
    loop, slot, ring = _safety_loop()
    period = int(round(1e9 / rate))
    errors = np.zeros(int(duration * rate * 1.2) + 16, dtype=np.int64)
    st = {'n': 0, 'misses': 0, 'next': None, 'granted': None}
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=[])
    node = rclpy.create_node('bench_safety_timer', context=ctx)
    steady = Clock(clock_type=ClockType.STEADY_TIME)

    def tick():
        now = time.monotonic_ns()
        d = st['next']
        if st['n'] < len(errors):
            errors[st['n']] = now - d
        st['n'] += 1
        loop.cycle(d)
        # rcl skips the periods already missed; mirror it to count them.
        late = time.monotonic_ns() - d
        skipped = late // period
        st['misses'] += skipped
        st['next'] = d + period * (1 + skipped)

    timer = node.create_timer(period * 1e-9, tick, clock=steady)
    st['next'] = time.monotonic_ns() + timer.time_until_next_call()
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    stop = threading.Event()

    def spin():
        st['granted'] = apply_rt_settings(priority, cpus, mlock=False)
        while not stop.is_set():
            executor.spin_once(timeout_sec=0.01)

    with _Feeder(slot):
        th = threading.Thread(target=spin, daemon=True)
        th.start()
        emitted = 0
        t_end = time.monotonic() + duration
        while time.monotonic() < t_end:
            time.sleep(0.05)
            emitted += _drain(ring)
        stop.set()
        th.join()
    emitted += _drain(ring)
    executor.shutdown()
    node.destroy_node()
    ctx.try_shutdown()
    n = min(st['n'], len(errors))
    return _result(errors[:n], st['misses'], st['n'], st['granted'], loop, emitted)


def _result(errors_ns, misses, cycles, granted, loop, emitted):
    us = errors_ns / 1e3
    c = loop.counters()
    p50, p99, p999 = (np.percentile(us, [50, 99, 99.9]) if len(us) else (0.0, 0.0, 0.0))
    return {
        'cycles': int(cycles), 'deadline_misses': int(misses),
        'p50_us': round(float(p50), 1), 'p99_us': round(float(p99), 1),
        'p999_us': round(float(p999), 1), 'max_us': round(float(us.max()), 1) if len(us) else 0,
        'rt': granted,
        # Every action the loop took was gated: outputs = gated batches (+ fallbacks).
        'actions_gated': c['batches'], 'actions_superseded': c['superseded_actions'],
        'outputs': emitted, 'outputs_not_from_gate': emitted - c['commands'] - c['fallbacks'],
        'fallbacks': c['fallbacks'],
        '_errors_us': us,
    }


def _start_load(rt_cpus):
    others = sorted(set(os.sched_getaffinity(0)) - set(rt_cpus))
    procs = []
    for cpu in others:
        p = subprocess.Popen([sys.executable, '-c', 'while True: pass'])
        try:
            os.sched_setaffinity(p.pid, {cpu})
        except OSError:
            pass
        procs.append(p)
    return procs


def _stop_load(procs):
    for p in procs:
        p.kill()
        p.wait()


def _plot(results, path):
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 4.5))
    top = max(max(r['_errors_us'].max(), 1.0) for r in results.values())
    bins = np.logspace(0, np.log10(top * 1.5), 80)
    for name, r in results.items():
        e = np.maximum(r['_errors_us'], 1.0)
        ax.hist(e, bins=bins, histtype='step', linewidth=1.5,
                label=f"{name}: p99 {r['p99_us']:.0f} us, max {r['max_us']:.0f} us")
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_xlabel('period error: wake-up minus deadline [us] (values < 1 us shown at 1)')
    ax.set_ylabel('ticks')
    ax.set_title('Safety loop at 1 kHz: UniLab RT loop vs rclpy timer')
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def bench_safety(args) -> dict:
    """Period error of the RT loop vs an rclpy timer, idle and under CPU load."""
    duration = float(getattr(args, 'duration', None) or 30.0)
    rate = float(getattr(args, 'rate', None) or 1000.0)
    priority = int(getattr(args, 'rt_priority', None) or 80)
    busy_us = float(getattr(args, 'busy_wait_us', None) or 0.0)
    cpus_all = sorted(os.sched_getaffinity(0))
    rt_cpus = (cpus_all[-1],)
    from unilab_safety.rt import apply_rt_settings
    # mlockall is process-wide: ask once for both variants (fair comparison).
    mlock = apply_rt_settings(0, (), mlock=True)['mlockall']
    # A thread waiting for the GIL asks its holder to drop it only after the switch
    # interval (CPython default 5 ms), which bounds the worst wake-up of any Python
    # loop; both variants run with the same value.
    switch_us = float(getattr(args, 'gil_switch_us', None) or 100.0)
    old_switch = sys.getswitchinterval()
    sys.setswitchinterval(switch_us * 1e-6)
    results = {}
    for loaded in (False, True):
        procs = _start_load(rt_cpus) if loaded else []
        try:
            tag = 'load' if loaded else 'idle'
            results[f'unilab_{tag}'] = _run_unilab(rate, duration, priority, rt_cpus, busy_us)
            results[f'rclpy_{tag}'] = _run_rclpy(rate, duration, priority, rt_cpus)
        finally:
            _stop_load(procs)
    sys.setswitchinterval(old_switch)
    png = getattr(args, 'png', None)
    if png:
        _plot(results, png)
    u, r = results['unilab_load'], results['rclpy_load']
    out = {
        'benchmark': 'safety', 'rate_hz': rate, 'duration_s_per_variant': duration,
        'rt_priority': priority, 'busy_wait_us': busy_us, 'rt_cpu': rt_cpus[0],
        'load_cpus': [c for c in cpus_all if c not in rt_cpus], 'mlockall': mlock,
        'gil_switch_interval_us': switch_us,
        'unilab_p99_us': u['p99_us'], 'unilab_max_us': u['max_us'],
        'rclpy_p99_us': r['p99_us'], 'rclpy_max_us': r['max_us'],
        'deadline_misses': u['deadline_misses'],
        'rclpy_deadline_misses': r['deadline_misses'],
        'ratio_rclpy_vs_unilab_p99': round(r['p99_us'] / max(u['p99_us'], 1e-3), 2),
        'target_met': bool(u['p99_us'] <= 50.0 and u['max_us'] <= 500.0),
        'variants': {k: {kk: vv for kk, vv in v.items() if kk != '_errors_us'}
                     for k, v in results.items()},
        'png': png or None,
        'machine': f'{platform.machine()} {os.cpu_count()} cpus {platform.python_version()}',
        'note': 'timings on a shared machine are noisy; the load generator is one busy '
                'loop per CPU other than the RT CPU',
    }
    return out
