# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A separate plain rclpy process sees the graph and its topics while training runs.

It also listens where a robot's nodes would: ``/joint_states`` and ``/clock`` on the
same domain must stay silent (the training graph keeps its own names).
"""

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
@pytest.mark.parametrize('mode', [[], ['--multiprocess']], ids=['composed', 'multiprocess'])
def test_external_process_sees_the_graph_and_a_robots_names_stay_untouched(tmp_path, mode):
    run_dir = tmp_path / 'run'
    train = subprocess.Popen(
        [sys.executable, '-m', 'unilab.cli', 'train', '--steps', '2000000', '--num-envs', '8',
         '--run-dir', str(run_dir), '--no-progress', *mode],
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
    assert seen['joint_states'] >= 3 and seen['clock'] >= 3 and seen['action'] >= 3, seen
    assert seen['joint_names'] == 8 * 6  # one batched JointState: env<i>/<joint>
    # A robot's computer on the same domain: its driver's /joint_states and the /clock its
    # use_sim_time nodes follow get nothing from training, while the graph's own names
    # carried messages to the same process at the same time.
    assert seen['robot_joint_states'] == 0 and seen['robot_clock'] == 0, seen
    # Ctrl-C stops training cleanly: checkpoint and summary of what was done so far, and
    # the exit status says it was interrupted (130, as for every subcommand).
    assert train.returncode == 130, out
