# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Start the graph composed in one process or as one process per node, and watch it."""

from __future__ import annotations

import csv
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
from typing import Callable

from unilab_bringup.node_group import group_command
from unilab_bringup.prepare import PreparedRun
from unilab_bringup.progress import ProgressDisplay
from unilab_bringup.summary import merge_summary as merge_summary_file
from unilab_core.ros.runtime import (_install_sigterm, create_composed, destroy_bounded,
                                     keep_context_on_stop, rclpy_signal_options,
                                     restore_handlers, spin_nodes)
from unilab_core.transport import backend
from unilab_policy import distributed


def executable_path(package: str, executable: str) -> pathlib.Path:
    """Return the installed console script of a node (what ``ros2 run`` would start)."""
    from ament_index_python.packages import get_package_prefix
    return pathlib.Path(get_package_prefix(package)) / 'lib' / package / executable


def node_command(spec, params_file: pathlib.Path, graph=None) -> list[str]:
    """Return the command line that starts one node of ``graph`` in its own process."""
    extra = graph.ros_args(spec.name) if graph is not None else []
    return [str(executable_path(spec.package, spec.executable)), '--ros-args',
            '-r', f'__node:={spec.name}', *extra, '--params-file', str(params_file)]


def _read_last_metrics(path: pathlib.Path) -> dict:
    if not path.is_file():
        return {}
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return rows[-1] if rows else {}


def merge_summary(run: PreparedRun, extra: dict) -> dict:
    """Add safety counters and run facts to the trainer's summary.json."""
    return merge_summary_file(run.run_dir, extra)


class GraphFailed(RuntimeError):
    """A node of a graph exited early or with an error; the message says which and where."""


#: Lines of a failed node's log that its GraphFailed message carries.
LOG_TAIL_LINES = 12
#: The most of a log's end read for them.
LOG_TAIL_BYTES = 16384


def exit_text(code: int | None, early: bool = False) -> str:
    """Say how a process ended: ``exited with 1``, ``exited early with -11 (SIGSEGV)``."""
    text = f'exited {"early " if early else ""}with {code}'
    if code is not None and code < 0:
        try:
            text += f' ({signal.Signals(-code).name})'
        except ValueError:
            pass
    return text


def failed_node(name: str, code: int | None, log: pathlib.Path,
                early: bool = False) -> GraphFailed:
    """Return the GraphFailed of process ``name``: how it ended and its log's last lines."""
    try:
        with open(log, 'rb') as f:  # the end only: a long run's log may be large
            f.seek(max(0, f.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            tail = f.read().decode(errors='replace').splitlines()[-LOG_TAIL_LINES:]
    except OSError:
        tail = []
    shown = ''.join(f'\n  | {line}' for line in tail)
    return GraphFailed(f'{name} {exit_text(code, early)}; see {log}'
                       + (f'; its last lines:{shown}' if shown else ''))


def spin_composed(graph, params_file: pathlib.Path, executor: str = 'events',
                  until: Callable[[list], bool] | None = None,
                  on_tick: Callable[[list], None] | None = None) -> dict:
    """
    Run every node of ``graph`` in this process on one executor; return their counters.

    Runs until ``until(nodes)`` is true, or until Ctrl-C / SIGTERM when it is None.
    """
    import rclpy

    # Ctrl-C reaches the nodes' close path with the context up (a deploy's gate sends its
    # zero command there), as in a node process (``runtime.spin_process``).
    held = keep_context_on_stop()
    rclpy.init(args=['--ros-args', '--params-file', str(params_file)],
               signal_handler_options=rclpy_signal_options(held))
    nodes = []
    try:
        nodes = create_composed(graph.nodes, graph.ros_args)
        spin_nodes(nodes, executor, until=(lambda: until(nodes)) if until else None,
                   on_tick=(lambda: on_tick(nodes)) if on_tick else None)
        if on_tick is not None:
            on_tick(nodes)
        return {n.get_name(): dict(getattr(n, 'counters', {})) for n in nodes}
    finally:
        destroy_bounded(nodes)
        restore_handlers(held)


def process_layout(graph, one_per_node: bool = False) -> list[tuple[str, tuple]]:
    """
    Return ``[(process name, node specs)]``: which nodes of ``graph`` share a process.

    One process per node, but the nodes of ``graph.together`` in one (named
    ``a+b+c``) unless ``one_per_node``.
    """
    together = () if one_per_node else tuple(graph.together)
    layout, grouped = [], [s for s in graph.nodes if s.name in together]
    if grouped:
        layout.append(('+'.join(s.name for s in grouped), tuple(grouped)))
    layout += [(s.name, (s,)) for s in graph.nodes if s.name not in together]
    return layout


def _make_idle(pid: int) -> None:
    """
    Put a process just started under SCHED_IDLE (``Graph.idle``), before its imports.

    From here, not in the child before exec (``preexec_fn`` is unsafe beside threads):
    the child has run a few milliseconds at normal priority by then. Refused (no
    SCHED_IDLE here): it runs as started; the node moves itself when it can.
    """
    try:
        os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError):
        pass


def spin_processes(graph, params_file: pathlib.Path, logs: pathlib.Path,
                   until: Callable[[dict], bool] | None = None,
                   on_tick: Callable[[], None] | None = None,
                   one_per_node: bool = False) -> dict[str, int | None]:
    """
    Run ``graph`` in processes (``process_layout``); stop them all when ``until(procs)``.

    Without ``until`` it runs until Ctrl-C. A process that exits on its own before
    that is a GraphFailed naming it and its log, unless every node in it is
    ``optional`` in the graph (then its exit is reported and the rest runs on).
    Returns the exit codes by process name.
    """
    logs.mkdir(parents=True, exist_ok=True)
    if threading.current_thread() is threading.main_thread():
        # `kill PID` (SIGTERM) stops the nodes as Ctrl-C does, and so does SIGINT even when a
        # background start inherited it ignored: the parent must never leave its nodes behind.
        _install_sigterm()
        if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
            signal.signal(signal.SIGINT, signal.default_int_handler)  # (the CLI's is kept)
    procs = {}
    gone: set[str] = set()
    # Each node asks the kernel to stop it when this process dies, even by SIGKILL
    # (unilab_core.ros.runtime.stop_with_parent).
    env = dict(os.environ, UNILAB_PARENT_PID=str(os.getpid()))
    try:
        optional = set()
        for name, specs in process_layout(graph, one_per_node):
            if len(specs) == 1:
                command = node_command(specs[0], params_file, graph)
            else:
                command = group_command(graph, tuple(s.name for s in specs), params_file,
                                        logs / f'{name}.json')
            if all(s.name in graph.optional for s in specs):
                optional.add(name)
            out = open(logs / f'{name}.log', 'w')
            procs[name] = subprocess.Popen(command, env=env, stdout=out,
                                           stderr=subprocess.STDOUT)
            if all(s.name in graph.idle for s in specs):
                _make_idle(procs[name].pid)
        try:
            while True:
                time.sleep(0.5)
                if on_tick is not None:
                    on_tick()
                if until is not None and until(procs):
                    break
                dead = [n for n, p in procs.items() if p.poll() is not None]
                for n in [n for n in dead if n in optional and n not in gone]:
                    gone.add(n)
                    print(f'unilab: node `{n}` exited ({procs[n].returncode}); the graph '
                          f'runs on without it; see {logs}/{n}.log', file=sys.stderr,
                          flush=True)
                dead = [n for n in dead if n not in optional]
                if len(dead) == 1:
                    raise failed_node(dead[0], procs[dead[0]].returncode,
                                      logs / f'{dead[0]}.log', early=True)
                if dead:
                    raise GraphFailed(f'node(s) {dead} exited early; see {logs}')
        except KeyboardInterrupt:
            pass
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 10.0
        for p in procs.values():
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    return {n: p.returncode for n, p in procs.items()}


def run_composed(run: PreparedRun, progress: bool = True) -> dict:
    """Train with every node in this process on one executor until the trainer is done."""
    display = ProgressDisplay(run.cfg.run.total_steps, enabled=progress)
    state = {}

    def trainer_of(nodes):
        if 'trainer' not in state:
            state['trainer'] = next(n for n in nodes if n.get_name() == 'trainer')
            state['start'] = state['trainer'].trainer.env_steps
        return state['trainer']

    def tick(nodes):
        t = trainer_of(nodes).trainer
        recent = t.episode_returns[-t.num_envs:]
        display.update(t.env_steps, state['start'],
                       sum(recent) / len(recent) if recent else None)

    with display:
        stats = spin_composed(run.graph, run.params_file, run.cfg.run.executor,
                              until=lambda nodes: trainer_of(nodes).done, on_tick=tick)
    return merge_summary(run, {'process_mode': 'composed', 'node_counters': stats,
                               'ranks': distributed.world_size()})


def run_multiprocess(run: PreparedRun, progress: bool = True) -> dict:
    """Train with one process per node and the same parameter file, until the trainer ends."""
    logs = run.run_dir / 'logs'
    display = ProgressDisplay(run.cfg.run.total_steps, enabled=progress)

    def tick():
        last = _read_last_metrics(run.run_dir / 'metrics.csv')
        if last:
            ret = last.get('charts/mean_return', '')
            display.update(int(float(last['env_steps'])), 0,
                           float(ret) if ret not in ('', 'nan') else None)

    with display:
        codes = spin_processes(run.graph, run.params_file, logs,
                               until=lambda procs: procs['trainer'].poll() is not None,
                               on_tick=tick)
    summary = merge_summary(run, {'process_mode': 'multiprocess'})
    if codes['trainer'] != 0 and not summary.get('failed'):
        raise failed_node('trainer', codes['trainer'], logs / 'trainer.log')
    return summary


def run_graph(run: PreparedRun, progress: bool = True) -> dict:
    """Run the graph in the configured process mode (and transport backend)."""
    # One process-wide setting read by every TensorPublisher; node processes inherit it.
    os.environ[backend.ENV] = run.cfg.transport.backend
    if run.cfg.run.process_mode == 'multiprocess':
        return run_multiprocess(run, progress)
    return run_composed(run, progress)
