# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A terminal's Ctrl-C on ``bin/unilab train``: exit 130, the run kept, no node left behind.

A terminal sends SIGINT to its whole foreground process group: the CLI and, with
``--multiprocess``, every node process at once. Each node ignores further stop
signals once its close path runs (``unilab_core.ros.runtime``), so the trainer
writes its final checkpoint and the CLI merges the gate's counters into
``summary.json``. ``test_launch_real.py`` checks the same for ``ros2 launch``.
"""

import json
import os
import signal
import subprocess
import sys

from conftest import TINY
from graph_processes import finish, kill_group, no_orphans, wait_training
import pytest


@pytest.mark.system
@pytest.mark.parametrize('mode', [[], ['--multiprocess']], ids=['composed', 'multiprocess'])
def test_a_process_group_sigint_exits_130_and_keeps_the_run(tmp_path, tiny_config, mode):
    run_dir = tmp_path / 'run'
    proc = subprocess.Popen(
        [sys.executable, '-m', 'unilab.cli', 'train', '--steps', '50000000', *TINY,
         '--run-dir', str(run_dir), '--config', str(tiny_config), *mode],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=dict(os.environ, PYTHONUNBUFFERED='1'), start_new_session=True)
    try:
        wait_training(proc, run_dir)
        os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl-C: the whole group
        out = finish(proc, 120)
    finally:
        kill_group(proc)
    assert proc.returncode == 130, out[-3000:]
    assert 'Traceback' not in out, out[-3000:]
    summary = json.loads((run_dir / 'summary.json').read_text())
    # The final checkpoint: the one written at the stop, after the last update counted.
    final = run_dir / 'checkpoints' / f'model_{summary["updates"]:06d}.pt'
    assert summary['checkpoint'] == str(final) and final.is_file(), summary
    assert summary['process_mode'] == ('multiprocess' if mode else 'composed')
    assert summary['safety'], summary
    assert no_orphans(run_dir) == []
