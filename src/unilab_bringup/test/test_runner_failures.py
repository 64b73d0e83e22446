# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""What a graph run says when one of its node processes dies: which, how, and its log."""

import subprocess
import sys

from unilab_bringup import runner


def test_a_node_killed_by_a_signal_is_named_with_the_signal_and_its_logs_last_lines(tmp_path):
    log = tmp_path / 'trainer.log'
    log.write_text(''.join(f'line {i}\n' for i in range(40))
                   + 'Fatal Python error: Segmentation fault\n')
    # A real process killed by SIGSEGV: its exit status as subprocess reports it.
    proc = subprocess.run([sys.executable, '-c',
                           'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'])
    assert proc.returncode == -11
    text = str(runner.failed_node('trainer', proc.returncode, log))
    assert text.startswith(f'trainer exited with -11 (SIGSEGV); see {log}')
    assert 'Fatal Python error: Segmentation fault' in text
    shown = text.splitlines()[1:]
    assert len(shown) == runner.LOG_TAIL_LINES and shown[0] == '  | line 29'


def test_an_early_exit_says_early_and_a_missing_log_adds_nothing(tmp_path):
    text = str(runner.failed_node('policy', 1, tmp_path / 'none.log', early=True))
    assert text == f'policy exited early with 1; see {tmp_path / "none.log"}'
    assert runner.exit_text(-200) == 'exited with -200'  # no such signal: the number only


def test_a_large_log_gives_its_last_lines(tmp_path):
    log = tmp_path / 'big.log'
    log.write_text('x' * 200 + '\n' + ''.join(f'row {i}\n' for i in range(200_000)))
    shown = str(runner.failed_node('bridge', 1, log)).splitlines()[1:]
    assert shown == [f'  | row {i}' for i in range(200_000 - runner.LOG_TAIL_LINES, 200_000)]


def test_a_learner_process_is_made_idle_as_it_starts():
    # Graph.idle: the starter moves the process to SCHED_IDLE right after spawning it.
    import os
    import subprocess
    import sys
    from unilab_bringup.runner import _make_idle
    proc = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])
    try:
        _make_idle(proc.pid)
        assert os.sched_getscheduler(proc.pid) == os.SCHED_IDLE
    finally:
        proc.kill()
        proc.wait()
