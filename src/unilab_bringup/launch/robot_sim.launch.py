# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Launch the robot double (and optionally a scenario), one process per node.

    ros2 launch unilab_bringup robot_sim.launch.py [robot:=arm6] [variant:=nominal|real]
        [robots:=K] [time_scale:=S] [seed:=N] [goals:=N] [results:=FILE.json]
        [state_publisher:=true]

The same graph as ``unilab robot-sim`` (``unilab_bringup.graphs.robot_sim_graph``). With
``state_publisher:=true`` (the default) each robot also gets a
``robot_state_publisher`` (in its namespace, frames prefixed ``robot<k>/`` in a
fleet) publishing the URDF on ``robot_description`` and the TF tree, for RViz or
Foxglove; the double then leaves ``robot_description`` to it. With ``goals`` the
launch ends when the scenario has scored every goal.
"""

import tempfile

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, EmitEvent, OpaqueFunction, RegisterEventHandler
from launch.event_handlers import OnProcessExit
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
    'state_publisher': ('true', 'start robot_state_publisher for each robot'),
}


def _start(context):
    from unilab_bringup.graphs import robot_sim_graph
    from unilab_bringup.launch_support import robot_sim_launch_kwargs
    from unilab_bringup.robot_sim import robot_sim_params
    from unilab_bridge.robot_double import profile_urdf
    from unilab_core.robot_profile import load_profile

    def arg(name):
        return LaunchConfiguration(name).perform(context)

    double, scenario = robot_sim_params(
        arg('robot'), arg('variant'), int(arg('robots')), float(arg('time_scale')),
        int(arg('seed')), int(arg('goals')), results=arg('results'))
    rsp = arg('state_publisher').lower() in ('true', '1', 'yes')
    profile = load_profile(double.profile)
    double = double.model_copy(update={'publish_description': not rsp})
    graph = robot_sim_graph(double, scenario)
    params_file = graph.write_params(tempfile.mkdtemp(prefix='unilab-robot-sim-')
                                     + '/robot_sim_params.yaml')
    kwargs = robot_sim_launch_kwargs(graph, params_file, profile_urdf(profile) if rsp else '',
                                     profile.joint_states_topic)
    nodes = [Node(**kw) for kw in kwargs]
    actions = list(nodes)
    if graph.end_node:
        end = next(n for n, kw in zip(nodes, kwargs) if kw['name'] == graph.end_node)
        actions.append(RegisterEventHandler(OnProcessExit(
            target_action=end, on_exit=[EmitEvent(event=Shutdown())])))
    return actions


def generate_launch_description():
    """Return the launch description."""
    return LaunchDescription(
        [DeclareLaunchArgument(k, default_value=d, description=v) for k, (d, v) in ARGS.items()]
        + [OpaqueFunction(function=_start)])
