# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
What a launch file starts, prepared in a child process: ``python -m unilab_bringup.launch_plan``.

Preparing a graph builds the task (MuJoCo) and reads checkpoints (torch); done in the
launch process itself, those stay loaded there for the whole run (about 300 MB beside
the nodes). The launch files call :func:`unilab_bringup.launch_support.launch_plan`,
which runs this module and reads back, as JSON, the run directory, the end node, the
optional nodes and the ``launch_ros`` Node keyword arguments: the same graph and
parameter file the CLI starts. A configuration error exits 2 with its message.
"""

from __future__ import annotations

import importlib
import json
import sys
import tempfile

from ament_index_python.packages import get_package_prefix, PackageNotFoundError
from unilab_bridge.robot_double import profile_urdf
from unilab_bringup.deploy import prepare_deploy
from unilab_bringup.graphs import robot_sim_graph
from unilab_bringup.launch_support import (launch_node_kwargs, launch_overrides,
                                           robot_sim_launch_kwargs)
from unilab_bringup.prepare import prepare_run
from unilab_bringup.robot_sim import robot_sim_params
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError
from unilab_core.robot_profile import load_profile


def _graph_plan(graph, nodes, run_dir='') -> dict:
    return {'run_dir': str(run_dir), 'end_node': graph.end_node,
            'optional': list(graph.optional), 'nodes': nodes}


def train_plan(args: dict) -> dict:
    """Plan of ``train.launch.py`` (arguments as ``unilab_bringup.launch_support``)."""
    try:
        overrides = launch_overrides(args.get('task', ''), args.get('steps', ''),
                                     args.get('num_envs', ''), args.get('seed', ''))
    except ValueError as exc:
        raise ConfigError(f'steps, num_envs and seed take integers: {exc}') from None
    run = prepare_run([args['config']] if args.get('config') else [], overrides,
                      run_dir=args.get('run_dir') or None)
    nodes = launch_node_kwargs(run.graph, run.params_file, run.cfg.transport.backend)
    return _graph_plan(run.graph, nodes, run.run_dir)


DEPLOY_REQUIRED = {'model': 'a run directory, checkpoint or exported model',
                   'robot': 'a shipped robot profile name or a profile YAML file'}


def deploy_plan(args: dict, prepare: str = '') -> dict:
    """Plan of ``deploy.launch.py`` (or, with ``prepare`` = ``module:function``, adapt's)."""
    for name in ('model', 'robot'):
        if not args.get(name):
            raise ConfigError(f'`{name}:=` is required ({DEPLOY_REQUIRED[name]})')
    make = prepare_deploy
    if prepare:  # a feature's prepare function (unilab_adapt.graph:prepare_adapt)
        module, _, function = prepare.partition(':')
        make = getattr(importlib.import_module(module), function)
    run = make(args['model'], args['robot'], armed=args.get('armed', '').lower() == 'true',
               namespace=args.get('namespace', ''),
               config_files=[args['config']] if args.get('config') else [],
               run_dir=args.get('run_dir') or None)
    nodes = launch_node_kwargs(run.graph, run.params_file, run.cfg.transport.backend)
    return _graph_plan(run.graph, nodes, run.run_dir)


def robot_sim_plan(args: dict) -> dict:
    """Plan of ``robot_sim.launch.py``: the robot double (+ scenario, robot_state_publisher)."""
    try:
        robots, time_scale = int(args['robots']), float(args['time_scale'])
        seed, goals = int(args['seed']), int(args['goals'])
    except ValueError as exc:
        raise ConfigError(f'robots, seed and goals take integers, time_scale a number: '
                          f'{exc}') from None
    double, scenario = robot_sim_params(args['robot'], args['variant'], robots, time_scale,
                                        seed, goals, results=args.get('results', ''))
    want = args.get('state_publisher', 'auto').lower()
    profile = load_profile(double.profile)
    # A legged double publishes its own URDF: its <ros2_control> block declares the
    # driver's gains, which check-robot reads; a robot_state_publisher would publish a
    # second description without them.
    rsp = profile.legged is None and (
        want in ('true', '1', 'yes') or (want == 'auto' and _installed('robot_state_publisher')))
    double = double.model_copy(update={'publish_description': not rsp})
    graph = robot_sim_graph(double, scenario)
    params_file = graph.write_params(tempfile.mkdtemp(prefix='unilab-robot-sim-')
                                     + '/robot_sim_params.yaml')
    nodes = robot_sim_launch_kwargs(graph, params_file, profile_urdf(profile) if rsp else '',
                                    profile.joint_states_topic)
    return _graph_plan(graph, nodes)


def _installed(package: str) -> bool:
    """Return whether a ROS package is in the ament index (an apt ROS 2 install)."""
    try:
        get_package_prefix(package)
    except PackageNotFoundError:
        return False
    return True


PLANS = {'train': train_plan, 'deploy': deploy_plan, 'robot_sim': robot_sim_plan}


def main(argv=None) -> int:
    """``launch_plan KIND ARGS_JSON OUT_JSON [module:prepare]``: write the plan to OUT_JSON."""
    argv = sys.argv[1:] if argv is None else argv
    kind, args, out = argv[0], json.loads(argv[1]), argv[2]
    extra = argv[3:4]
    try:
        plan = PLANS[kind](args, *extra)
    except ConfigError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    atomic_write_text(out, json.dumps(plan))
    return 0


if __name__ == '__main__':
    sys.exit(main())
