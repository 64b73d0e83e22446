# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench stress``: N simulated robots, each served by its own deploy graph, for a while.

What runs, each in its own process group (``unilab_bench.procs``):

- the robot double in fleet mode (``unilab robot-sim --robot arm6 --robots N
  --goals G``): robot k's standard topics under ``/robot<k>`` (plain names for
  N = 1), and the scenario publishing each robot a new reach goal every
  ``goal_timeout_s`` (4 s);
- per robot ``unilab deploy MODEL --robot arm6 --namespace /robot<k> --armed``
  (perception, policy, safety gate with its 1 kHz loop, composed in one
  process); the first ``--adapters`` robots (1) run ``unilab adapt`` instead, so a
  learner fine-tunes from their rollouts (docs/adapt.md) while the others serve.
  MODEL is a freshly initialised network of the default configuration (timing
  does not depend on the weights);
- the cyclictest-style probe (``unilab_bench.stress_probe``): a thread waking at
  1 kHz on absolute deadlines, recording how late it woke.

The bench process itself subscribes to every robot's joint states (best effort)
and command topic, and to ``/diagnostics``. Once every robot's commands arrive
(or the start time is up) it measures for ``--duration`` seconds, sampling every
few seconds: per robot the control latency (the newest joint state's stamp to a
command's arrival at the bench, both on the wall clock), the safety node's
deadline misses and the joint states it received against the nominal rate; over
all nodes the tensor messages lost (the transport counters on ``/diagnostics``:
sequence gaps on the reliable paths and broken messages); per process group CPU
and RSS (``/proc``); the shared-memory segments created in ``/dev/shm`` since
the bench began; the probe's wake-up latency. ``summarise`` turns the samples
into the report, and the ``stress`` config section's thresholds judge it: the
exceeded ones are listed in ``thresholds_exceeded`` and the command exits 1.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import tempfile
import threading
import time

from unilab_bench import stress_report
from unilab_bench.procs import fresh_run_dir, start, stop
from unilab_bringup.paths import default_config_files, profile_path
from unilab_core import topics
from unilab_core.config import ConfigError, load_run_config
from unilab_core.robot_profile import fleet_namespace, load_profile

DEFAULT_ROBOTS = 16
DEFAULT_DURATION_S = 180.0
ROBOT = 'arm6'
#: Simulated seconds per scenario goal (a new goal for every robot this often).
GOAL_TIMEOUT_S = 4.0


def _log(text: str) -> None:
    print(f'unilab: bench stress: {text}', file=sys.stderr, flush=True)


class _Monitor:
    """The bench's node: joint-state stamps, command arrivals and ``/diagnostics``."""

    def __init__(self, robots: int, profile):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from trajectory_msgs.msg import JointTrajectory
        from unilab_core.robot_profile import fleet_namespace, namespaced
        self.lock = threading.Lock()
        self.robots = robots
        self.last_js_ns = [0] * robots
        self.commands = [0] * robots
        self.interval = [[] for _ in range(robots)]
        self.latencies = [[] for _ in range(robots)]
        self.recording = False
        self.diag: dict[str, dict] = {}
        self.diag_first: dict[str, dict] = {}
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('unilab_bench_stress', context=self.context)
        cmd_type = (Float64MultiArray if profile.command.type == 'forward_command'
                    else JointTrajectory)
        for k in range(robots):
            ns = fleet_namespace(k, robots)
            self.node.create_subscription(
                JointState, namespaced(ns, profile.joint_states_topic),
                lambda msg, k=k: self._on_js(k, msg), qos_profile_sensor_data)
            self.node.create_subscription(
                cmd_type, namespaced(ns, profile.command.topic),
                lambda msg, k=k: self._on_command(k), qos_profile_sensor_data)
        self.node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, self._on_diag, 100)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def _on_js(self, k: int, msg) -> None:
        self.last_js_ns[k] = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec

    def _on_command(self, k: int) -> None:
        now = time.time_ns()
        with self.lock:
            self.commands[k] += 1
            if self.last_js_ns[k]:
                lat = (now - self.last_js_ns[k]) * 1e-9
                self.interval[k].append(lat)
                if self.recording:
                    self.latencies[k].append(lat)

    def _on_diag(self, msg) -> None:
        now = time.monotonic()
        with self.lock:
            for st in msg.status:
                values = {kv.key: kv.value for kv in st.values}
                values['_t'] = now
                values['_level'] = int.from_bytes(st.level, 'little') \
                    if isinstance(st.level, bytes) else int(st.level)
                self.diag[st.name] = values
                if self.recording and st.name not in self.diag_first:
                    self.diag_first[st.name] = values

    def begin(self) -> None:
        """Start recording: the current diagnostics are the baseline."""
        with self.lock:
            self.recording = True
            self.diag_first = dict(self.diag)
            self.interval = [[] for _ in range(self.robots)]

    def take(self) -> tuple[list[list[float]], dict]:
        """Return (and reset) the interval's latencies, with a copy of the diagnostics."""
        with self.lock:
            out, self.interval = self.interval, [[] for _ in range(self.robots)]
            return out, dict(self.diag)

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        self.context.try_shutdown()
        self.thread.join(timeout=5.0)


class _ProcTable:
    """CPU (% of one core) and RSS (MB) per process group from ``/proc``."""

    def __init__(self, groups: dict[str, int], own: str = 'bench'):
        self.groups, self.own = dict(groups), own
        self.tick = os.sysconf('SC_CLK_TCK')
        self.page = os.sysconf('SC_PAGE_SIZE')
        self._before: dict[str, float] = {}
        self._t = time.monotonic()

    def _scan(self) -> dict[str, list[float]]:
        by_pgid = {pgid: name for name, pgid in self.groups.items()}
        me = os.getpid()
        out = {name: [0.0, 0.0] for name in [*self.groups, self.own]}
        for entry in os.scandir('/proc'):
            if not entry.name.isdigit():
                continue
            try:
                with open(f'/proc/{entry.name}/stat') as f:
                    fields = f.read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            pid, pgid = int(entry.name), int(fields[2])
            name = self.own if pid == me else by_pgid.get(pgid)
            if name is None:
                continue
            out[name][0] += (int(fields[11]) + int(fields[12])) / self.tick
            out[name][1] += int(fields[21]) * self.page / 1e6
        return out

    def sample(self) -> dict[str, dict]:
        """Return ``{name: {'cpu_pct', 'rss_mb'}}`` since the previous call."""
        # The time after the scan: under load a scan of /proc takes a while, and the
        # CPU times it reads are those of its end.
        scan = self._scan()
        now = time.monotonic()
        dt = max(now - self._t, 1e-6)
        out = {}
        for name, (cpu_s, rss) in scan.items():
            before = self._before.get(name, cpu_s)
            out[name] = {'cpu_pct': round(100.0 * max(cpu_s - before, 0.0) / dt, 1),
                         'rss_mb': round(rss, 1)}
        self._before = {name: v[0] for name, v in scan.items()}
        self._t = now
        return out


def _shm(baseline: set[str]) -> dict:
    """Return the count and bytes of the ``/dev/shm`` entries not in ``baseline``."""
    count = size = 0
    try:
        for e in os.scandir('/dev/shm'):
            if e.name in baseline:
                continue
            try:
                size += e.stat(follow_symlinks=False).st_size
                count += 1
            except OSError:
                pass
    except OSError:
        pass
    return {'count': count, 'bytes': size}


def _probe_rows(path: pathlib.Path, consumed: int) -> tuple[list[dict], int]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return [], consumed
    rows = [json.loads(x) for x in lines[consumed:] if x.strip()]
    return rows, len(lines)


def _probe_interval(rows: list[dict]) -> dict:
    rows = [r for r in rows if r.get('cycles')]
    if not rows:
        return {'cycles': 0, 'p99_us': None, 'max_us': None}
    return {'cycles': sum(r['cycles'] for r in rows),
            'p99_us': max(r['p99_us'] for r in rows), 'max_us': max(r['max_us'] for r in rows)}


def _tail(path: pathlib.Path, lines: int = 15) -> str:
    try:
        return '\n'.join(path.read_text(errors='replace').splitlines()[-lines:])
    except OSError:
        return ''


def _double_stats(path: pathlib.Path, nominal_hz: float) -> dict:
    """Return the double's joint-state rate (whole run) against nominal, from its stats file."""
    try:
        stats = json.loads(path.read_text())
    except (OSError, ValueError):
        return {'joint_state_rate_hz': None, 'joint_state_rate_share': None}
    rate = stats.get('joint_state_rate_hz')
    return {'joint_state_rate_hz': rate, 'nominal_joint_state_rate_hz': nominal_hz,
            'joint_state_rate_share': round(rate / nominal_hz, 4) if rate else None,
            'achieved_time_scale': stats.get('achieved_time_scale'),
            'commands': stats.get('commands')}


def _options(args) -> tuple[int, float, int]:
    robots = DEFAULT_ROBOTS if getattr(args, 'robots', None) is None else args.robots
    duration = DEFAULT_DURATION_S if args.duration is None else args.duration
    adapters = 1 if getattr(args, 'adapters', None) is None else args.adapters
    if not 1 <= robots <= 64:
        raise ConfigError(f'--robots must be in 1..64, got {robots}')
    if not duration > 0:
        raise ConfigError(f'--duration must be > 0 s, got {duration}')
    if not 0 <= adapters <= robots:
        raise ConfigError(f'--adapters must be in 0..--robots ({robots}), got {adapters}')
    return robots, float(duration), adapters


def bench_stress(args) -> dict:
    """Run N robots with their deploy graphs for ``--duration`` s; return the report."""
    robots, duration, adapters = _options(args)
    limits = load_run_config(list(default_config_files())).stress.model_dump()
    source = profile_path(ROBOT).resolve()
    profile = load_profile(source)
    interval = max(1.0, min(5.0, duration / 30.0))
    start_s = 120.0 + 20.0 * robots
    shm_baseline = {e.name for e in os.scandir('/dev/shm')} if os.path.isdir('/dev/shm') \
        else set()
    with tempfile.TemporaryDirectory(prefix='unilab-bench-stress-') as t:
        tmp = pathlib.Path(t)
        model = fresh_run_dir(profile.task, tmp / 'model')
        cli = [sys.executable, '-m', 'unilab.cli']
        goals = int((start_s + duration) / GOAL_TIMEOUT_S) + 10
        commands = {'double': cli + ['robot-sim', '--robot', str(source), '--robots', str(robots),
                                     '--goals', str(goals), '--goal-timeout',
                                     str(GOAL_TIMEOUT_S), '--stats',
                                     str(tmp / 'double_stats.json')]}
        for k in range(robots):
            verb = 'adapt' if k < adapters else 'deploy'
            commands[f'robot{k}_{verb}'] = cli + [
                verb, str(model), '--robot', str(source), '--armed',
                '--namespace', fleet_namespace(k, robots), '--run-dir', str(tmp / f'robot{k}')]
        probe_file = tmp / 'probe.jsonl'
        commands['probe'] = [sys.executable, '-m', 'unilab_bench.stress_probe',
                             str(probe_file), str(interval)]
        monitor = _Monitor(robots, profile)
        procs, logs = {}, {}
        try:
            for name, command in commands.items():
                logs[name] = tmp / f'{name}.log'
                with open(logs[name], 'w') as log:
                    procs[name] = start(command, log)
            _log(f'{robots} robots ({adapters} adapting), waiting for their commands '
                 f'(up to {start_s:.0f} s)')
            t_start = time.monotonic()
            while time.monotonic() - t_start < start_s and not all(monitor.commands):
                dead = [n for n, p in procs.items() if p.poll() is not None]
                if dead:
                    raise RuntimeError(f'{dead[0]} exited during start-up:\n'
                                       f'{_tail(logs[dead[0]])}')
                time.sleep(1.0)
            startup = time.monotonic() - t_start
            _log(f'{sum(1 for c in monitor.commands if c)} of {robots} robots commanding '
                 f'after {startup:.0f} s; measuring for {duration:g} s')
            samples, exited = _measure(monitor, procs, duration, interval, robots,
                                       profile.joint_state_rate_hz, probe_file, shm_baseline)
        finally:
            stoppers = [threading.Thread(target=stop, args=(p,)) for p in procs.values()]
            for s in stoppers:
                s.start()
            for s in stoppers:
                s.join()
            monitor.close()
        result = stress_report.summarise(
            samples, dict(enumerate(monitor.latencies)), monitor.diag_first, monitor.diag,
            robots, samples[-1]['t'] if samples else 0.0, profile.joint_state_rate_hz, limits)
        result['startup_s'] = round(startup, 1)
        result['adapters'] = adapters
        result['processes_exited'] = {n: _tail(logs[n]) for n in exited}
        if exited:
            result['thresholds_exceeded'].append('processes_exited')
        result['gpu'] = ('policy inference on a GPU: judged as gpu_latency_ms'
                         if result['gpu_latency_p99_ms'] is not None
                         else 'no GPU in use: inference_p99_ms is CPU time, not judged')
        result['double'] = _double_stats(tmp / 'double_stats.json', profile.joint_state_rate_hz)
        result['samples'] = samples
    if getattr(args, 'png', None):
        stress_report.plot(samples, robots, args.png,
                           f'bench stress: {robots} robots x {ROBOT}, {duration:g} s, '
                           f'{os.cpu_count()} CPUs; exceeded: '
                           f'{", ".join(result["thresholds_exceeded"]) or "none"}')
    return result


def _measure(monitor: _Monitor, procs: dict, duration: float, interval: float, robots: int,
             nominal_hz: float, probe_file: pathlib.Path, shm_baseline: set[str]):
    """Sample every ``interval`` s for ``duration`` s; return the samples and exited processes."""
    table = _ProcTable({n: p.pid for n, p in procs.items()})
    table.sample()
    monitor.begin()
    _, consumed = _probe_rows(probe_file, 0)
    t0 = time.monotonic()
    prev: dict[str, dict] = {}
    samples, exited = [], []
    n = 0
    while True:
        n += 1
        wake = t0 + min(n * interval, duration)
        time.sleep(max(wake - time.monotonic(), 0.0))
        lat, diag = monitor.take()
        rows, consumed = _probe_rows(probe_file, consumed)
        first = monitor.diag_first
        per_robot = []
        for k in range(robots):
            name = f'/robot{k}/safety' if robots > 1 else '/safety'
            last = diag.get(name, {})
            before = prev.get(name, first.get(name, {}))
            dt = float(last.get('_t', 0.0)) - float(before.get('_t', 0.0))
            d_js = stress_report.counter_delta(before, last, 'joint_states')
            per_robot.append({
                'latency_p99_ms': stress_report.percentiles_ms(lat[k])['p99_ms'],
                'commands': len(lat[k]),
                'joint_state_rate_share': round(d_js / (dt * nominal_hz), 4) if dt > 0 else None,
                'deadline_misses': stress_report.counter_delta(first.get(name, {}), last,
                                                               'deadline_misses')})
        prev = diag
        samples.append({
            't': round(time.monotonic() - t0, 2), 'robots': per_robot,
            'latency_p99_ms': stress_report.percentiles_ms(
                [x for ks in lat for x in ks])['p99_ms'],
            'deadline_misses': sum(r['deadline_misses'] for r in per_robot),
            'messages_lost': sum(stress_report.counter_delta(
                first.get(name, {}), d, 'transport_dropped', 'transport_errors')
                for name, d in diag.items()),
            'processes': table.sample(), 'shm': _shm(shm_baseline),
            'probe': _probe_interval(rows)})
        exited = [name for name, p in procs.items() if p.poll() is not None]
        if wake >= t0 + duration:
            return samples, exited
