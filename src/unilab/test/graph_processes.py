# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Test helpers: find a running graph's processes by its run directory, wait on them.

Every node process of a graph carries the run's parameter file on its command line,
so the run directory names the processes of one graph and no other.
"""

import os
import pathlib
import signal
import subprocess
import time


def processes_of(run_dir) -> list[int]:
    """Return the pids whose command line names ``run_dir`` (the nodes' parameter file)."""
    found = []
    for proc in pathlib.Path('/proc').iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / 'cmdline').read_bytes().replace(b'\0', b' ').decode(errors='replace')
        except OSError:
            continue
        if str(run_dir) in cmd:
            found.append(int(proc.name))
    return found


def no_orphans(run_dir, wait_s=30.0) -> list[int]:
    """Return the processes of ``run_dir`` still running after up to ``wait_s``."""
    deadline = time.monotonic() + wait_s
    while processes_of(run_dir) and time.monotonic() < deadline:
        time.sleep(0.5)
    return processes_of(run_dir)


def wait_training(proc, run_dir, timeout_s=180.0) -> None:
    """Wait until the trainer has written its first metrics (the graph is running)."""
    deadline = time.monotonic() + timeout_s
    while not (pathlib.Path(run_dir) / 'metrics.csv').is_file():
        assert proc.poll() is None, proc.stdout.read()[-3000:]
        assert time.monotonic() < deadline, 'the training graph did not start'
        time.sleep(0.5)


def pid_of(executable, run_dir) -> int:
    """Return the pid of the node process ``executable`` of ``run_dir``'s graph."""
    for pid in processes_of(run_dir):
        argv = pathlib.Path(f'/proc/{pid}/cmdline').read_bytes().split(b'\0')[:2]
        if any(a.decode().endswith('/' + executable) for a in argv):
            return pid
    raise AssertionError(f'no {executable} process for {run_dir}')


def finish(proc, timeout_s: float) -> str:
    """
    Return ``proc``'s output once it exits; past ``timeout_s`` fail with its threads' stacks.

    A process of ours that outlasts the limit is asked for every thread's stack
    (``kill -USR1``: ``unilab_core.ros.runtime.dump_stacks_on_signal``, the whole group),
    then killed with its group and reaped: the failure says where it hung, and no
    process of it (nor a zombie holding a shared-memory name) is left for the next test.
    """
    try:
        return proc.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGUSR1)
        time.sleep(2.0)
        os.killpg(proc.pid, signal.SIGKILL)
        out = proc.communicate(timeout=30)[0]
        raise AssertionError(f'still running {timeout_s:.0f} s on; its threads:\n'
                             f'{out[-8000:]}') from None


def kill_group(proc) -> None:
    """SIGKILL what is left of ``proc``'s process group and reap ``proc`` (no zombie)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(30)
