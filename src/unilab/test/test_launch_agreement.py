# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The launch file, the composed starter and the per-process starter start the same graph.

launch_ros cannot be installed on pip-only machines, so the launch file is
also executed against small recording stand-ins for the launch API; where
the real launch_ros is importable, it is loaded for real as well.
"""

import importlib.util
import json
import os
import pathlib
import sys
import types

import pytest
from unilab_bringup.launch_support import launch_node_kwargs
from unilab_bringup.prepare import prepare_run
from unilab_bringup.runner import node_command

SRC = pathlib.Path(__file__).resolve().parents[2]
LAUNCH_FILE = SRC / 'unilab_bringup' / 'launch' / 'train.launch.py'


class _Recorder:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


def _fake_launch_modules(values):
    class LaunchConfiguration:
        def __init__(self, name):
            self.name = name

        def perform(self, context):
            return values.get(self.name, '')

    mods = {name: types.ModuleType(name) for name in (
        'launch', 'launch.actions', 'launch.event_handlers', 'launch.events',
        'launch.substitutions', 'launch_ros', 'launch_ros.actions')}
    mods['launch'].LaunchDescription = _Recorder
    for cls in ('DeclareLaunchArgument', 'EmitEvent', 'OpaqueFunction', 'RegisterEventHandler'):
        setattr(mods['launch.actions'], cls, type(cls, (_Recorder,), {}))
    mods['launch.event_handlers'].OnProcessExit = type('OnProcessExit', (_Recorder,), {})
    mods['launch.event_handlers'].OnShutdown = type('OnShutdown', (_Recorder,), {})
    mods['launch.events'].Shutdown = type('Shutdown', (_Recorder,), {})
    mods['launch.substitutions'].LaunchConfiguration = LaunchConfiguration
    mods['launch_ros.actions'].Node = type('Node', (_Recorder,), {})
    return mods


def _load_launch_file():
    spec = importlib.util.spec_from_file_location('train_launch', LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_launch_file_starts_the_described_graph(tmp_path, monkeypatch):
    values = {'task': 'arm6_reach', 'steps': '4096', 'num_envs': '4',
              'run_dir': str(tmp_path / 'launch_run')}
    for name, mod in _fake_launch_modules(values).items():
        monkeypatch.setitem(sys.modules, name, mod)
    ld = _load_launch_file().generate_launch_description()
    actions = ld.args[0]
    declared = [a.args[0] for a in actions if type(a).__name__ == 'DeclareLaunchArgument']
    assert {'task', 'steps', 'num_envs', 'seed', 'run_dir', 'config'} <= set(declared)
    opaque = next(a for a in actions if type(a).__name__ == 'OpaqueFunction')
    started = opaque.kwargs['function'](context=None)
    nodes = [a.kwargs for a in started if type(a).__name__ == 'Node']
    handlers = [a.args[0] for a in started if type(a).__name__ == 'RegisterEventHandler']
    # Every node is watched (the trainer ending stops the launch, any other node ending
    # fails it), and a stop from outside is noted.
    watched = [h.kwargs['target_action'] for h in handlers if type(h).__name__ == 'OnProcessExit']
    assert [n.kwargs['name'] for n in watched] == [n['name'] for n in nodes]
    assert [type(h).__name__ for h in handlers].count('OnShutdown') == 1
    # Nodes stop with launch: the kernel's parent-death signal names this process.
    assert all(n['additional_env']['UNILAB_PARENT_PID'] == str(os.getpid()) for n in nodes)

    # The CLI, given the same settings, resolves the same graph and parameters.
    cli_run = prepare_run([], {'run.task': 'arm6_reach', 'run.total_steps': 4096,
                               'rollout.num_envs': 4}, run_dir=str(tmp_path / 'cli_run'))
    assert [(n['package'], n['executable'], n['name']) for n in nodes] == [
        (s.package, s.executable, s.name) for s in cli_run.graph.nodes]
    assert [(n['package'], n['executable'], n['name'])
            for n in launch_node_kwargs(cli_run.graph, cli_run.params_file)] == [
        (n['package'], n['executable'], n['name']) for n in nodes]
    launch_params = pathlib.Path(nodes[0]['parameters'][0]).read_text()
    cli_params = cli_run.params_file.read_text()
    assert launch_params.replace('launch_run', 'X') == cli_params.replace('cli_run', 'X')

    # The per-process starter runs the same executables with the same parameter file.
    for spec, kw in zip(cli_run.graph.nodes,
                        launch_node_kwargs(cli_run.graph, cli_run.params_file)):
        cmd = node_command(spec, cli_run.params_file, cli_run.graph)
        assert cmd[0].endswith(f"/lib/{kw['package']}/{kw['executable']}")
        assert cmd[-2:] == ['--params-file', str(cli_run.params_file)]
        assert f"__node:={kw['name']}" in cmd


def test_real_launch_ros_runs_the_graph(tmp_path):
    """With launch_ros installed (apt ROS 2), launch the file for real on a tiny budget."""
    pytest.importorskip('launch_ros', reason='launch_ros is not installed (pip-only ROS 2)')
    from launch import LaunchService
    from launch.actions import IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    run_dir = tmp_path / 'run'
    service = LaunchService()
    service.include_launch_description(IncludeLaunchDescription(
        PythonLaunchDescriptionSource(str(LAUNCH_FILE)),
        launch_arguments={'steps': '256', 'num_envs': '8', 'run_dir': str(run_dir)}.items()))
    assert service.run() == 0
    summary = json.loads((run_dir / 'summary.json').read_text())
    assert summary['steps'] >= 256 and pathlib.Path(summary['checkpoint']).is_file()


def test_adapt_launch_file_starts_the_adapt_graph_unilab_adapt_starts(tmp_path, monkeypatch):
    from test_deploy import _run_dir
    from unilab_adapt.graph import prepare_adapt
    from unilab_bringup.prepare import task_info
    from unilab_core.config import ModelSection
    from unilab_policy.params import PolicyNodeParams
    info, _ = task_info('arm6_reach')
    model, _ = _run_dir(tmp_path, PolicyNodeParams(obs_dim=info.obs_dim,
                                                   act_dim=info.action_dim,
                                                   model=ModelSection(hidden_sizes=[16])))
    (model / 'config.yaml').write_text('run: {task: arm6_reach}\n')
    values = {'model': str(model), 'robot': 'arm6', 'armed': 'true',
              'run_dir': str(tmp_path / 'launch_run')}
    for name, mod in _fake_launch_modules(values).items():
        monkeypatch.setitem(sys.modules, name, mod)
    path = SRC / 'unilab_adapt' / 'launch' / 'adapt.launch.py'
    spec = importlib.util.spec_from_file_location('adapt_launch', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    actions = module.generate_launch_description().args[0]
    opaque = next(a for a in actions if type(a).__name__ == 'OpaqueFunction')
    nodes = [a.kwargs for a in opaque.kwargs['function'](context=None)
             if type(a).__name__ == 'Node']
    cli_run = prepare_adapt(str(model), 'arm6', armed=True, run_dir=str(tmp_path / 'cli_run'))
    assert [n['name'] for n in nodes] == [s.name for s in cli_run.graph.nodes] == [
        'perception', 'policy', 'safety', 'recorder', 'adapter']
    launch_params = pathlib.Path(nodes[0]['parameters'][0]).read_text()
    assert launch_params.replace('launch_run', 'X') == \
        cli_run.params_file.read_text().replace('cli_run', 'X')
    assert cli_run.graph.parameters['policy'].mode == 'adapt'
    assert cli_run.graph.parameters['policy'].runtime == 'torch'  # samples, swaps
    assert cli_run.graph.parameters['perception'].rehearse_lead_ms == 0.0  # deploy only
    assert cli_run.graph.optional == ('recorder', 'adapter')
    # The learners yield to the control loop (adapt.sched_idle): the adapter and the recorder.
    assert cli_run.graph.parameters['recorder'].sched_idle
    assert cli_run.graph.parameters['adapter'].adapt.sched_idle
    # `unilab adapt` runs the control loop composed (as `unilab deploy` does) and the learners
    # in their own processes; --multiprocess (and the launch file) one process per node.
    from unilab_bringup.node_group import group_command
    from unilab_bringup.runner import process_layout
    graph = cli_run.graph
    assert [(name, [s.name for s in specs]) for name, specs in process_layout(graph)] == [
        ('perception+policy+safety', ['perception', 'policy', 'safety']),
        ('recorder', ['recorder']), ('adapter', ['adapter'])]
    assert [name for name, _ in process_layout(graph, one_per_node=True)] == [
        'perception', 'policy', 'safety', 'recorder', 'adapter']
    command = group_command(graph, ('perception', 'policy', 'safety'), cli_run.params_file,
                            tmp_path / 'group.json')
    assert command[1:3] == ['-m', 'unilab_bringup.node_group']
    group = json.loads((tmp_path / 'group.json').read_text())
    assert group['params_file'] == str(cli_run.params_file)
    assert [(n['name'], n['module'], n['ros_args']) for n in group['nodes']] == [
        (s.name, s.module, graph.ros_args(s.name)) for s in graph.nodes[:3]]


def test_a_deploy_graph_runs_one_process_per_node():
    from unilab_bringup.runner import process_layout
    from unilab_core.graph import Graph, NodeSpec
    nodes = tuple(NodeSpec(n, 'p', n, 'm', 'C') for n in ('a', 'b'))
    assert [name for name, _ in process_layout(Graph('g', nodes, {}))] == ['a', 'b']


def test_a_node_group_with_a_bad_parameter_exits_2_naming_it(tmp_path):
    import subprocess
    from unilab_bringup.node_group import group_command
    from unilab_core.graph import Graph, NodeSpec
    spec = NodeSpec('recorder', 'unilab_bag', 'recorder_node', 'unilab_bag.recorder_node',
                    'RecorderNode')
    params = tmp_path / 'params.yaml'
    params.write_text('recorder:\n  ros__parameters:\n    out: %s\n    topics: [/a]\n'
                      '    flush_period_s: -1.0\n' % (tmp_path / 'bag'))
    command = group_command(Graph('g', (spec,), {}), ('recorder',), params,
                            tmp_path / 'group.json')
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert 'flush_period_s' in proc.stderr and 'Traceback' not in proc.stderr
