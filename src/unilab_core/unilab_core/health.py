# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A node's health as one level and one message, from its counters (no ROS import).

Every node of a graph publishes one ``diagnostic_msgs/DiagnosticStatus`` per
period; the node only gathers counters, this module decides what they mean,
so every node judges the same way and the rules are tested with fabricated
counters. A node reports cumulative counters under the common names of
``SHARES`` (``rows``, ``clamped``, ``outputs``, ``fallbacks``, ...); a share
is taken over one period (the difference of two snapshots), so a run that
clamped 98 % of its rows an hour ago and none now is OK again, and a warning
names the share and its threshold (``clamp_share_warn``). ERROR is reserved
for what stops the robot or the graph: an e-stop, a stopped loop, a peer node
missing from the graph. The levels are ``diagnostic_msgs/DiagnosticStatus``'s
(ROS REP 107 diagnostics: OK 0, WARN 1, ERROR 2).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Mapping

from pydantic import Field
from unilab_core.config import HealthSection

OK, WARN, ERROR = 0, 1, 2
LEVEL_NAMES = {OK: 'OK', WARN: 'WARN', ERROR: 'ERROR'}


class HealthParams(HealthSection):
    """A node's ``health`` parameters: the run's ``health`` section plus its place in the graph."""

    hardware_id: str = Field(
        'unilab', min_length=1, description='DiagnosticStatus.hardware_id: what the node '
        'runs for (the simulated robot, or the robot\'s name and namespace).')
    peers: list[str] = Field(
        default_factory=list, description='The other nodes of the graph (names as on the '
        'graph); one missing is an ERROR.')


@dataclasses.dataclass(frozen=True)
class Share:
    """A share that WARNs past ``HealthSection.<name>_warn``: ``part`` over ``whole``."""

    name: str
    part: str
    whole: str
    text: str


#: The shares a node may report, by the counter names it gives them.
SHARES = (
    Share('clamp_share', 'clamped', 'rows', 'of action rows clamped'),
    Share('reject_share', 'rejected', 'rows', 'of action rows rejected'),
    Share('fallback_share', 'fallbacks', 'outputs', 'of safety outputs were watchdog fallbacks'),
    Share('deadline_miss_share', 'deadline_misses', 'cycles',
          'of loop cycles missed their deadline'),
    Share('drop_share', 'dropped', 'messages', 'of messages dropped'),
    Share('stale_share', 'stale', 'messages', 'of input stale'),
)

#: Subscription counters that are deliveries, and counters that are losses.
_DELIVERED = ('inproc', 'inproc_inline', 'shm', 'shm_wake', 'standard')
_SUB_LOST = ('inproc_skipped', 'shm_skipped')
_PUB_LOST = ('ring_full', 'dropped_all_pinned')
#: Publisher counters of messages handed on (to in-process readers, a ring, DDS).
_SENT = ('inproc', 'descriptors', 'serialised', 'serialised_unmapped', 'loaned')


@dataclasses.dataclass(frozen=True)
class Assessment:
    """One period's verdict: level, message and the shares it was taken from."""

    level: int
    message: str
    shares: dict[str, float]

    @property
    def level_name(self) -> str:
        """Return ``OK``, ``WARN`` or ``ERROR``."""
        return LEVEL_NAMES[self.level]


def transport_counters(subscriptions: Iterable[Mapping[str, int]],
                       publishers: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """
    Sum a node's transport counters into ``transport_received/sent/dropped/errors``.

    ``subscriptions`` are ``TensorSubscription.counters()`` dicts, ``publishers``
    ``TensorPublisher.stats``: deliveries are the paths a message arrived by,
    losses the slots a reader skipped (overwritten before it read them) and the
    messages a writer could not place; ``error_*`` counts messages that arrived
    broken. ``transport_cross_host`` counts the messages a writer serialised for
    readers that cannot map its shared memory and the descriptors a reader
    received from such a writer (another host, ``/dev/shm`` or pid namespace).
    """
    out = {'transport_received': 0, 'transport_sent': 0, 'transport_dropped': 0,
           'transport_errors': 0, 'transport_cross_host': 0}
    for c in subscriptions:
        out['transport_cross_host'] += int(c.get('foreign_host', 0))
        out['transport_received'] += sum(int(c.get(k, 0)) for k in _DELIVERED)
        out['transport_dropped'] += sum(int(c.get(k, 0)) for k in _SUB_LOST)
        out['transport_errors'] += sum(int(v) for k, v in c.items() if k.startswith('error_'))
    for c in publishers:
        out['transport_cross_host'] += int(c.get('serialised_unmapped', 0))
        out['transport_sent'] += sum(int(c.get(k, 0)) for k in _SENT)
        out['transport_dropped'] += sum(int(c.get(k, 0)) for k in _PUB_LOST)
    return out


def period_shares(before: Mapping[str, Any], now: Mapping[str, Any]) -> dict[str, float]:
    """
    Return each share of ``SHARES`` whose counters ``now`` holds, over the period since ``before``.

    A share whose whole did not grow in the period is left out (nothing happened,
    nothing to judge); counters missing from ``before`` count from zero.
    """
    out = {}
    for s in SHARES:
        if s.part not in now or s.whole not in now:
            continue
        whole = float(now[s.whole]) - float(before.get(s.whole, 0))
        if whole > 0:
            out[s.name] = max(0.0, float(now[s.part]) - float(before.get(s.part, 0))) / whole
    return out


def assess(before: Mapping[str, Any], now: Mapping[str, Any], cfg: HealthSection,
           errors: Iterable[str] = (), warnings: Iterable[str] = ()) -> Assessment:
    """
    Judge one period: ERROR with ``errors``, WARN past a share's threshold or with ``warnings``.

    ``errors`` / ``warnings`` are the node's own findings (an e-stop, a stopped
    loop, a missing peer; an overload); the message lists every problem, worst
    first, and is ``ok`` only when there is none.
    """
    shares = period_shares(before, now)
    errors, warned = list(errors), list(warnings)
    for s in SHARES:
        share, limit = shares.get(s.name), getattr(cfg, f'{s.name}_warn')
        if share is not None and share > limit:
            warned.append(f'{100 * share:.1f} % {s.text} (> {100 * limit:g} %, '
                          f'health.{s.name}_warn)')
    if errors:
        return Assessment(ERROR, '; '.join(errors + warned), shares)
    if warned:
        return Assessment(WARN, '; '.join(warned), shares)
    return Assessment(OK, 'ok', shares)


class PeerWatch:
    """
    Which expected peer nodes are missing from the graph.

    A peer not seen yet is a warning while the graph starts (processes on a
    loaded machine take a while to import and discover each other) and an
    error once ``timeout_s`` has passed since start; a peer seen once and gone
    is an error at once (a crashed process, or one that ended).
    """

    def __init__(self, peers: Iterable[str], timeout_s: float, start_s: float):
        self.peers = tuple(peers)
        self.timeout_s, self.start_s = timeout_s, start_s
        self.seen: set[str] = set()

    def check(self, names_now: Iterable[str], now_s: float) -> tuple[list[str], list[str]]:
        """Return ``(errors, warnings)``, one per missing peer, given the names on the graph."""
        present = set(names_now) & set(self.peers)
        self.seen |= present
        errors, warnings = [], []
        for p in self.peers:
            if p in present:
                continue
            if p in self.seen:
                errors.append(f'peer {p} left the graph')
            elif now_s - self.start_s > self.timeout_s:
                errors.append(f'peer {p} not on the graph after {self.timeout_s:g} s')
            else:
                warnings.append(f'waiting for peer {p}')
        return errors, warnings


#: NVML clocks-event reasons that mean the GPU is slowed by heat or power.
SLOWDOWN_REASONS = ('hw_slowdown', 'sw_thermal_slowdown', 'hw_thermal_slowdown',
                    'hw_power_brake_slowdown', 'sw_power_cap')
#: ``read_gpu_health`` keys published as key/values (``gpu.<key>``).
GPU_KEYS = ('name', 'temperature_c', 'temperature_slowdown_c', 'power_w', 'power_limit_w',
            'utilization_gpu_pct', 'utilization_memory_pct', 'memory_used_bytes',
            'memory_total_bytes', 'throttle_reasons')


def gpu_values(health: Mapping[str, Any] | None,
               reason: str = '') -> tuple[dict[str, str], list[str]]:
    """
    Return a GPU's key/values and warnings from a ``gpu_health.read_gpu_health`` dict.

    ``health`` None: the node uses no GPU (``reason`` says why, default
    ``no GPU in use``) and the one value is ``gpu: <reason>``. Warnings: a
    slowdown reason among the clocks-event reasons (``sw_power_cap`` only
    under load, as NVML reports it at idle too), the temperature at or past
    the slowdown threshold.
    """
    if health is None:
        return {'gpu': reason or 'no GPU in use'}, []
    values = {f'gpu.{k}': str(health.get(k)) for k in GPU_KEYS}
    warn = []
    reasons = [r for r in health.get('throttle_reasons') or () if r in SLOWDOWN_REASONS]
    if reasons == ['sw_power_cap'] and (health.get('utilization_gpu_pct') or 0) < 50:
        reasons = []
    if reasons:
        warn.append(f"GPU slowed down: {', '.join(reasons)}")
    temp, limit = health.get('temperature_c'), health.get('temperature_slowdown_c')
    if temp is not None and limit is not None and temp >= limit:
        warn.append(f'GPU at {temp} C, slowdown threshold {limit} C')
    return values, warn


#: Columns a training run's metrics rows take from the graph's health counters.
RUN_METRICS = ('episodes/success_rate', 'safety/clamp_share', 'safety/reject_share',
               'safety/fallback_share', 'safety/deadline_miss_share', 'transport/dropped',
               'transport/drop_share')
#: Columns of the trainer's last metrics row it repeats on ``/diagnostics`` beside its
#: counters (``updates``, ``env_steps``), for a live view: what no node's counters give.
TRAINER_STATUS_METRICS = ('charts/mean_return',)
#: Health counters summed over the graph's nodes for ``RUN_METRICS``.
_RUN_COUNTERS = ('rows', 'clamped', 'rejected', 'outputs', 'fallbacks', 'cycles',
                 'deadline_misses', 'episodes_judged', 'episodes_succeeded',
                 'transport_received', 'transport_sent', 'transport_dropped')


def _number(value) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if out == out else None  # NaN is no count


class RunMetrics:
    """
    The graph's rates between two metrics rows, from the nodes' cumulative health counters.

    ``observe`` takes each node's latest ``/diagnostics`` values (strings, as
    published); ``row`` sums them over the nodes and returns ``RUN_METRICS``
    over the interval since the previous row: the success rate of the
    episodes that ended (where the task defines success), the safety gate's
    clamp / reject / fallback / deadline-miss shares, the messages the
    transport dropped and their share. NaN where nothing happened in the
    interval; the figures lag by at most one diagnostics period.
    """

    def __init__(self):
        self.latest: dict[str, dict[str, float]] = {}
        self._before: dict[str, float] = {}

    def observe(self, node: str, values: Mapping[str, Any]) -> None:
        """Keep ``node``'s latest counters (the ones ``RUN_METRICS`` need)."""
        self.latest[node] = {k: v for k in _RUN_COUNTERS
                             if (v := _number(values.get(k))) is not None}

    def row(self) -> dict[str, float]:
        """Return ``RUN_METRICS`` since the last call (NaN where undefined)."""
        now = {k: sum(c.get(k, 0.0) for c in self.latest.values()) for k in _RUN_COUNTERS}
        d = {k: now[k] - self._before.get(k, 0.0) for k in _RUN_COUNTERS}
        nan = float('nan')
        shares = period_shares(self._before, now)
        self._before = now
        moved = d['transport_received'] + d['transport_sent']
        return {
            'episodes/success_rate': (d['episodes_succeeded'] / d['episodes_judged']
                                      if d['episodes_judged'] > 0 else nan),
            'safety/clamp_share': shares.get('clamp_share', nan),
            'safety/reject_share': shares.get('reject_share', nan),
            'safety/fallback_share': shares.get('fallback_share', nan),
            'safety/deadline_miss_share': shares.get('deadline_miss_share', nan),
            'transport/dropped': d['transport_dropped'],
            'transport/drop_share': d['transport_dropped'] / moved if moved > 0 else nan,
        }
