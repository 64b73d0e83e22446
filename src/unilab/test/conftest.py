# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Fixtures for the system tests: an isolated ROS domain and a CLI runner."""

import os
import subprocess
import sys

import pytest
from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()

#: The launch tests: ``bin/unilab test`` runs them in its second stream, beside the other
#: packages' tests, while the first runs the rest of this folder (docs/testing.md).
LAUNCH_TESTS = frozenset({'test_launch_real.py', 'test_launch_agreement.py', 'test_robot_sim.py'})
_PARTS = ('launch', 'rest')


def pytest_ignore_collect(collection_path, config):
    """Collect one part of this folder when ``UNILAB_TEST_PART`` names it; all of it when unset."""
    part = os.environ.get('UNILAB_TEST_PART', '')
    if not part or collection_path.suffix != '.py' or not collection_path.name.startswith('test_'):
        return None
    if part not in _PARTS:
        raise pytest.UsageError(f'UNILAB_TEST_PART={part!r}: expected one of {", ".join(_PARTS)}')
    is_launch = collection_path.name in LAUNCH_TESTS
    return True if is_launch != (part == 'launch') else None


#: Small, fast training settings shared by the system tests.
TINY = ['--num-envs', '8', '--no-progress']


def cli(*args, timeout=300, check=False):
    """Run ``python -m unilab.cli ARGS`` and return the CompletedProcess."""
    env = dict(os.environ)
    env.setdefault('PYTHONUNBUFFERED', '1')
    proc = subprocess.run([sys.executable, '-m', 'unilab.cli', *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f'unilab {args} exited {proc.returncode}:\n{proc.stdout}\n'
                             f'{proc.stderr}')
    return proc


def cli_here(capsys, *args):
    """
    Run ``unilab.cli.main(ARGS)`` in this process; return it as a CompletedProcess.

    For start-up errors (exit 2 before any node starts): the same code path as
    ``cli`` without a new interpreter importing torch each time. An uncaught
    exception propagates (a process would print it as a traceback).
    """
    from unilab.cli import main
    capsys.readouterr()
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    out = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out.out, out.err)


@pytest.fixture
def tiny_config(tmp_path):
    """Return a YAML that makes a run short: small rollouts, no TensorBoard."""
    path = tmp_path / 'tiny.yaml'
    path.write_text('rollout: {rollout_length: 16, chunk_length: 8}\n'
                    'policy_update: {batch_size: 64, epochs: 2}\n'
                    'logging: {tensorboard: false, checkpoint_every: 2}\n'
                    'model: {hidden_sizes: [32, 32]}\n')
    return path
