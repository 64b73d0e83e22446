# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A node's console script: a stop while the node's module imports ends quietly with exit 0."""

import importlib.metadata
import importlib.util
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import pytest

#: The packages whose console scripts start nodes (``unilab`` is the CLI, which has its own).
NODE_DISTRIBUTIONS = ('unilab-adapt', 'unilab-bag', 'unilab-bridge', 'unilab-perception',
                      'unilab-policy', 'unilab-safety', 'unilab-view')

#: Seconds the child may take to reach its slow import (Python start-up on a busy machine).
START_S = 60.0


def _start(tmp_path, module_body: str):
    """Start ``run_node('slow_node')`` in a child; return it once the import has begun."""
    marker = tmp_path / 'importing'
    (tmp_path / 'slow_node.py').write_text(
        f'import pathlib\nimport time\npathlib.Path({str(marker)!r}).write_text("x")\n'
        + textwrap.dedent(module_body))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]))
    child = subprocess.Popen(
        # Python's own Ctrl-C handler, as a node the runner starts has it (a test run
        # started in the background inherits SIGINT ignored).
        [sys.executable, '-c', 'import signal, sys; '
         'signal.signal(signal.SIGINT, signal.default_int_handler); '
         "from unilab_core.entry import run_node; sys.exit(run_node('slow_node', ['a']))"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + START_S
    while not marker.exists():
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, 'the child never began its import'
        time.sleep(0.02)
    return child


@pytest.mark.parametrize('sig', [signal.SIGINT, signal.SIGTERM])
def test_a_stop_while_the_node_imports_exits_0_with_one_line_and_no_traceback(tmp_path, sig):
    child = _start(tmp_path, 'time.sleep(60)  # torch, MuJoCo, rclpy on a busy machine')
    child.send_signal(sig)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert 'Traceback' not in err and 'KeyboardInterrupt' not in err, err
    assert err.strip() == 'slow_node: stopped while starting'


def test_the_node_runs_with_its_arguments_and_its_exit_status_once_imported(tmp_path):
    child = _start(tmp_path, """
        def main(args=None):
            print('ran with', args)
            return 3
    """)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 3, err
    assert out.strip() == "ran with ['a']"


def test_an_import_that_fails_still_says_why(tmp_path):
    child = _start(tmp_path, "raise ImportError('no module named mujoco')")
    out, err = child.communicate(timeout=30)
    assert child.returncode == 1
    assert 'ImportError: no module named mujoco' in err


def test_every_node_console_script_starts_through_its_light_entry_module():
    scripts = []
    for dist in NODE_DISTRIBUTIONS:
        try:
            eps = importlib.metadata.distribution(dist).entry_points
        except importlib.metadata.PackageNotFoundError:
            pytest.skip(f'{dist} is not installed (build the workspace first)')
        scripts += [e for e in eps if e.group == 'console_scripts']
    assert len(scripts) >= 11
    for ep in scripts:
        module, func = ep.value.split(':')
        assert module.endswith('.entry_points'), f'{ep.name} -> {ep.value}'
        # Light: importing it in a fresh interpreter loads neither rclpy, torch nor MuJoCo.
        probe = subprocess.run(
            [sys.executable, '-c', f'import sys, {module}; getattr({module}, {func!r}); '
             "print(sorted(m for m in ('rclpy', 'torch', 'mujoco') if m in sys.modules))"],
            capture_output=True, text=True, timeout=60)
        assert probe.stdout.strip() == '[]', (ep.value, probe.stderr)
        # And the node's module it names exists.
        package = module.rsplit('.', 1)[0]
        assert pathlib.Path(importlib.util.find_spec(package).origin).with_name(
            f'{func}.py').is_file(), ep.value
