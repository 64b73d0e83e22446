# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Launch the robot double (and optionally a scenario), one process per node.

    ros2 launch unilab_bringup robot_sim.launch.py [robot:=arm6] [variant:=nominal|real]
        [robots:=K] [time_scale:=S] [seed:=N] [goals:=N] [results:=FILE.json]
        [state_publisher:=auto|true|false]

The same graph as ``unilab robot-sim`` (``unilab_bringup.graphs.robot_sim_graph``). With
``state_publisher:=true`` each robot also gets a ``robot_state_publisher`` (in its
namespace, frames prefixed ``robot<k>/`` in a fleet) publishing the URDF on
``robot_description`` and the TF tree, for RViz or Foxglove; the double then leaves
``robot_description`` to it. The default ``auto`` does so where robot_state_publisher
is installed (an apt ROS 2), else the double publishes ``robot_description`` itself.
With ``goals`` the launch ends when the scenario has scored every goal; a node that
ends before that stops the launch with exit 1, and every node stops with launch.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit, OnShutdown
from launch.events import Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

ARGS = {
    'robot': ('arm6', 'robot profile: shipped name (arm6, quad8, quad12, ur5e) or YAML file'),
    'variant': ('nominal', 'nominal or real (held-out dynamics and imperfections)'),
    'robots': ('1', 'robots; more than one: robot k under /robot<k>'),
    'time_scale': ('1.0', 'simulated seconds per wall-clock second'),
    'seed': ('0', 'seed of start poses, variant and goals'),
    'goals': ('0', 'scenario goals per robot (0 = no scenario)'),
    'results': ('', 'scenario results JSON'),
    'state_publisher': ('auto', 'start robot_state_publisher for each robot: true, false, or '
                        'auto (where it is installed; else the double publishes '
                        'robot_description itself)'),
}


def _start(context):
    from unilab_bringup.launch_support import launch_plan, watch_exits
    plan = launch_plan('robot_sim', {k: LaunchConfiguration(k).perform(context)
                                     for k in ARGS})
    nodes = [Node(**kw) for kw in plan['nodes']]
    watch = watch_exits(plan, nodes, OnProcessExit, Shutdown, EmitEvent, OnShutdown)
    return nodes + [RegisterEventHandler(h) for h in watch]


def generate_launch_description():
    """Return the launch description."""
    return LaunchDescription(
        [DeclareLaunchArgument(k, default_value=d, description=v) for k, (d, v) in ARGS.items()]
        + [OpaqueFunction(function=_start)])
