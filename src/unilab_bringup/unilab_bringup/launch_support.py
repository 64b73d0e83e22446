# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""What the launch files start, as plain data (testable without launch_ros)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile

from unilab_bringup.summary import merge_summary
from unilab_core.graph import Graph
from unilab_core.robot_profile import fleet_namespace, namespaced
from unilab_core.ros.runtime import PARENT_PID_ENV
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


class LaunchPlanError(RuntimeError):
    """A launch file's graph could not be prepared; the message says why (no traceback)."""


def launch_plan(kind: str, args: dict, prepare: str = '') -> dict:
    """
    Prepare a launch file's graph in a child process and return its plan.

    ``kind`` is ``train``, ``deploy`` or ``robot_sim`` (``unilab_bringup.launch_plan``);
    ``prepare`` (``module:function``) lets a feature extend the deploy graph. The
    launch process never imports torch or MuJoCo. Every node started from the plan
    stops with this process (``UNILAB_PARENT_PID``: the kernel sends it SIGTERM when
    launch dies, even by SIGKILL). Raises LaunchPlanError with the child's message.
    """
    with tempfile.TemporaryDirectory(prefix='unilab-launch-') as tmp:
        out = pathlib.Path(tmp) / 'plan.json'
        proc = subprocess.run([sys.executable, '-m', 'unilab_bringup.launch_plan', kind,
                               json.dumps(args), str(out), *([prepare] if prepare else [])],
                              capture_output=True, text=True)
        if proc.returncode != 0 or not out.is_file():
            lines = [x for x in proc.stderr.splitlines() if x.strip()]
            reason = lines[-1] if lines else f'exit status {proc.returncode}'
            raise LaunchPlanError(f'{kind}.launch.py: {reason.removeprefix("error: ")}')
        plan = json.loads(out.read_text())
    for kw in plan['nodes']:
        kw['remappings'] = [tuple(r) for r in kw.get('remappings', [])]
        if 'additional_env' in kw:  # our nodes (not robot_state_publisher)
            kw['additional_env'] = {**kw['additional_env'], PARENT_PID_ENV: str(os.getpid())}
    return plan


class ExitPolicy:
    """
    What a launch does when one of its nodes exits (the CLI's runner rules, for launch).

    The end node finishing cleanly stops the graph; any other node ending while the
    graph runs (killed, crashed) is a failure, and so is the end node ending with an
    error: the launch then stops everything and exits non-zero instead of hanging or
    reporting success. Exits after the stop began are the stop itself. Optional nodes
    may end without stopping the rest. When the last node is gone the run's summary
    gets the safety counters and ``process_mode: launch``.
    """

    def __init__(self, names, end_node: str = '', optional=(), run_dir: str = ''):
        self.running = set(names)
        self.end_node, self.optional, self.run_dir = end_node, set(optional), run_dir
        self.stopping = False

    def exited(self, name: str, code: int | None) -> tuple[str, str]:
        """Return ``(action, reason)``: action is ``stop``, ``fail`` or ``ignore``."""
        self.running.discard(name)
        if not self.running and self.run_dir:
            merge_summary(self.run_dir, {'process_mode': 'launch'})
        if name == self.end_node and code != 0:
            self.stopping = True
            return 'fail', f'{name} exited with {code}'
        if self.stopping:
            return 'ignore', ''
        if name == self.end_node:
            self.stopping = True
            return 'stop', f'{name} finished'
        if name in self.optional:
            return 'ignore', f'{name} (optional) exited with {code}; the rest runs on'
        self.stopping = True
        what = f' before {self.end_node} finished' if self.end_node else ''
        return 'fail', f'{name} exited with {code}{what}: stopping the graph'

    def shutting_down(self) -> None:
        """Note a stop that did not come from a node (Ctrl-C, SIGTERM to launch)."""
        self.stopping = True


class NodeExited(RuntimeError):
    """Raised inside launch's event loop: launch stops every node and exits 1."""


def watch_exits(plan: dict, nodes: list, on_exit_handler, shutdown_event, emit_event,
                on_shutdown_handler=None) -> list:
    """
    Return the launch actions that apply ``ExitPolicy`` to ``nodes`` (one per node).

    Takes launch's classes (``OnProcessExit``, ``Shutdown``, ``EmitEvent``, ``OnShutdown``)
    so this module imports no launch code.
    """
    names = [kw['name'] for kw in plan['nodes']]
    policy = ExitPolicy([n for n in names if n != 'robot_state_publisher'],
                        plan.get('end_node', ''), plan.get('optional', ()),
                        plan.get('run_dir', ''))

    def handler(name):
        def on_exit(event, context):
            action, reason = policy.exited(name, event.returncode)
            if action == 'fail':
                raise NodeExited(reason)
            if action == 'stop':
                return [emit_event(event=shutdown_event(reason=reason))]
            return None
        return on_exit
    actions = [on_exit_handler(target_action=node, on_exit=handler(name))
               for name, node in zip(names, nodes) if name != 'robot_state_publisher']
    if on_shutdown_handler is not None:
        actions.append(on_shutdown_handler(on_shutdown=lambda event, context:
                                           policy.shutting_down()))
    return actions
