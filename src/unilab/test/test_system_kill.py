# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
kill -9 the trainer process during training: no corrupt checkpoint, resume continues.

After the resume, metrics.csv and the TensorBoard events hold one history:
what the killed run logged after its last checkpoint is dropped, not logged twice.
"""

import csv
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

from conftest import cli, TINY
import pytest
import torch


def trainer_pid(run_dir: pathlib.Path) -> int | None:
    """Find the trainer node process of this run (its command line names the run's params)."""
    needle = str(run_dir / 'graph_params.yaml')
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            cmd = pathlib.Path(f'/proc/{pid}/cmdline').read_bytes().split(b'\0')
        except OSError:
            continue
        text = [c.decode(errors='replace') for c in cmd]
        if any(c.endswith('trainer_node') for c in text) and needle in text:
            return int(pid)
    return None


def _rows(run_dir: pathlib.Path) -> int:
    try:
        return max(0, len((run_dir / 'metrics.csv').read_text().splitlines()) - 1)
    except OSError:
        return 0


@pytest.mark.system
def test_kill_9_trainer_then_resume(tmp_path, tiny_config):
    run_dir = tmp_path / 'run'
    ckpts = run_dir / 'checkpoints'
    tb = tmp_path / 'tb.yaml'
    tb.write_text('logging: {tensorboard: true, checkpoint_every: 3}\n')
    train = subprocess.Popen(
        [sys.executable, '-m', 'unilab.cli', 'train', '--steps', '5000000', '--run-dir',
         str(run_dir), '--config', str(tiny_config), '--config', str(tb), '--multiprocess',
         *TINY],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        # Kill once metrics.csv holds rows after the last checkpoint (every 3rd update).
        while time.monotonic() < deadline and not (
                len(list(ckpts.glob('model_*.pt'))) >= 3 and _rows(run_dir) % 3):
            time.sleep(0.02)
        pid = trainer_pid(run_dir)
        assert pid is not None, 'trainer process not found'
        os.kill(pid, signal.SIGKILL)  # at an arbitrary point: collecting, updating or saving
        out, _ = train.communicate(timeout=60)
    finally:
        if train.poll() is None:
            train.kill()
    # One line names the dead node, its signal and its log; no traceback of the launcher.
    assert train.returncode == 1, out
    assert 'unilab: training failed: trainer exited with -9 (SIGKILL); see ' in out, out
    assert 'Traceback' not in out
    # Every checkpoint on disk is complete and loadable.
    files = sorted(ckpts.glob('model_*.pt'))
    assert len(files) >= 3
    for f in files:
        torch.load(f, weights_only=True)
    latest = torch.load(ckpts / 'latest.pt', weights_only=True)
    # Resume from the last complete checkpoint and keep going.
    cli('train', '--resume', run_dir, '--steps', (latest['env_steps'] + 256), *TINY, check=True)
    summary = json.loads((run_dir / 'summary.json').read_text())
    assert summary['updates'] == latest['updates'] + 2
    assert summary['steps'] == latest['env_steps'] + 256
    assert not list(ckpts.glob('.*.tmp'))
    # One history: every update once, env_steps never jumps back.
    with open(run_dir / 'metrics.csv', newline='') as f:
        rows = list(csv.DictReader(f))
    assert [int(r['update']) for r in rows] == list(range(1, summary['updates'] + 1))
    steps = [int(r['env_steps']) for r in rows]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(run_dir / 'tensorboard'))
    acc.Reload()
    tb_steps = [e.step for e in acc.Scalars('charts/env_steps')]
    assert tb_steps == sorted(set(tb_steps)) and tb_steps[-1] == summary['steps']


def _node_pids(run_dir: pathlib.Path) -> list[int]:
    """Return the pids of the node processes started for this run (by their params file)."""
    needle = str(run_dir / 'graph_params.yaml')
    pids = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            cmd = pathlib.Path(f'/proc/{pid}/cmdline').read_bytes().split(b'\0')
            state = pathlib.Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != 'Z' and needle in [c.decode(errors='replace') for c in cmd]:
            pids.append(int(pid))
    return pids


@pytest.mark.system
def test_kill_9_of_the_launcher_stops_every_node_process(tmp_path, tiny_config):
    run_dir = tmp_path / 'run'
    train = subprocess.Popen(
        [sys.executable, '-m', 'unilab.cli', 'train', '--steps', '5000000', '--run-dir',
         str(run_dir), '--config', str(tiny_config), '--multiprocess', *TINY],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        log = run_dir / 'logs' / 'trainer.log'
        # The trainer's start line and the gate's first statistics: the graph is up.
        while time.monotonic() < deadline and not (
                (run_dir / 'safety_stats.json').is_file() and log.is_file()
                and 'training on' in log.read_text()):
            time.sleep(0.05)
        nodes = _node_pids(run_dir)
        assert len(nodes) >= 4, 'the graph did not start'
        # SIGKILL: the launcher cannot stop its nodes itself; the kernel tells them.
        os.kill(train.pid, signal.SIGKILL)
        train.wait(10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _node_pids(run_dir):
            time.sleep(0.1)
        assert _node_pids(run_dir) == [], 'node processes outlived their launcher'
    finally:
        if train.poll() is None:
            train.kill()
        for pid in _node_pids(run_dir):
            os.kill(pid, signal.SIGKILL)
    # They stopped on their clean path: the trainer's summary says it was stopped.
    assert (run_dir / 'summary.json').is_file()
