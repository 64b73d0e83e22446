# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Launch the UniLab training graph, one process per node.

    ros2 launch unilab_bringup train.launch.py [task:=arm6_reach] [steps:=N] [num_envs:=N]
        [seed:=N] [run_dir:=DIR] [config:=EXTRA.yaml]

The nodes and their parameters come from unilab_bringup.prepare.prepare_run, the same
graph description ``unilab train`` uses (prepared in a child process: this one stays
free of torch and MuJoCo). The launch ends when the trainer finishes its step budget
(exit 0, summary.json with the safety counters); a trainer that fails, or any other
node that ends first, stops the graph with exit 1. Every node stops with launch.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit, OnShutdown
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
    from unilab_bringup.launch_support import launch_plan, watch_exits
    plan = launch_plan('train', {k: LaunchConfiguration(k).perform(context) for k in ARGS})
    nodes = [Node(**kw) for kw in plan['nodes']]
    watch = watch_exits(plan, nodes, OnProcessExit, Shutdown, EmitEvent, OnShutdown)
    return nodes + [RegisterEventHandler(h) for h in watch]


def generate_launch_description():
    """Return the launch description."""
    return LaunchDescription(
        [DeclareLaunchArgument(k, default_value='', description=v) for k, v in ARGS.items()]
        + [OpaqueFunction(function=_start)])
