# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Launch the UniLab training graph, one process per node.

    ros2 launch unilab_bringup train.launch.py [task:=arm6_reach] [steps:=N] [num_envs:=N]
        [seed:=N] [run_dir:=DIR] [config:=EXTRA.yaml]

The nodes and their parameters come from unilab_bringup.prepare.prepare_run, the same
graph description ``unilab train`` uses. The launch ends when the trainer
finishes its step budget.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

ARGS = {
    'task': 'task name (unilab tasks); empty = config default',
    'steps': 'environment steps; empty = config default',
    'num_envs': 'parallel environments; empty = config default',
    'seed': 'seed; empty = config default',
    'run_dir': 'output directory; empty = runs/<task>-<time>',
    'config': 'extra YAML merged over the defaults; empty = none',
}


def _start(context):
    from unilab_bringup.launch_support import launch_node_kwargs, launch_overrides
    from unilab_bringup.prepare import prepare_run

    def arg(name):
        return LaunchConfiguration(name).perform(context)

    run = prepare_run([arg('config')] if arg('config') else [],
                      launch_overrides(arg('task'), arg('steps'), arg('num_envs'), arg('seed')),
                      run_dir=arg('run_dir') or None)
    kwargs = launch_node_kwargs(run.graph, run.params_file, run.cfg.transport.backend)
    nodes = [Node(**kw) for kw in kwargs]
    trainer = next(n for n, kw in zip(nodes, kwargs) if kw['name'] == run.graph.end_node)
    done = RegisterEventHandler(OnProcessExit(target_action=trainer,
                                              on_exit=[EmitEvent(event=Shutdown())]))
    return nodes + [done]


def generate_launch_description():
    """Return the launch description."""
    return LaunchDescription(
        [DeclareLaunchArgument(k, default_value='', description=v) for k, v in ARGS.items()]
        + [OpaqueFunction(function=_start)])
