# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""What the launch files start, as plain data (testable without launch_ros)."""

from __future__ import annotations

from unilab_core.graph import Graph
from unilab_core.robot_profile import fleet_namespace, namespaced
from unilab_core.transport import backend as transport_backend


def launch_node_kwargs(graph: Graph, params_file, backend: str = 'ring') -> list[dict]:
    """
    Return the ``launch_ros.actions.Node`` keyword arguments for every node of ``graph``.

    They come from the same graph description (:mod:`unilab_bringup.graphs`) and the
    same parameter file the CLI uses (namespace and remappings included), so
    the starters agree; the transport ``backend`` (the configuration's
    ``transport.backend``) reaches each process as ``UNILAB_TRANSPORT_BACKEND``,
    the variable ``unilab train`` sets too.
    """
    env = {transport_backend.ENV: transport_backend.check(backend)}
    return [
        {'package': s.package, 'executable': s.executable, 'name': s.name,
         'namespace': graph.namespace or '',
         'remappings': list(graph.remappings.get(s.name, {}).items()),
         'parameters': [str(params_file)], 'output': 'screen', 'additional_env': env}
        for s in graph.nodes
    ]


def launch_overrides(task: str, steps: str, num_envs: str, seed: str) -> dict:
    """Turn launch arguments (strings, '' = unset) into config overrides."""
    out = {}
    if task:
        out['run.task'] = task
    if steps:
        out['run.total_steps'] = int(steps)
    if num_envs:
        out['rollout.num_envs'] = int(num_envs)
    if seed:
        out['run.seed'] = int(seed)
    return out


def robot_sim_launch_kwargs(graph, params_file, urdf: str = '',
                            joint_states_topic: str = '/joint_states') -> list[dict]:
    """
    Return the ``launch_ros.actions.Node`` keyword arguments of ``robot_sim.launch.py``.

    The nodes of the robot-sim graph (:func:`unilab_bringup.graphs.robot_sim_graph`) with its
    parameter file, and with ``urdf`` one ``robot_state_publisher`` per robot in the
    robot's namespace (``frame_prefix`` ``robot<k>/`` in a fleet) fed by its joint
    states, for RViz or Foxglove.
    """
    out = launch_node_kwargs(graph, params_file)
    if urdf:
        robots = graph.parameters['robot_double'].robots
        for k in range(robots):
            ns = fleet_namespace(k, robots)
            out.append({
                'package': 'robot_state_publisher', 'executable': 'robot_state_publisher',
                'name': 'robot_state_publisher', 'namespace': ns or '/', 'output': 'screen',
                'parameters': [{'robot_description': urdf,
                                'frame_prefix': ns.strip('/') + '/' if ns else ''}],
                'remappings': [('joint_states', namespaced(ns, joint_states_topic))]})
    return out


#: Launch arguments of ``deploy.launch.py`` and ``adapt.launch.py`` (name -> help).
DEPLOY_LAUNCH_ARGS = {
    'model': 'run directory, checkpoint or exported model (required; adapt: not an export)',
    'robot': 'robot profile: shipped name or YAML file (required)',
    'armed': 'true: commands reach the robot at once; default false',
    'namespace': 'ROS namespace of this robot; empty = none',
    'config': 'extra YAML merged over the defaults; empty = none',
    'run_dir': 'output directory; empty = runs/<robot>-deploy-<time> (or -adapt-)',
}


def deploy_launch_nodes(arg, prepare=None) -> list[dict]:
    """
    Return the Node keyword arguments of the deploy (or adapt) graph for launch arguments.

    ``arg(name)`` returns a launch argument's value ('' = unset); the graph is
    the one ``unilab deploy`` prepares (``prepare``: ``prepare_deploy`` by default;
    ``unilab_adapt.graph.prepare_adapt`` for ``unilab adapt``'s).
    """
    from unilab_bringup.deploy import prepare_deploy
    run = (prepare or prepare_deploy)(
        arg('model'), arg('robot'), armed=arg('armed').lower() == 'true',
        namespace=arg('namespace'), config_files=[arg('config')] if arg('config') else [],
        run_dir=arg('run_dir') or None)
    return launch_node_kwargs(run.graph, run.params_file, run.cfg.transport.backend)
