# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench deploy``: joint state out -> command back through the deploy graph, on the double.

The robot double (its own process, profile ``arm6`` unless ``--robot``) runs in
latency-probe mode (``unilab_bridge.latency_probe``): one ``/joint_states`` per
control period at deadline-scheduled times, and the time from each one leaving
to the first command arriving back at the double, for ``--steps`` cycles (10,000)
at the profile's control rate. A goal is published on the profile's goal topic
(the reach task needs one). The controllers drive it in turn, each in its own
processes, each against a fresh double, in ``--rounds`` rounds (3) of
``cycles / rounds`` cycles each, the controllers' order the same in every round,
so that a machine whose speed drifts over the bench's minutes weighs on every
controller alike (each controller's figures are over all its rounds):

- ``deploy``: ``unilab deploy MODEL --robot PROFILE --armed``, the graph composed
  in one process (perception, policy, safety gate) with a robot's defaults: the
  network exported in memory and run through onnxruntime on a CPU
  (``run.deploy_runtime: auto``), the gate checking each action on arrival
  (``safety.rt_mode: auto`` -> ``inline``);
- ``deploy_torch``: the same with the network in torch (``run.deploy_runtime:
  torch``); not run when ``--model`` is an exported model (that runs its file);
- ``deploy_rt_process``: the default with the gate's loop in its own SCHED_FIFO
  process (``safety.rt_mode: process``, training's default), each action handed
  over to it;
- ``deploy_cold``: the default without its rehearsal (``run.deploy_rehearse_lead_ms:
  0``): the chain is not run once on the last input before each joint state is due, so
  it starts cold after the 20 ms pause (``unilab_core.rehearsal``);
- ``deploy_multiprocess``: the default with ``--multiprocess`` (one process per node);
- ``rclpy``: the baseline, a plain rclpy node doing the bare job
  (``unilab_bench.deploy_baseline``: subscribe, torch forward of the same network,
  clamp, publish ``Float64MultiArray``), no gate;
- ``echo``: the floor, the same plain node doing no work (``--echo``: the measured
  positions back), i.e. DDS in and out and the executors of both sides.

Reports ``<name>_p50_ms`` / ``_p99_ms`` / ``_max_ms`` / ``_mean_ms``, each one's
``deadline_misses`` (cycles whose command did not come within the control period;
``deadline_misses`` alone is the composed graph's), and the ratios of the deploy
graph's percentiles to the baseline's. Per hop (p50, ms): ``floor`` (echo),
``policy_work`` (rclpy - echo: observation, forward, clamp), ``<name>_gate_p50_ms``
(the safety gate, action received -> command published, from its statistics;
``<name>_gate_commands`` / ``_clamped`` / ``_early_actions`` beside it)
and ``<name>_graph_p50_ms`` (the rest: deploy - rclpy - gate, the hand-overs
between the graph's nodes). ``--model`` is a run directory or an
exported model (default: a freshly initialised network of the default
configuration for the profile's task; latency does not depend on the weights).

``--view``: what watching costs the control loop (docs/view.md). Only the composed
graph, in ``--rounds`` rounds (6), each round in turn ``deploy`` alone,
``deploy_view`` with ``unilab view`` beside it and ``deploy_view_foxglove`` with
``unilab view --foxglove``, each view with its clients connected
(``unilab_bench.view_client``: a viser page's WebSocket, a Foxglove client on every
channel), the double publishing ``/robot_description`` in all three so the view draws
the robot. Reports each one's percentiles, the p99s of every round
(``<name>_round_p99_ms``), the differences to ``deploy`` (``view_p99_diff_ms``,
``view_foxglove_p99_diff_ms``: pooled cycles; ``..._round_median_ms``: the median of
the rounds' paired differences) and what the clients received (``<name>_client``).
"""

from __future__ import annotations

import json
import pathlib
import socket
import sys
import tempfile
import threading
import time

import numpy as np
from unilab_bench.procs import fresh_run_dir, start, stop
from unilab_bringup.paths import profile_path
from unilab_bringup.robot_sim import robot_sim_params
from unilab_core.config import ConfigError
from unilab_core.robot_profile import load_profile

DEFAULT_CYCLES = 10_000
DEFAULT_ROUNDS = 3
#: --view: rounds of (deploy, deploy_view, deploy_view_foxglove), alternated
DEFAULT_VIEW_ROUNDS = 6
#: --view: the claim measured (docs/view.md): control p99 with the view within this of without
VIEW_P99_BUDGET_MS = 0.2
DEFAULT_ROBOT = 'arm6'
#: A reachable goal in the arm's base frame (m); the reach task needs one to act at all.
GOAL_XYZ = (0.35, 0.15, 0.35)
#: Seconds a controller may take to start (imports, network, DDS discovery).
START_S = 90.0


def robot_commands(profile: pathlib.Path, cycles: int, out: pathlib.Path, tmp: pathlib.Path,
                   goals: int = 0, goal_timeout_s: float | None = None,
                   description: bool = False) -> list[list[str]]:
    """
    Return the commands of the probe double and, with ``goals``, of a scenario beside it.

    ``description``: the double publishes ``/robot_description`` (a view needs it).
    """
    from unilab_bringup.graphs import robot_sim_graph
    from unilab_bringup.runner import node_command
    double, scenario = robot_sim_params(str(profile), goals=goals,
                                        goal_timeout_s=goal_timeout_s)
    double = double.model_copy(update={'latency_probe_cycles': cycles,
                                       'latency_probe_file': str(out),
                                       'publish_description': description})
    graph = robot_sim_graph(double, scenario)
    params = graph.write_params(tmp / f'{out.stem}_robot_params.yaml')
    return [node_command(node, params, graph) for node in graph.nodes]


class _GoalPublisher:
    """Publish the goal twice a second from a thread of this process (any subscriber gets it)."""

    def __init__(self, topic: str):
        import rclpy
        from geometry_msgs.msg import PoseStamped
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('bench_deploy_goal', context=self.context)
        self.pub = self.node.create_publisher(PoseStamped, topic, 10)
        self.msg = PoseStamped()
        self.msg.header.frame_id = 'base_link'
        p = self.msg.pose.position
        p.x, p.y, p.z = GOAL_XYZ
        self.msg.pose.orientation.w = 1.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self.pub.publish(self.msg)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.node.destroy_node()
        self.context.try_shutdown()


def measure(name: str, controller: list[str], profile, source: pathlib.Path, cycles: int,
            tmp: pathlib.Path, goals: int = 0, goal_timeout_s: float | None = None,
            beside: list[list[str]] = (), beside_port: int | None = None,
            description: bool = False) -> dict:
    """
    Run one controller against a fresh double in probe mode; return the probe's figures.

    ``goals``: a scenario beside the double gives that many goals, one every
    ``goal_timeout_s`` at most (episodes for a learner); otherwise the caller gives one.
    ``beside``: commands started first and stopped with the controller (a view and its
    clients); the double starts once ``beside_port`` accepts connections (the view
    serves), so the figures are the view's steady state, not its start-up.
    ``description``: the double publishes ``/robot_description``.
    """
    out = tmp / f'{name}_probe.json'
    log = tmp / f'{name}.log'
    period = 1.0 / profile.control_rate_hz
    with open(log, 'w') as logf, open(tmp / f'{name}_double.log', 'w') as dlog, \
            open(tmp / f'{name}_beside.log', 'w') as blog:
        others = [start(cmd, blog) for cmd in beside]
        if beside_port is not None:
            _wait_serving(beside_port, others, tmp / f'{name}_beside.log')
        double, *robot = [start(cmd, dlog) for cmd in robot_commands(
            source, cycles, out, tmp, goals, goal_timeout_s, description)]
        others += robot
        ctrl = start(controller, logf)
        try:
            deadline = time.monotonic() + START_S + cycles * period * 2.0
            while double.poll() is None:
                if ctrl.poll() is not None:
                    raise RuntimeError(f'bench deploy: {name} exited ({ctrl.returncode}); '
                                       f'see {log}:\n{log.read_text()[-2000:]}')
                if time.monotonic() > deadline:
                    raise RuntimeError(f'bench deploy: {name}: the probe did not finish in '
                                       f'time; see {log} and {name}_double.log')
                time.sleep(0.5)
        finally:
            stop(ctrl)
            for p in others:
                stop(p)
            stop(double)
    if not out.is_file():
        raise RuntimeError(f'bench deploy: {name}: the double wrote no figures; see '
                           f'{tmp / (name + "_double.log")}')
    return json.loads(out.read_text())


def _wait_serving(port: int, procs, log: pathlib.Path) -> None:
    """Return once ``port`` accepts a connection; raise if one of ``procs`` exits first."""
    deadline = time.monotonic() + START_S
    while True:
        try:
            socket.create_connection(('127.0.0.1', port), timeout=1).close()
            return
        except OSError:
            if any(p.poll() is not None for p in procs) or time.monotonic() > deadline:
                for p in procs:
                    stop(p)
                raise RuntimeError(f'bench deploy: the view did not serve on {port}; see '
                                   f'{log}:\n{log.read_text()[-2000:]}')
            time.sleep(0.5)


def free_port() -> int:
    """Return a TCP port free now on this machine (the OS's choice)."""
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def figures(name: str, probe: dict) -> dict:
    lat = np.asarray(probe['latency_ms'], np.float64)
    out = {f'{name}_cycles': probe['cycles'],
           f'{name}_deadline_misses': probe['deadline_misses']}
    if lat.size:
        out.update({f'{name}_p50_ms': round(float(np.percentile(lat, 50)), 3),
                    f'{name}_p99_ms': round(float(np.percentile(lat, 99)), 3),
                    f'{name}_max_ms': round(float(lat.max()), 3),
                    f'{name}_mean_ms': round(float(lat.mean()), 3)})
    return out


def merge_probes(probes: list[dict]) -> dict:
    """Return one probe's figures from several rounds of the same controller."""
    return {'cycles': sum(p['cycles'] for p in probes),
            'deadline_misses': sum(p['deadline_misses'] for p in probes),
            'latency_ms': [x for p in probes for x in p['latency_ms']]}


def split_cycles(cycles: int, rounds: int) -> list[int]:
    """Return the cycles of each round: ``cycles`` spread over ``rounds`` (none empty)."""
    if cycles < 1:
        raise ConfigError(f'--steps must be >= 1 (control cycles per controller), got {cycles}')
    if rounds < 1 or cycles < rounds:
        raise ConfigError(f'--rounds must be in [1, --steps {cycles}], got {rounds}')
    return [cycles // rounds + (1 if i < cycles % rounds else 0) for i in range(rounds)]


def gate_figures(name: str, run_dirs: list[pathlib.Path]) -> dict:
    """
    Return the safety gate's own hop (action in -> command out, ms) from its statistics.

    Over several rounds (one run directory each): the mean of the rounds' percentiles,
    the counters summed.
    """
    stats = [json.loads((d / 'safety_stats.json').read_text()) for d in run_dirs
             if (d / 'safety_stats.json').is_file()]
    if not stats:
        return {}
    out = {}
    for q in ('p50', 'p99'):
        values = [s[f'action_latency_{q}_us'] for s in stats
                  if f'action_latency_{q}_us' in s]
        if values:
            out[f'{name}_gate_{q}_ms'] = round(float(np.mean(values)) / 1e3, 3)
    out[f'{name}_rt_mode'] = stats[0].get('rt_mode')
    # Commands the gate limited for coming sooner than one control step after the last
    # (docs/safety.md, "Per time"): a policy answering each joint state once gets none
    # beyond its jitter allowance.
    for key in ('early_actions', 'commands', 'clamped'):
        if all(key in s for s in stats):
            out[f'{name}_gate_{key}'] = sum(s[key] for s in stats)
    return out


def rehearsal_figures(name: str, run_dirs: list[pathlib.Path]) -> dict:
    """Return the chain's rehearsals before each control step (perception's, summed)."""
    per = [json.loads((d / 'summary.json').read_text()).get('node_counters', {})
           .get('perception', {}) for d in run_dirs if (d / 'summary.json').is_file()]
    return {f'{name}_{key}': sum(int(c[key]) for c in per)
            for key in ('rehearsals', 'rehearsals_late', 'rehearsal_errors')
            if per and all(key in c for c in per)}


def breakdown(result: dict, names: list[str]) -> dict:
    """Split each deploy run's p50 into floor, policy work, gate and graph hand-overs."""
    floor, plain = result.get('echo_p50_ms'), result.get('rclpy_p50_ms')
    if floor is None or plain is None:
        return {}
    out = {'floor_p50_ms': floor, 'policy_work_p50_ms': round(plain - floor, 3)}
    for name in names:
        total, gate = result.get(f'{name}_p50_ms'), result.get(f'{name}_gate_p50_ms')
        if total is not None and gate is not None:
            out[f'{name}_graph_p50_ms'] = round(total - plain - gate, 3)
    return out


def view_beside(name: str, foxglove: bool, tmp: pathlib.Path):
    """
    Return ``rd -> (commands, port)``: ``unilab view`` (``--foxglove``) and its clients.

    Fresh ports per round (a view of the round before may still hold its own); the
    clients' counts go to ``<name>_client.json`` beside the round's run directory.
    """
    def beside(rd: pathlib.Path):
        port, fox = free_port(), free_port()
        view = [sys.executable, '-m', 'unilab.cli', 'view', '--port', str(port)]
        client = [sys.executable, '-m', 'unilab_bench.view_client', '--viser-port', str(port),
                  '--stats', str(tmp / f'{rd.name}_client.json')]
        if foxglove:
            view += ['--foxglove', '--foxglove-port', str(fox)]
            client += ['--foxglove-port', str(fox)]
        return [view, client], port
    return beside


def view_figures(result: dict, probes: dict[str, list[dict]], base: str = 'deploy') -> dict:
    """
    Return the view's cost: each run's p99 per round and its difference to ``base``.

    ``result`` holds the pooled figures (``<name>_p99_ms``); ``probes`` each run's probe
    per round, the rounds of all runs interleaved in the same minutes, so a paired
    difference per round takes out the machine's drift.
    """
    out = {}
    rounds = {name: [figures(name, p).get(f'{name}_p99_ms') for p in ps]
              for name, ps in probes.items()}
    for name, p99s in rounds.items():
        out[f'{name}_round_p99_ms'] = p99s
    for name in probes:
        if name == base:
            continue
        key = name.replace(f'{base}_', '', 1)
        a, b = result.get(f'{name}_p99_ms'), result.get(f'{base}_p99_ms')
        if a is not None and b is not None:
            out[f'{key}_p99_diff_ms'] = round(a - b, 3)
        paired = [x - y for x, y in zip(rounds[name], rounds[base])
                  if x is not None and y is not None]
        if paired:
            out[f'{key}_p99_diff_round_median_ms'] = round(float(np.median(paired)), 3)
    diffs = [v for k, v in out.items() if k.endswith('_p99_diff_ms')]
    if diffs:
        out['target'] = (f'control p99 with the view within {VIEW_P99_BUDGET_MS} ms of '
                         'without (docs/view.md)')
        out['target_met'] = bool(max(diffs) <= VIEW_P99_BUDGET_MS)
    return out


def bench_deploy(args) -> dict:
    """Time joint state -> command on the robot double: deploy graph vs plain rclpy node."""
    cycles = args.steps or DEFAULT_CYCLES
    rounds = getattr(args, 'rounds', None)
    with_view = getattr(args, 'view', False)
    if rounds is None:
        rounds = DEFAULT_VIEW_ROUNDS if with_view else DEFAULT_ROUNDS
    per_round = split_cycles(cycles, rounds)
    robot = getattr(args, 'robot', None) or DEFAULT_ROBOT
    source = profile_path(robot).resolve()
    profile = load_profile(source)
    multiprocess = not getattr(args, 'no_multiprocess', False)
    result = {'benchmark': 'deploy', 'robot': profile.name, 'cycles': cycles,
              'control_rate_hz': profile.control_rate_hz,
              'command': f'{profile.command.type} on {profile.command.topic}'}
    with tempfile.TemporaryDirectory(prefix='unilab-bench-deploy-') as t:
        tmp = pathlib.Path(t)
        model = getattr(args, 'model', None)
        if model:
            result['model'] = str(pathlib.Path(model).resolve())
        else:
            model = str(fresh_run_dir(profile.task, tmp / 'model'))
            result['model'] = 'a fresh network of the default configuration'

        def deploy(model_path, *extra):
            """Return the command line of one round of ``unilab deploy`` (its run dir)."""
            return lambda rd: [sys.executable, '-m', 'unilab.cli', 'deploy', str(model_path),
                               '--robot', str(source), '--armed', *extra, '--run-dir', str(rd)]

        # name -> the command line of one round; name -> the processes beside it.
        runs = {'deploy': deploy(model)}
        beside = {}
        if with_view:
            for name, foxglove in (('deploy_view', False), ('deploy_view_foxglove', True)):
                runs[name] = deploy(model)
                beside[name] = view_beside(name, foxglove, tmp)
        else:
            variants = {'deploy_rt_process': 'safety: {rt_mode: process}',
                        'deploy_cold': 'run: {deploy_rehearse_lead_ms: 0}'}
            from unilab_policy.exported_inference import is_exported
            if not is_exported(model):  # an exported model runs through its own file
                variants['deploy_torch'] = 'run: {deploy_runtime: torch}'
            for name, text in variants.items():
                (tmp / f'{name}.yaml').write_text(text + '\n')
                runs[name] = deploy(model, '--config', str(tmp / f'{name}.yaml'))
            if multiprocess:
                runs['deploy_multiprocess'] = deploy(model, '--multiprocess')
            baseline = [sys.executable, '-m', 'unilab_bench.deploy_baseline', model,
                        str(source)]
            runs['rclpy'] = lambda rd: baseline
            runs['echo'] = lambda rd: baseline + ['--echo']
        result['rounds'] = len(per_round)
        probes = {name: [] for name in runs}
        goal = _GoalPublisher(profile.task_inputs.goal_topic) \
            if profile.task_inputs.kind == 'reach' else None
        try:
            for r, n in enumerate(per_round):
                for name, command in runs.items():
                    rd = tmp / f'{name}_r{r}'
                    procs, port = beside[name](rd) if name in beside else ((), None)
                    probes[name].append(measure(
                        f'{name}_r{r}', command(rd), profile, source, n, tmp,
                        beside=procs, beside_port=port, description=with_view))
        finally:
            if goal is not None:
                goal.close()
        for name in runs:
            result.update(figures(name, merge_probes(probes[name])))
            dirs = [tmp / f'{name}_r{r}' for r in range(len(per_round))]
            result.update(gate_figures(name, dirs))
            result.update(rehearsal_figures(name, dirs))
            clients = [json.loads(f.read_text()) for r in range(len(per_round))
                       if (f := tmp / f'{name}_r{r}_client.json').is_file()]
            if name in beside:
                result[f'{name}_client'] = {
                    kind: {'messages': sum(c[kind]['messages'] for c in clients
                                           if kind in c),
                           'bytes': sum(c[kind]['bytes'] for c in clients if kind in c)}
                    for kind in ('viser', 'foxglove') if any(kind in c for c in clients)}
                result[f'{name}_client_rounds'] = len(clients)
    result['deadline_misses'] = result['deploy_deadline_misses']
    if with_view:
        result['view'] = ('unilab view (its own process, nice 10) with a viser WebSocket '
                          'client; _foxglove: view --foxglove with a Foxglove client on every '
                          'channel')
        result.update(view_figures(result, probes))
        return result
    deploys = [n for n in runs if n.startswith('deploy')]
    for name in deploys:
        for q in ('p50', 'p99'):
            a, b = result.get(f'{name}_{q}_ms'), result.get(f'rclpy_{q}_ms')
            if a is not None and b:
                result[f'{name}_{q}_vs_rclpy'] = round(a / b, 3)
    for q in ('p50', 'p99'):
        a, b = result.get(f'deploy_{q}_ms'), result.get(f'deploy_cold_{q}_ms')
        if a is not None and b:
            result[f'deploy_{q}_vs_cold'] = round(a / b, 3)
    result.update(breakdown(result, deploys))
    if result.get('echo_p50_ms') is not None:
        result['deploy_above_floor_p50_ms'] = round(result['deploy_p50_ms']
                                                    - result['echo_p50_ms'], 3)
    result['target'] = 'deploy p50 <= 1 ms, p99 <= 3 ms, not slower than the rclpy node'
    return result
