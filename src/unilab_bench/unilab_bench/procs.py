# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Child processes of the benchmarks that run whole graphs: a fresh run directory, start, stop."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import time

from unilab_bringup.paths import default_config_files
from unilab_core.config import dump_config, load_run_config


def fresh_run_dir(task: str, path: pathlib.Path) -> pathlib.Path:
    """Write a run directory with a freshly initialised network of the default config."""
    import yaml
    from unilab_bringup.graphs import policy_params
    from unilab_bringup.prepare import task_info
    from unilab_policy.checkpoint import save_checkpoint
    from unilab_policy.networks import bundle_from_params
    cfg = load_run_config(list(default_config_files()), {'run.task': task})
    info, _ = task_info(task)
    params = policy_params(cfg, info)
    path.mkdir(parents=True, exist_ok=True)
    dump_config(cfg, path / 'config.yaml')
    (path / 'graph_params.yaml').write_text(yaml.safe_dump(
        {'policy': {'ros__parameters': params.model_dump(mode='python')}}))
    save_checkpoint(path / 'checkpoints' / 'latest.pt',
                    {'bundle': bundle_from_params(params, seed=0).state_dict()})
    return path


def start(command: list[str], log) -> subprocess.Popen:
    """Start ``command`` in its own process group (``stop`` ends every process in it)."""
    return subprocess.Popen(command, env=dict(os.environ), stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen, timeout_s: float = 20.0) -> None:
    """
    SIGINT the process group of ``proc`` (as Ctrl-C would), SIGKILL it after ``timeout_s``.

    The whole group: a process started in the background ignores SIGINT (the shell's rule
    for background jobs, inherited), so a ``--multiprocess`` parent would die by the
    SIGKILL alone and leave its nodes running.
    """
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGINT)
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGINT)  # nodes the parent left behind, if any
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
