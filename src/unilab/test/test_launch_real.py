# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``ros2 launch`` and the ``ros2`` CLI for real against the training graph, and its failures.

Needs upstream launch, launch_ros, ros2launch and ros2cli (an apt ROS 2, or the wheels
``.ci/run`` installs from ../shared/ros/launch); without them every test here skips and
says which import failed. Each run is small (a few seconds of training) and every test
checks that no node process outlives its launch.
"""

import os
import pathlib
import shutil
import signal
import subprocess
import sys

from graph_processes import finish, kill_group, no_orphans, pid_of, wait_training
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


def _launch_tools() -> str:
    try:
        import launch_ros.actions  # noqa: F401 - needs composition_interfaces too
        import ros2launch  # noqa: F401
    except ImportError as exc:
        return f'upstream launch tools not installed ({exc}); .ci/run installs them'
    if shutil.which('ros2') is None:
        return 'the ros2 command is not on PATH'
    return ''


pytestmark = pytest.mark.skipif(bool(_launch_tools()), reason=_launch_tools() or 'ok')


def _launch(run_dir, steps=2048, cwd=ROOT, **args):
    """Start ``ros2 launch unilab train.launch.py`` (as users type it) in its own group."""
    extra = [f'{k}:={v}' for k, v in args.items()]
    return subprocess.Popen(
        ['ros2', 'launch', 'unilab', 'train.launch.py', f'steps:={steps}',
         'num_envs:=8', f'run_dir:={run_dir}', *extra], cwd=cwd, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _ros2(*args, timeout=60):
    return subprocess.run(['ros2', *args], capture_output=True, text=True, timeout=timeout)


def test_launch_from_the_repository_root_trains_and_exits_0(tmp_path):
    # The literal command, typed in the workspace root: ros2launch takes a first argument
    # that names an existing file for a launch file, so nothing at the root may be called
    # `unilab` (the entry script is bin/unilab).
    assert not (ROOT / 'unilab').exists()
    run_dir = tmp_path / 'run'
    proc = _launch(run_dir)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out[-3000:]
    import json
    summary = json.loads((run_dir / 'summary.json').read_text())
    assert summary['steps'] >= 2048 and pathlib.Path(summary['checkpoint']).is_file()
    assert summary['process_mode'] == 'launch' and 'safety' in summary
    assert no_orphans(run_dir) == []


@pytest.mark.parametrize('name, package, argument', [
    ('train.launch.py', 'unilab_bringup', 'num_envs'),
    ('deploy.launch.py', 'unilab_bringup', 'model'),
    ('adapt.launch.py', 'unilab_adapt', 'model'),
    ('robot_sim.launch.py', 'unilab_bringup', 'variant'),
])
def test_the_unilab_package_has_the_launch_files_users_name(name, package, argument):
    # Each is a thin include of the real one: the same arguments, from the root and elsewhere.
    ours = subprocess.run(['ros2', 'launch', 'unilab', name, '--show-args'], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    real = subprocess.run(['ros2', 'launch', package, name, '--show-args'], cwd='/',
                          capture_output=True, text=True, timeout=60)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert f"'{argument}':" in ours.stdout and ours.stdout == real.stdout


def test_the_ros2_cli_sees_the_graph_and_a_terminal_ctrl_c_keeps_the_checkpoint(tmp_path):
    run_dir = tmp_path / 'run'
    proc = _launch(run_dir, steps=50_000_000, cwd=tmp_path)  # from a folder of the user's
    try:
        wait_training(proc, run_dir)
        nodes = _ros2('node', 'list', '--no-daemon', '--spin-time', '5').stdout.split()
        assert {'/bridge', '/perception', '/policy', '/trainer', '/safety'} <= set(nodes)
        echo = _ros2('topic', 'echo', '--once', '--no-daemon', '/diagnostics',
                     'diagnostic_msgs/msg/DiagnosticArray')
        assert echo.returncode == 0 and 'hardware_id' in echo.stdout, echo.stderr
        find = ('--no-daemon', '--spin-time', '5')
        get = _ros2('param', 'get', *find, '/trainer', 'rollout.num_envs')
        assert get.stdout.strip() == 'Integer value is: 8', get.stdout + get.stderr
        dump = _ros2('param', 'dump', *find, '/trainer').stdout
        assert 'num_envs: 8' in dump and 'ros__parameters: {}' not in dump
        refused = _ros2('param', 'set', *find, '/trainer', 'rollout.num_envs', '4')
        assert 'read-only' in refused.stdout + refused.stderr
        # Ctrl-C in a terminal: SIGINT to the whole process group (launch and every node),
        # then launch sends its own. The trainer still saves and the summary is complete.
        os.killpg(proc.pid, signal.SIGINT)
        out = finish(proc, 120)
    finally:
        kill_group(proc)
    assert 'Traceback' not in out, out[-3000:]
    import json
    summary = json.loads((run_dir / 'summary.json').read_text())
    assert pathlib.Path(summary['checkpoint']).is_file() and 'safety' in summary
    assert no_orphans(run_dir) == []


@pytest.mark.parametrize('victim', ['trainer_node', 'bridge_node'])
def test_a_killed_node_fails_the_launch_and_leaves_no_process(tmp_path, victim):
    run_dir = tmp_path / 'run'
    proc = _launch(run_dir, steps=50_000_000)
    try:
        wait_training(proc, run_dir)
        os.kill(pid_of(victim, run_dir), signal.SIGKILL)
        out = finish(proc, 120)  # no hang: the launch ends by itself
    finally:
        kill_group(proc)
    assert proc.returncode != 0
    assert f'{victim.removesuffix("_node")} exited with -9' in out
    assert no_orphans(run_dir) == []


def test_nodes_stop_with_a_killed_launch_and_the_trainer_still_saves(tmp_path):
    run_dir = tmp_path / 'run'
    proc = _launch(run_dir, steps=50_000_000)
    try:
        wait_training(proc, run_dir)
        launch_pid = next(p for p in [proc.pid] + _children(proc.pid)
                          if b'ros2' in pathlib.Path(f'/proc/{p}/cmdline').read_bytes())
        os.kill(launch_pid, signal.SIGKILL)  # nothing of launch runs after this
        finish(proc, 60)
    finally:
        kill_group(proc)
    assert no_orphans(run_dir) == []  # the kernel's parent-death signal stopped them
    assert (run_dir / 'summary.json').is_file() and list((run_dir / 'checkpoints').glob('*.pt'))


def _children(pid) -> list[int]:
    path = pathlib.Path(f'/proc/{pid}/task/{pid}/children')
    return [int(c) for c in path.read_text().split()] if path.is_file() else []


if __name__ == '__main__':
    sys.exit(pytest.main([__file__, '-v']))
