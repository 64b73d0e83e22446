# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Launch a trained policy on a ROS 2 robot, one process per node.

    ros2 launch unilab_bringup deploy.launch.py model:=RUN_DIR_OR_EXPORT robot:=PROFILE
        [armed:=false] [namespace:=/robot1] [config:=EXTRA.yaml] [run_dir:=DIR]

The nodes, parameters, namespace and remappings come from
unilab_bringup.deploy.prepare_deploy, the description ``unilab deploy`` starts. Nothing
moves until ``ros2 service call <namespace>/safety/arm std_srvs/srv/Trigger``
unless armed:=true.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit, OnShutdown
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node


def _start(context):
    from unilab_bringup.launch_support import DEPLOY_LAUNCH_ARGS, launch_plan, watch_exits
    plan = launch_plan('deploy', {k: LaunchConfiguration(k).perform(context)
                                  for k in DEPLOY_LAUNCH_ARGS})
    nodes = [Node(**kw) for kw in plan['nodes']]
    watch = watch_exits(plan, nodes, OnProcessExit, Shutdown, EmitEvent, OnShutdown)
    return nodes + [RegisterEventHandler(h) for h in watch]


def generate_launch_description():
    """Return the launch description."""
    from unilab_bringup.launch_support import DEPLOY_LAUNCH_ARGS
    return LaunchDescription(
        [DeclareLaunchArgument(k, default_value='', description=v)
         for k, v in DEPLOY_LAUNCH_ARGS.items()]
        + [OpaqueFunction(function=_start)])
