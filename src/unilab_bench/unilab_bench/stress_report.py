# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``bench stress``'s figures from its samples: summary, thresholds, the PNG (no ROS here).

A sample is what the bench saw at one moment of the run (``unilab_bench.stress``):
``t`` (s since the measurement began), per robot the latencies of the interval and
the cumulative counters of its safety node, per process CPU and RSS, the
shared-memory segments, and the probe's interval. These functions turn the
samples into the report and judge it against the ``stress`` config section.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

import numpy as np


def percentiles_ms(latencies_s: Iterable[float]) -> dict:
    """Return p50/p99/max (ms) and the count of ``latencies_s``; None figures when empty."""
    a = np.asarray(list(latencies_s), dtype=np.float64)
    if not len(a):
        return {'p50_ms': None, 'p99_ms': None, 'max_ms': None, 'count': 0}
    p50, p99 = np.percentile(a, [50.0, 99.0]) * 1e3
    return {'p50_ms': round(float(p50), 3), 'p99_ms': round(float(p99), 3),
            'max_ms': round(float(a.max()) * 1e3, 3), 'count': int(len(a))}


def slope_per_min(t_s: Iterable[float], values: Iterable[float]) -> float | None:
    """Return the least-squares slope of ``values`` per minute of ``t_s``; None under 3 points."""
    t = np.asarray(list(t_s), dtype=np.float64)
    v = np.asarray(list(values), dtype=np.float64)
    ok = np.isfinite(t) & np.isfinite(v)
    t, v = t[ok], v[ok]
    if len(t) < 3 or np.ptp(t) <= 0:
        return None
    return round(float(np.polyfit(t / 60.0, v, 1)[0]), 3)


def counter_delta(first: Mapping[str, Any], last: Mapping[str, Any], *keys: str) -> int:
    """Return the growth of the sum of ``keys`` between two snapshots (missing keys count 0)."""
    def total(d):
        return sum(int(float(d.get(k, 0) or 0)) for k in keys)
    return total(last) - total(first)


def exceeded(figures: Mapping[str, Any], limits: Mapping[str, float]) -> list[str]:
    """
    Return the names of the thresholds ``figures`` exceed, in ``limits``' order.

    ``limits`` is the ``stress`` config section as a dict. A figure that was not
    measured (None: no GPU, no command seen) is not judged, except that a robot
    never commanded is named as ``robots_commanding``.
    """
    upper = {'gpu_latency_ms': 'gpu_latency_p99_ms',
             'scheduling_latency_us': 'scheduling_latency_max_us',
             'packet_loss': 'packet_loss', 'latency_p99_ms': 'latency_p99_ms',
             'rss_growth_mb_per_min': 'rss_growth_mb_per_min',
             'deadline_miss_share': 'deadline_miss_share'}
    out = []
    for limit, value in limits.items():
        if limit in upper:
            v = figures.get(upper[limit])
            if v is not None and v > value:
                out.append(limit)
        elif limit == 'joint_state_rate_share':
            v = figures.get('joint_state_rate_share_min')
            if v is not None and v < value:
                out.append(limit)
    if figures.get('robots_commanding', 0) < figures.get('robots', 0):
        out.append('robots_commanding')
    return out


def _finite_max(values: Iterable) -> float | None:
    vals = [float(v) for v in values if v is not None and math.isfinite(float(v))]
    return max(vals) if vals else None


def summarise(samples: list[dict], latencies: Mapping[int, list[float]],
              diag_first: Mapping[str, dict], diag_last: Mapping[str, dict],
              robots: int, duration_s: float, nominal_js_hz: float,
              limits: Mapping[str, float]) -> dict:
    """
    Return the report: per robot, in total, per process, and the thresholds exceeded.

    ``latencies`` holds each robot's joint-state stamp -> command arrival times (s)
    over the measurement; ``diag_first`` / ``diag_last`` each node's first and last
    ``/diagnostics`` values of the measurement (``_t``: when the bench received them).
    """
    per_robot = {}
    all_lat = [x for k in range(robots) for x in latencies.get(k, [])]
    misses = cycles = 0
    for k in range(robots):
        name = f'/robot{k}/safety' if robots > 1 else '/safety'
        first, last = diag_first.get(name, {}), diag_last.get(name, {})
        d_miss = counter_delta(first, last, 'deadline_misses')
        d_cyc = counter_delta(first, last, 'loop_cycles')
        dt = float(last.get('_t', 0.0)) - float(first.get('_t', 0.0))
        d_js = counter_delta(first, last, 'joint_states')
        misses, cycles = misses + d_miss, cycles + d_cyc
        per_robot[str(k)] = {
            **{f'latency_{k2}': v for k2, v in percentiles_ms(latencies.get(k, [])).items()},
            'deadline_misses': d_miss, 'loop_cycles': d_cyc,
            'joint_state_rate_share': (round(d_js / (dt * nominal_js_hz), 4)
                                       if dt > 0 and nominal_js_hz > 0 else None),
            'safety_action_latency_p99_us': _float(last.get('action_latency_p99_us')),
            'safety_level': last.get('_level')}
    infer, infer_gpu = [], []
    for k in range(robots):
        last = diag_last.get(f'/robot{k}/policy' if robots > 1 else '/policy', {})
        value = _float(last.get('inference_p99_ms'))
        if value is not None:
            infer.append(value)
            if any(key.startswith('gpu.') for key in last):
                infer_gpu.append(value)
    lost = received = 0
    lost_by_node = {}
    for name, last in sorted(diag_last.items()):
        first = diag_first.get(name, {})
        node_lost = counter_delta(first, last, 'transport_dropped', 'transport_errors')
        lost += node_lost
        received += counter_delta(first, last, 'transport_received')
        if node_lost:
            lost_by_node[name] = node_lost
    total = percentiles_ms(all_lat)
    procs = _processes(samples)
    probe = [s['probe'] for s in samples if s.get('probe', {}).get('cycles')]
    figures = {
        'robots': robots, 'duration_s': round(duration_s, 1),
        'robots_commanding': sum(1 for k in range(robots) if latencies.get(k)),
        'latency_p50_ms': total['p50_ms'], 'latency_p99_ms': total['p99_ms'],
        'latency_max_ms': total['max_ms'], 'commands_timed': total['count'],
        'latency_p99_ms_worst_robot': _finite_max(r['latency_p99_ms']
                                                  for r in per_robot.values()),
        'messages_lost': lost, 'messages_received': received,
        'messages_lost_by_node': lost_by_node,
        'packet_loss': round(lost / max(lost + received, 1), 6),
        'deadline_misses': misses, 'loop_cycles': cycles,
        'deadline_miss_share': round(misses / cycles, 6) if cycles else None,
        'joint_state_rate_share_min': _min_or_none(r['joint_state_rate_share']
                                                   for r in per_robot.values()),
        'scheduling_latency_p99_us': _finite_max(p['p99_us'] for p in probe),
        'scheduling_latency_max_us': _finite_max(p['max_us'] for p in probe),
        'rss_growth_mb_per_min': _finite_max(p['rss_growth_mb_per_min']
                                             for p in procs.values()),
        'rss_total_growth_mb_per_min': slope_per_min(
            [s['t'] for s in samples],
            [sum(p['rss_mb'] for p in s['processes'].values()) for s in samples]),
        'cpu_total_pct_mean': round(float(np.mean([sum(p['cpu_pct'] for p in
                                                       s['processes'].values())
                                                   for s in samples])), 1) if samples else None,
        'shm_segments_max': max((s['shm']['count'] for s in samples), default=None),
        'shm_bytes_max': max((s['shm']['bytes'] for s in samples), default=None),
        # The policy nodes' inference time (their last period's p99); judged against the
        # seed's GPU latency only where the policy runs on a GPU (NVML values present).
        'inference_p99_ms': max(infer, default=None),
        'gpu_latency_p99_ms': max(infer_gpu, default=None),
    }
    figures['per_robot'] = per_robot
    figures['processes'] = procs
    figures['thresholds'] = dict(limits)
    figures['thresholds_exceeded'] = exceeded(figures, limits)
    return figures


def _float(v) -> float | None:
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def _min_or_none(values: Iterable) -> float | None:
    vals = [v for v in values if v is not None]
    return min(vals) if vals else None


def _processes(samples: list[dict]) -> dict:
    names = sorted({n for s in samples for n in s['processes']})
    out = {}
    for n in names:
        rows = [(s['t'], s['processes'][n]) for s in samples if n in s['processes']]
        out[n] = {'cpu_pct_mean': round(float(np.mean([r['cpu_pct'] for _, r in rows])), 1),
                  'rss_mb_first': round(rows[0][1]['rss_mb'], 1),
                  'rss_mb_last': round(rows[-1][1]['rss_mb'], 1),
                  'rss_growth_mb_per_min': slope_per_min([t for t, _ in rows],
                                                         [r['rss_mb'] for _, r in rows])}
    return out


def plot(samples: list[dict], robots: int, path: str, title: str) -> None:
    """Write the time series of the run to a PNG (matplotlib, Agg)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    t = [s['t'] for s in samples]
    fig, ax = plt.subplots(2, 3, figsize=(16, 8.5))
    a = ax[0, 0]
    for k in range(robots):
        a.plot(t, [s['robots'][k]['latency_p99_ms'] for s in samples], lw=0.7, alpha=0.6)
    a.plot(t, [s['latency_p99_ms'] for s in samples], 'k', lw=2, label='all robots')
    a.set_title('control latency p99 per interval (ms)\njoint-state stamp -> command arrival')
    a.legend(fontsize=8)
    a = ax[0, 1]
    for k in range(robots):
        a.plot(t, [s['robots'][k]['joint_state_rate_share'] for s in samples], lw=0.7)
    a.set_title('joint states received by each safety node\n(share of the nominal rate)')
    a = ax[0, 2]
    for k in range(robots):
        a.plot(t, [s['robots'][k]['deadline_misses'] for s in samples], lw=0.7)
    a.plot(t, [s['deadline_misses'] for s in samples], 'k', lw=2, label='all robots')
    a.plot(t, [s['messages_lost'] for s in samples], 'r--', lw=1.5, label='messages lost')
    a.set_title('safety-loop deadline misses, messages lost (cumulative)')
    a.legend(fontsize=8)
    a = ax[1, 0]
    names = sorted({n for s in samples for n in s['processes']})
    for n in names:
        a.plot(t, [s['processes'].get(n, {}).get('cpu_pct') for s in samples], lw=0.8,
               label=n if len(names) <= 8 or not n.startswith('robot') else None)
    a.plot(t, [sum(p['cpu_pct'] for p in s['processes'].values()) for s in samples], 'k',
           lw=2, label='total')
    a.set_title('CPU per process (% of one core)')
    a.legend(fontsize=7, ncol=2)
    a = ax[1, 1]
    for n in names:
        a.plot(t, [s['processes'].get(n, {}).get('rss_mb') for s in samples], lw=0.8)
    b = a.twinx()
    b.plot(t, [s['shm']['bytes'] / 2**20 for s in samples], 'k--', lw=1.5)
    b.set_ylabel('/dev/shm (MiB, dashed)')
    a.set_title('RSS per process (MB); /dev/shm bytes')
    a = ax[1, 2]
    a.plot(t, [s['probe'].get('p99_us') for s in samples], label='p99')
    a.plot(t, [s['probe'].get('max_us') for s in samples], label='max')
    a.set_yscale('log')
    a.set_title('scheduling latency: 1 kHz clock_nanosleep probe (us)')
    a.legend(fontsize=8)
    for a in ax.flat:
        a.set_xlabel('s')
        a.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
