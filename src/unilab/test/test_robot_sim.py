# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab robot-sim`` and ``unilab check-robot`` from the command line."""

import json
import os
import select
import subprocess
import sys
import time

from conftest import cli, cli_here
import pytest
from unilab_bringup.graphs import robot_sim_graph
from unilab_bringup.robot_sim import robot_sim_params
from unilab_core.pytest_fixtures import fresh_context  # noqa: F401 - a fixture
import yaml


def test_robot_sim_graph_shares_profile_fleet_and_time_scale_with_its_scenario():
    double, scenario = robot_sim_params('quad8', 'real', robots=3, time_scale=5.0, seed=2,
                                        goals=4, goal_timeout_s=2.0, results='/tmp/r.json')
    graph = robot_sim_graph(double, scenario)
    assert [n.name for n in graph.nodes] == ['robot_double', 'scenario']
    assert graph.end_node == 'scenario'
    params = yaml.safe_load(graph.params_yaml())
    d, s = params['robot_double']['ros__parameters'], params['scenario']['ros__parameters']
    assert d['profile'].endswith('quad8.yaml') and d['profile'] == s['profile']
    assert d['robots'] == s['robots'] == 3 and d['time_scale'] == s['time_scale'] == 5.0
    assert d['variant'] == 'real' and s['goals'] == 4 and s['goal_timeout_s'] == 2.0
    alone = robot_sim_graph(double)
    assert [n.name for n in alone.nodes] == ['robot_double'] and alone.end_node == ''


def test_robot_sim_scenario_waits_for_a_controller_until_the_duration_ends(tmp_path):
    results, stats = tmp_path / 'results.json', tmp_path / 'stats.json'
    proc = cli('robot-sim', '--robot', 'arm6', '--robots', '2', '--time-scale', '4',
               '--goals', '1', '--goal-timeout', '0.5', '--results', results,
               '--stats', stats, '--duration', '3', timeout=120)
    # Nobody subscribes to the goals: the scenario waits (wait_for_subscribers) until
    # --duration ends the run; the double ran the whole time.
    assert proc.returncode == 0, proc.stderr
    assert json.loads(stats.read_text())['steps'] > 0
    assert not results.exists()


def _wait_for(stream, text, timeout_s=60.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        ready, _, _ = select.select([stream], [], [], 0.5)
        if ready and text in stream.readline():
            return
    raise AssertionError(f'no line with {text!r} within {timeout_s} s')


def test_check_robot_passes_on_the_robot_double_and_fails_on_an_empty_graph():
    env = dict(os.environ)
    double = subprocess.Popen([sys.executable, '-m', 'unilab.cli', 'robot-sim', '--robot',
                               'ur5e'], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(double.stderr, 'time scale')  # the double's start-up line
        ok = cli('check-robot', '--robot', 'ur5e', '--timeout', '6')
        wrong = cli('check-robot', '--robot', 'arm6', '--timeout', '3')
    finally:
        double.terminate()
        double.communicate(timeout=30)
    assert 'trajectory_msgs/msg/JointTrajectory, subscribe, required' in ok.stdout
    assert 'robot double is running' in ok.stdout
    lines = {line.split()[1]: line.split()[0] for line in ok.stdout.splitlines()
             if line.startswith(('ok', 'MISSING', 'absent'))}
    assert lines['/scaled_joint_trajectory_controller/joint_trajectory'] == 'ok', ok.stdout
    # The arm6 profile's controller is forward_command: nothing takes its commands here.
    assert wrong.returncode == 1 and 'nothing subscribes to /forward_position_controller' \
        in wrong.stdout
    empty = cli('check-robot', '--robot', 'quad8', '--timeout', '1')
    assert empty.returncode == 1 and empty.stdout.splitlines()[-1].startswith('robot NOT ok')
    assert 'no publisher on /imu/data' in empty.stdout


def test_robot_side_commands_reject_bad_input_cleanly(tmp_path, capsys):
    for args, needle in ((['robot-sim', '--robot', 'arm7'], 'no shipped profile'),
                         (['robot-sim', '--robots', '0'], '`robots`'),
                         (['robot-sim', '--time-scale', '-1'], '`time_scale`'),
                         (['check-robot', '--robot', tmp_path / 'none.yaml'], 'not found')):
        proc = cli(*args) if args[0] == 'check-robot' else cli_here(capsys, *args)
        assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
        assert 'Traceback' not in proc.stderr


def _robot_sim_launch(values, monkeypatch) -> list:
    """Run robot_sim.launch.py's function with fake launch modules; return what it starts."""
    import importlib.util
    import pathlib
    from test_launch_agreement import _fake_launch_modules
    for name, mod in _fake_launch_modules(values).items():
        monkeypatch.setitem(sys.modules, name, mod)
    path = (pathlib.Path(__file__).resolve().parents[2] / 'unilab_bringup' / 'launch'
            / 'robot_sim.launch.py')
    spec = importlib.util.spec_from_file_location('robot_sim_launch', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    actions = module.generate_launch_description().args[0]
    opaque = next(a for a in actions if type(a).__name__ == 'OpaqueFunction')
    return opaque.kwargs['function'](context=None)


def test_launch_file_starts_the_robot_sim_graph_with_state_publishers(tmp_path, monkeypatch):
    import pathlib
    import xml.etree.ElementTree as ET
    values = {'robot': 'arm6', 'variant': 'real', 'robots': '2', 'time_scale': '3.0',
              'seed': '0', 'goals': '2', 'results': str(tmp_path / 'r.json'),
              'state_publisher': 'true'}
    started = _robot_sim_launch(values, monkeypatch)
    nodes = [a.kwargs for a in started if type(a).__name__ == 'Node']
    assert [(n['package'], n['name'], n.get('namespace')) for n in nodes] == [
        ('unilab_bridge', 'robot_double', ''), ('unilab_bridge', 'scenario', ''),
        ('robot_state_publisher', 'robot_state_publisher', '/robot0'),
        ('robot_state_publisher', 'robot_state_publisher', '/robot1')]
    # Our nodes are watched (the scenario ending stops the launch, the double ending fails
    # it); robot_state_publisher is not ours to judge.
    handlers = [a.args[0] for a in started if type(a).__name__ == 'RegisterEventHandler']
    assert [h.kwargs['target_action'].kwargs['name'] for h in handlers
            if type(h).__name__ == 'OnProcessExit'] == ['robot_double', 'scenario']
    params = yaml.safe_load(pathlib.Path(nodes[0]['parameters'][0]).read_text())
    d = params['robot_double']['ros__parameters']
    assert d['robots'] == 2 and d['time_scale'] == 3.0 and d['variant'] == 'real'
    assert d['publish_description'] is False  # robot_state_publisher publishes it
    rsp = nodes[3]
    assert rsp['parameters'][0]['frame_prefix'] == 'robot1/'
    assert rsp['remappings'] == [('joint_states', '/robot1/joint_states')]
    urdf = ET.fromstring(rsp['parameters'][0]['robot_description'])
    assert urdf.get('name') == 'arm6'


def test_launch_file_starts_the_legged_double_with_its_own_description(tmp_path, monkeypatch):
    import pathlib
    values = {'robot': 'go2', 'variant': 'slippery', 'robots': '1', 'time_scale': '1.0',
              'seed': '3', 'goals': '0', 'state_publisher': 'true'}
    nodes = [a.kwargs for a in _robot_sim_launch(values, monkeypatch)
             if type(a).__name__ == 'Node']
    # The legged double alone: its URDF carries the driver's gains (check-robot reads
    # them), so no robot_state_publisher publishes a second one.
    assert [(n['package'], n['name']) for n in nodes] == [('unilab_bridge', 'legged_double')]
    params = yaml.safe_load(pathlib.Path(nodes[0]['parameters'][0]).read_text())
    d = params['legged_double']['ros__parameters']
    assert d['variant'] == 'slippery' and d['seed'] == 3 and d['publish_description'] is True


@pytest.mark.parametrize('name', ['arm6', 'quad8', 'quad12', 'ur5e'])
def test_every_shipped_profile_drives_its_task(name):
    # The profile's joints are its task's (in the policy's order) and its limits file
    # covers them: the double builds, and the gate's limits exist for every joint.
    from unilab_bringup.paths import profile_path
    from unilab_bridge.robot_double import RobotDouble
    from unilab_core.robot_profile import load_profile
    from unilab_safety.limits import load_joint_limits
    p = load_profile(profile_path(name))
    d = RobotDouble(p, robots=1)
    try:
        assert len(p.joint_names) == len(d.task.joint_names)
        load_joint_limits(p.joint_limits_file or p.urdf_file, p.joint_names)  # all covered
    finally:
        d.close()


def _profile_copy(tmp_path, name, **changes):
    """Copy the ur5e profile and its limits file elsewhere (the limits resolve beside it)."""
    from unilab_bringup.paths import profile_path
    src = profile_path('ur5e')
    data = yaml.safe_load(src.read_text())
    data['robot'].update(changes)
    limits = data['robot']['joint_limits_file']
    (tmp_path / limits).write_text((src.parent / limits).read_text())
    path = tmp_path / f'{name}.yaml'
    path.write_text(yaml.safe_dump(data))
    return path


def test_check_robot_compares_the_model_with_a_makers_double(
        tmp_path, fresh_context):  # noqa: F811 - the fixture
    """Against a double built from UR's DH table: ur5e.xml agrees, arm6.xml does not."""
    from ur5e_double import DhDouble
    # The double publishes at 100 Hz (the driver's 500 Hz is not the point here).
    ur5e = _profile_copy(tmp_path, 'ur5e_copy', joint_state_rate_hz=100.0)
    arm6 = _profile_copy(tmp_path, 'ur5e_arm6_model', joint_state_rate_hz=100.0,
                         model_file='package://unilab_bridge/assets/arm6.xml')
    double = DhDouble(fresh_context)
    try:
        ok = cli('check-robot', '--robot', ur5e, '--timeout', '6')
        wrong = cli('check-robot', '--robot', arm6, '--timeout', '6')
    finally:
        double.close()
    kinematics = [line for line in ok.stdout.splitlines() if 'robot_description' in line]
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert any(line.startswith('ok') and 'kinematics [model and URDF agree' in line
               for line in kinematics), ok.stdout
    assert wrong.returncode == 1, wrong.stdout
    assert 'model and URDF DISAGREE' in wrong.stdout
    assert wrong.stdout.splitlines()[-1] == 'robot NOT ok: kinematics'
