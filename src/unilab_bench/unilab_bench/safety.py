# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench safety``: wake-up timing of the safety loop against an rclpy timer.

Variants, each ``--duration`` seconds at ``--rate`` Hz (1 kHz, 30 s by
default), all in one run, each without and with a CPU load generator (one
busy-loop subprocess pinned to every CPU other than the RT CPU):

- ``unilab``: the safety node's default, the RT loop in its own process
  (rt_process.RtProcess: clock_nanosleep to absolute deadlines, SCHED_FIFO,
  pinned to the RT CPU, mlockall of the small child), fed through the
  shared-memory action slot by this process and drained from the shared
  output ring, as the node does;
- ``unilab_thread``: the same loop as a thread of this process
  (``rt_mode: thread``), sharing the GIL with the feeder and drain threads;
- ``rclpy``: an rclpy timer on a steady clock spun by a SingleThreadedExecutor
  in a thread with the same SCHED_FIFO priority and affinity;
- ``c``: a plain C ``clock_nanosleep`` loop with SCHED_FIFO, affinity and
  mlockall (compiled with ``cc`` at run time; skipped without a compiler): the
  floor this machine allows any loop, Python or not;
- under load only, ``unilab_gilhog`` and ``unilab_thread_gilhog``: the process
  and thread modes while a pure-Python busy thread in this process holds the
  GIL whenever it can (an rclpy executor busy with callbacks): the GIL's share
  of the tail.

The Python variants run the same work per tick: one SafetyLoop cycle (6-joint
gate + watchdog) while a feeder hands in a fresh action every millisecond.
Period error = actual wake minus deadline; a tick that ends after the next
deadline skips the deadlines already past (``deadline_misses``). The variants
run in interleaved rounds of 2 s (load generator off, then on, per round) so
that the drifting noise of a shared machine falls on all of them alike.
"""

from __future__ import annotations

import atexit
import importlib.resources
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
from unilab_core.config import SafetySection
from unilab_safety.build import build_loop
from unilab_safety.loop import ActionIn
from unilab_safety.params import SafetySpec
from unilab_safety.rt import apply_rt_settings, RtLoop
from unilab_safety.rt_process import RtProcess
from unilab_safety.slots import LatestArray, LatestSlot, OutputRing

JOINTS = 6


LIMITS = {'joint_limits': {
    f'j{i}': {'min_position': -3.0, 'max_position': 3.0, 'max_velocity': 3.0,
              'max_acceleration': 50.0} for i in range(JOINTS)}}
_LIMITS_FILE: list[str] = []


def _limits_file() -> str:
    """Return a joint-limits YAML of LIMITS (written once per process, removed at exit)."""
    if not _LIMITS_FILE:
        import yaml
        fd, path = tempfile.mkstemp(prefix='unilab_bench_limits_', suffix='.yaml')
        with os.fdopen(fd, 'w') as f:
            yaml.safe_dump(LIMITS, f)
        atexit.register(os.unlink, path)
        _LIMITS_FILE.append(path)
    return _LIMITS_FILE[0]


def _spec(rate, priority, cpus, busy_us, mlock):
    return SafetySpec(
        joint_names=list(LIMITS['joint_limits']), interface='position', dt=0.001, num_envs=1,
        safety=SafetySection(joint_limits_file=_limits_file(), rate_hz=rate,
                             busy_wait_us=busy_us, rt_priority=priority,
                             cpu_affinity=list(cpus), mlockall=mlock))


#: The measured joint positions every variant starts from (the gate's first reference).
MEASURED = np.zeros((1, JOINTS))


def _safety_loop():
    slot, ring, state = LatestSlot(), OutputRing(1024, 1, JOINTS), LatestArray()
    state.put(MEASURED)
    return build_loop(_spec(1000.0, 0, (), 0.0, False), slot, ring, state), slot, ring


class _Feeder:
    """Hand in a fresh action about every millisecond (a normal-priority thread)."""

    def __init__(self, slot):
        # ``slot``: anything with ``put(ActionIn)`` (LatestSlot or RtProcess).
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


class _GilHog:
    """A pure-Python busy thread in this process (an executor busy with callbacks)."""

    def __init__(self, on):
        self.on, self._stop = on, False
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        x = 0
        while not self._stop:
            x += 1

    def __enter__(self):
        if self.on:
            self.thread.start()
        return self

    def __exit__(self, *exc):
        self._stop = True
        if self.on:
            self.thread.join()


def _drain(ring):
    n = 0
    while ring.pop() is not None:
        n += 1
    return n


def _run_unilab_thread(rate, duration, priority, cpus, busy_us, hog=False):
    loop, slot, ring = _safety_loop()
    rt = RtLoop(loop.cycle, rate, busy_us, priority, cpus, mlock=False,
                stats_size=1 << 20)
    with _Feeder(slot), _GilHog(hog):
        granted = rt.start()
        t_end = time.monotonic() + duration
        emitted = 0
        while time.monotonic() < t_end:
            time.sleep(0.05)
            emitted += _drain(ring)
        rt.stop()
    emitted += _drain(ring)
    return _result(rt.stats.window(), rt.deadline_misses, rt.cycles, granted,
                   loop.counters(), emitted)


def _run_unilab_process(rate, duration, priority, cpus, busy_us, hog=False):
    stats_size = 1 << max(16, int(np.ceil(np.log2(duration * rate * 1.1 + 1))))
    rt = RtProcess(_spec(rate, priority, cpus, busy_us, True), capacity=1024,
                   stats_size=stats_size)
    try:
        granted = rt.start()
        rt.put_state(MEASURED)
        with _Feeder(rt), _GilHog(hog):
            t_end = time.monotonic() + duration
            emitted = 0
            while time.monotonic() < t_end:
                rt.wait_output(0.05)
                emitted += _drain(rt)
        rt.stop()
        emitted += _drain(rt)
        rt.period_summary()  # syncs the error ring's count and max from the child
        errors = rt.stats.window()
        if rt.error is not None:
            raise RuntimeError(rt.error)
        return _result(errors, rt.deadline_misses, rt.cycles, granted, rt.counters(), emitted)
    finally:
        rt.stop()
        rt.close()


def _build_c_loop(tmp):
    cc = shutil.which('cc') or shutil.which('gcc')
    if cc is None:
        return None
    src = importlib.resources.files('unilab_bench') / 'c' / 'rt_loop.c'
    exe = os.path.join(tmp, 'rt_loop')
    r = subprocess.run([cc, '-O2', '-o', exe, str(src)], capture_output=True, text=True)
    return exe if r.returncode == 0 else None


def _run_c(exe, rate, duration, priority, cpus):
    period = int(round(1e9 / rate))
    n = int(duration * rate)
    out = subprocess.run([exe, str(n), str(period), str(cpus[0]), str(priority)],
                         capture_output=True, text=True, check=True).stdout.split()
    ml, af, ff, misses = (int(v) for v in out[:4])
    errors = np.array(out[4:], dtype=np.int64)
    grant = {'mlockall': 'granted' if ml == 0 else 'refused',
             'cpu_affinity': 'granted' if af == 0 else 'refused',
             'sched_fifo': 'granted' if ff == 0 else 'refused'}
    return _result(errors, misses, n, grant, None, 0)


def _run_rclpy(rate, duration, priority, cpus):
    import rclpy
    from rclpy.clock import Clock, ClockType
    from rclpy.executors import SingleThreadedExecutor
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
    return _result(errors[:n], st['misses'], st['n'], st['granted'], loop.counters(), emitted)


def _result(errors_ns, misses, cycles, granted, counters, emitted):
    us = errors_ns / 1e3
    p50, p99, p999 = (np.percentile(us, [50, 99, 99.9]) if len(us) else (0.0, 0.0, 0.0))
    out = {
        'cycles': int(cycles), 'deadline_misses': int(misses),
        'p50_us': round(float(p50), 1), 'p99_us': round(float(p99), 1),
        'p999_us': round(float(p999), 1), 'max_us': round(float(us.max()), 1) if len(us) else 0,
        'rt': granted, '_errors_us': us,
    }
    if counters is not None:
        c = counters
        # Every action the loop took was gated: outputs = gated batches (+ fallbacks).
        out.update({'actions_gated': c['batches'], 'actions_superseded': c['superseded_actions'],
                    'outputs': emitted,
                    'outputs_not_from_gate': emitted - c['commands'] - c['fallbacks'],
                    'fallbacks': c['fallbacks']})
    return out


def _merge(parts):
    """Join the rounds of one variant: errors concatenated, counts summed."""
    errors_ns = np.concatenate([p['_errors_us'] for p in parts]) * 1e3
    first = parts[0]
    merged = _result(errors_ns, sum(p['deadline_misses'] for p in parts),
                     sum(p['cycles'] for p in parts), first['rt'], None, 0)
    for key in ('actions_gated', 'actions_superseded', 'outputs', 'outputs_not_from_gate',
                'fallbacks'):
        if key in first:
            merged[key] = sum(p[key] for p in parts)
    merged['rounds'] = len(parts)
    return merged


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
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8), sharey=True)
    top = max(max(r['_errors_us'].max(), 1.0) for r in results.values())
    bins = np.logspace(0, np.log10(top * 1.5), 70)
    for ax, tag, title in ((axes[0], 'idle', 'no load generator'),
                           (axes[1], 'load', 'load generator on the other core')):
        for name, r in results.items():
            if not name.endswith(tag):
                continue
            e = np.maximum(r['_errors_us'], 1.0)
            ax.hist(e, bins=bins, histtype='step', linewidth=1.4,
                    label=f"{name[:-len(tag) - 1]}: p99 {r['p99_us']:.0f}, "
                          f"max {r['max_us']:.0f} us")
        ax.set_xscale('log')
        ax.set_yscale('log')
        ax.set_title(title, fontsize=10)
        ax.set_xlabel('wake-up minus deadline [us] (< 1 us shown at 1)')
        ax.legend(fontsize=7, loc='upper right')
    axes[0].set_ylabel('ticks')
    fig.suptitle('Safety loop period error at 1 kHz: UniLab RT process (unilab), '
                 'thread mode, rclpy timer, plain C loop', fontsize=11)
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
    # The machine's noise drifts within minutes (shared VM): run the variants in
    # interleaved rounds of ``chunk`` seconds so that each sees the same conditions.
    chunk = min(duration, float(getattr(args, 'chunk_s', None) or 2.0))
    rounds = max(1, int(round(duration / chunk)))
    parts: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as tmp:
        c_exe = _build_c_loop(tmp)
        for _ in range(rounds):
            for loaded in (False, True):
                procs = _start_load(rt_cpus) if loaded else []
                try:
                    tag = 'load' if loaded else 'idle'
                    runs = {
                        f'unilab_{tag}': lambda: _run_unilab_process(
                            rate, chunk, priority, rt_cpus, busy_us),
                        f'unilab_thread_{tag}': lambda: _run_unilab_thread(
                            rate, chunk, priority, rt_cpus, busy_us),
                        f'rclpy_{tag}': lambda: _run_rclpy(rate, chunk, priority, rt_cpus),
                    }
                    if c_exe is not None:
                        runs[f'c_{tag}'] = lambda: _run_c(c_exe, rate, chunk, priority, rt_cpus)
                    if loaded:
                        # Where the thread mode's tail comes from: a Python thread of the
                        # node's process that keeps the GIL busy (as rclpy's executor does).
                        runs['unilab_gilhog_load'] = lambda: _run_unilab_process(
                            rate, chunk, priority, rt_cpus, busy_us, hog=True)
                        runs['unilab_thread_gilhog_load'] = lambda: _run_unilab_thread(
                            rate, chunk, priority, rt_cpus, busy_us, hog=True)
                    for name, run in runs.items():
                        parts.setdefault(name, []).append(run())
                finally:
                    _stop_load(procs)
    order = ['unilab_idle', 'unilab_thread_idle', 'rclpy_idle', 'c_idle', 'unilab_load',
             'unilab_thread_load', 'rclpy_load', 'c_load', 'unilab_gilhog_load',
             'unilab_thread_gilhog_load']
    results = {k: _merge(parts[k]) for k in order if k in parts}
    sys.setswitchinterval(old_switch)
    png = getattr(args, 'png', None)
    if png:
        _plot(results, png)
    u, r = results['unilab_load'], results['rclpy_load']
    t = results['unilab_thread_load']
    c = results.get('c_load')
    out = {
        'benchmark': 'safety', 'rate_hz': rate, 'duration_s_per_variant': rounds * chunk,
        'interleaved_rounds': rounds, 'round_s': chunk,
        'rt_priority': priority, 'busy_wait_us': busy_us, 'rt_cpu': rt_cpus[0],
        'load_cpus': [x for x in cpus_all if x not in rt_cpus], 'mlockall': mlock,
        'gil_switch_interval_us': switch_us, 'unilab_rt_mode': 'process',
        'unilab_p99_us': u['p99_us'], 'unilab_max_us': u['max_us'],
        'rclpy_p99_us': r['p99_us'], 'rclpy_max_us': r['max_us'],
        'deadline_misses': u['deadline_misses'],
        'rclpy_deadline_misses': r['deadline_misses'],
        'unilab_thread_p99_us': t['p99_us'], 'unilab_thread_max_us': t['max_us'],
        'c_baseline_p99_us': c['p99_us'] if c else None,
        'c_baseline_max_us': c['max_us'] if c else None,
        'ratio_rclpy_vs_unilab_p99': round(r['p99_us'] / max(u['p99_us'], 1e-3), 2),
        'ratio_thread_vs_process_p99': round(t['p99_us'] / max(u['p99_us'], 1e-3), 2),
        'gilhog_process_p99_us': results['unilab_gilhog_load']['p99_us'],
        'gilhog_process_max_us': results['unilab_gilhog_load']['max_us'],
        'gilhog_thread_p99_us': results['unilab_thread_gilhog_load']['p99_us'],
        'gilhog_thread_max_us': results['unilab_thread_gilhog_load']['max_us'],
        'target_met': bool(u['p99_us'] <= 50.0 and u['max_us'] <= 500.0),
        # Whether the machine allowed it at all: the C loop under the same load.
        'target_met_by_c_baseline': (bool(c['p99_us'] <= 50.0 and c['max_us'] <= 500.0)
                                     if c else None),
        'variants': {k: {kk: vv for kk, vv in v.items() if kk != '_errors_us'}
                     for k, v in results.items()},
        'png': png or None,
        'machine': f'{platform.machine()} {os.cpu_count()} cpus {platform.python_version()}',
        'note': 'timings on a shared machine are noisy; the load generator is one busy '
                'loop per CPU other than the RT CPU; c = plain C clock_nanosleep loop',
    }
    return out
