# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Deploy a trained policy on a ROS 2 robot and adapt it online, one process per node.

    ros2 launch unilab adapt.launch.py model:=RUN_DIR robot:=PROFILE
        [armed:=false] [namespace:=/robot1] [config:=EXTRA.yaml] [run_dir:=DIR]

The nodes, parameters, namespace and remappings come from
unilab.deploy.prepare_deploy(adapt=True), the description ``unilab adapt`` starts. Nothing
moves until ``ros2 service call <namespace>/safety/arm std_srvs/srv/Trigger``
unless armed:=true.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

ARGS = {
    'model': 'run directory or checkpoint (required)',
    'robot': 'robot profile: shipped name or YAML file (required)',
    'armed': 'true: commands reach the robot at once; default false',
    'namespace': 'ROS namespace of this robot; empty = none',
    'config': 'extra YAML merged over the defaults; empty = none',
    'run_dir': 'output directory; empty = runs/<robot>-adapt-<time>',
}


def _start(context):
    from unilab.deploy import prepare_deploy
    from unilab.launch_support import launch_node_kwargs

    def arg(name):
        return LaunchConfiguration(name).perform(context)

    run = prepare_deploy(arg('model'), arg('robot'), armed=arg('armed').lower() == 'true',
                         namespace=arg('namespace'),
                         config_files=[arg('config')] if arg('config') else [],
                         run_dir=arg('run_dir') or None, adapt=True)
    return [Node(**kw) for kw in launch_node_kwargs(run.graph, run.params_file,
                                                    run.cfg.transport.backend)]


def generate_launch_description():
    """Return the launch description."""
    return LaunchDescription(
        [DeclareLaunchArgument(k, default_value='', description=v) for k, v in ARGS.items()]
        + [OpaqueFunction(function=_start)])
