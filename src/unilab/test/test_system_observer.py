# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A separate plain rclpy process sees the graph and its topics while training runs."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

HERE = pathlib.Path(__file__).resolve().parent


@pytest.mark.system
def test_external_process_sees_nodes_and_topics(tmp_path):
    run_dir = tmp_path / 'run'
    train = subprocess.Popen(
        [sys.executable, '-m', 'unilab.cli', 'train', '--steps', '2000000', '--num-envs', '8',
         '--run-dir', str(run_dir), '--no-progress'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ))
    try:
        obs = subprocess.run([sys.executable, str(HERE / 'observer.py'), '90'],
                             capture_output=True, text=True, timeout=150)
        deadline = time.monotonic() + 60
        while not (run_dir / 'metrics.csv').is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        train.send_signal(signal.SIGINT)
        out, _ = train.communicate(timeout=60)
    seen = json.loads(obs.stdout.strip().splitlines()[-1])
    assert seen['nodes'] == ['bridge', 'perception', 'policy', 'safety', 'trainer'], out
    assert seen['joint_states'] >= 3 and seen['action'] >= 3
    assert seen['joint_names'] == 8 * 6  # one batched JointState: env<i>/<joint>
    # Ctrl-C stops training cleanly: checkpoint and summary of what was done so far, and
    # the exit status says it was interrupted (130, as for every subcommand).
    assert train.returncode == 130, out
    assert 'Traceback' not in out
    summary = json.loads((run_dir / 'summary.json').read_text())
    assert 0 < summary['steps'] < 2000000
    assert summary['stopped_early'] is True
    assert pathlib.Path(summary['checkpoint']).is_file()
    assert 'safety' in summary
