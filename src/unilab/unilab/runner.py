# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Start the graph composed in one process or as one process per node, and watch it."""

from __future__ import annotations

import csv
import json
import os
import pathlib
import signal
import subprocess
import time

from unilab.prepare import PreparedRun
from unilab.progress import ProgressDisplay
from unilab_core.atomic import atomic_write_text


def executable_path(package: str, executable: str) -> pathlib.Path:
    """Return the installed console script of a node (what ``ros2 run`` would start)."""
    from ament_index_python.packages import get_package_prefix
    return pathlib.Path(get_package_prefix(package)) / 'lib' / package / executable


def node_command(spec, params_file: pathlib.Path) -> list[str]:
    """Return the command line that starts one node in its own process."""
    return [str(executable_path(spec.package, spec.executable)), '--ros-args',
            '-r', f'__node:={spec.name}', '--params-file', str(params_file)]


def _read_last_metrics(path: pathlib.Path) -> dict:
    if not path.is_file():
        return {}
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return rows[-1] if rows else {}


def merge_summary(run: PreparedRun, extra: dict) -> dict:
    """Add safety counters and run facts to the trainer's summary.json."""
    path = run.run_dir / 'summary.json'
    summary = json.loads(path.read_text()) if path.is_file() else {}
    stats = run.run_dir / 'safety_stats.json'
    if stats.is_file():
        summary['safety'] = json.loads(stats.read_text())
    summary.update(extra)
    atomic_write_text(path, json.dumps(summary, indent=2))
    return summary


def run_composed(run: PreparedRun, progress: bool = True) -> dict:
    """Run every node in this process on one executor until the trainer is done."""
    import rclpy
    from unilab_core.ros.runtime import create_composed, spin_nodes

    rclpy.init(args=['--ros-args', '--params-file', str(run.params_file)])
    nodes = []
    try:
        nodes = create_composed(run.graph.nodes, [])
        trainer = next(n for n in nodes if n.get_name() == 'trainer')
        display = ProgressDisplay(run.cfg.run.total_steps, enabled=progress)
        start_steps = trainer.trainer.env_steps

        def tick():
            t = trainer.trainer
            recent = t.episode_returns[-t.num_envs:]
            display.update(t.env_steps, start_steps,
                           sum(recent) / len(recent) if recent else None)

        with display:
            spin_nodes(nodes, run.cfg.run.executor, until=lambda: trainer.done, on_tick=tick)
            tick()
        stats = {n.get_name(): dict(getattr(n, 'counters', {})) for n in nodes}
    finally:
        for n in nodes:
            n.destroy_node()
        rclpy.try_shutdown()
    return merge_summary(run, {'process_mode': 'composed', 'node_counters': stats})


def run_multiprocess(run: PreparedRun, progress: bool = True) -> dict:
    """Start one process per node with the same parameter file; stop them after training."""
    procs = {}
    logs = run.run_dir / 'logs'
    logs.mkdir(exist_ok=True)
    env = dict(os.environ)
    try:
        for spec in run.graph.nodes:
            out = open(logs / f'{spec.name}.log', 'w')
            procs[spec.name] = subprocess.Popen(node_command(spec, run.params_file), env=env,
                                                stdout=out, stderr=subprocess.STDOUT)
        display = ProgressDisplay(run.cfg.run.total_steps, enabled=progress)
        with display:
            while True:
                time.sleep(0.5)
                last = _read_last_metrics(run.run_dir / 'metrics.csv')
                if last:
                    ret = last.get('charts/mean_return', '')
                    display.update(int(float(last['env_steps'])), 0,
                                   float(ret) if ret not in ('', 'nan') else None)
                trainer_rc = procs['trainer'].poll()
                if trainer_rc is not None:
                    break
                dead = [n for n, p in procs.items() if p.poll() is not None]
                if dead:
                    raise RuntimeError(f'node(s) {dead} exited early; see {logs}')
        if trainer_rc != 0:
            raise RuntimeError(f'trainer exited with {trainer_rc}; see {logs / "trainer.log"}')
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
    return merge_summary(run, {'process_mode': 'multiprocess'})


def run_graph(run: PreparedRun, progress: bool = True) -> dict:
    """Run the graph in the configured process mode."""
    if run.cfg.run.process_mode == 'multiprocess':
        return run_multiprocess(run, progress)
    return run_composed(run, progress)
