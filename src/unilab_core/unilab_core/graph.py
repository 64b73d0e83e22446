# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A graph as data: which nodes, from which packages, with which typed parameters.

The graph descriptions themselves (training, deployment, adaptation) are
composed in ``unilab_bringup.graphs`` from the run configuration; this module holds
the data types every starter reads. The CLI (composed or one process per
node) and the launch files start a ``Graph``; none of them lists nodes of
its own, so they cannot drift apart. Parameters are written once to a
``node: ros__parameters:`` YAML file that every starter passes to every node.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any, NamedTuple

from unilab_core.atomic import atomic_write_text
from unilab_core.config import Section
import yaml


#: Parameters every rclpy node declares itself; a graph's parameter file may set them,
#: they are no part of a node's typed model.
ROS_OWN_PARAMETERS = ('use_sim_time',)


def model_parameters(ros_parameters: dict) -> dict:
    """Return a node's ``ros__parameters`` without rclpy's own (``use_sim_time``)."""
    return {k: v for k, v in ros_parameters.items() if k not in ROS_OWN_PARAMETERS}


class _NoAliasDumper(yaml.SafeDumper):
    """SafeDumper without anchors/aliases: rcl's parameter-file parser rejects them."""

    def ignore_aliases(self, data):
        return True


@dataclasses.dataclass(frozen=True)
class TaskInfo:
    """What the graph needs to know about the robot task (no simulator import)."""

    name: str
    joint_names: tuple[str, ...]
    action_dim: int
    obs_dim: int
    extras_dim: int
    uses_joint_state: bool
    command_interface: str
    control_dt: float
    max_episode_steps: int
    action_low: tuple[float, ...] = ()   # actuator command range (empty: unknown)
    action_high: tuple[float, ...] = ()
    # What the policy's output means by default (ModelSection.action_mode 'task'): 'absolute'
    # commands, 'relative' joint targets q + action_scale * action, or 'offset' targets
    # action_offset + action_scale * action.
    action_mode: str = 'absolute'
    action_scale: tuple[float, ...] = ()
    action_offset: tuple[float, ...] = ()   # 'offset' mode: the pose actions are around
    action_clip: float = 0.0   # |action| clipped to this before the map (0: no clip)
    # The last this many extras columns are for the critic only (privileged simulator state).
    critic_only_extras: int = 0
    # The joint pose episodes start around (empty: the task declares none); recorded with
    # every checkpoint and export, with the workspace below.
    home: tuple[float, ...] = ()
    # Where the task's goals lie: (xmin, ymin, zmin, xmax, ymax, zmax) in m, in the frame
    # ``workspace_frame`` (empty: the task declares none). Goals outside are refused on a robot.
    workspace: tuple[float, ...] = ()
    workspace_frame: str = ''
    # The PD at the motor the task trains with (legged tasks; unilab_core.actuator): per-joint
    # kp, kd. Empty: the task declares none. A legged robot's profile must carry the same.
    motor_kp: tuple[float, ...] = ()
    motor_kd: tuple[float, ...] = ()


class Workspace(NamedTuple):
    """A task's workspace: an axis-aligned box (m) in a named frame (the robot's base)."""

    low: tuple[float, float, float]
    high: tuple[float, float, float]
    frame: str = 'base_link'

    def box(self) -> tuple[float, ...]:
        """Return ``(xmin, ymin, zmin, xmax, ymax, zmax)``."""
        return tuple(float(v) for v in (*self.low, *self.high))


@dataclasses.dataclass(frozen=True)
class NodeSpec:
    """One node of a graph: its name, package, console script and class."""

    name: str
    package: str
    executable: str
    module: str
    node_class: str


@dataclasses.dataclass(frozen=True)
class Graph:
    """
    A named graph: nodes plus each node's typed parameters (``{node_name: model}``).

    ``namespace`` (``''`` or e.g. ``/robot3``) puts every node and every
    relative topic of one instance under it, so several instances (a fleet)
    share one ROS graph; ``end_node`` names the node whose end ends the graph
    (the trainer in training, none for a deployment that runs until stopped).
    """

    name: str
    nodes: tuple[NodeSpec, ...]
    parameters: dict[str, Section]
    namespace: str = ''
    end_node: str = ''
    #: ``{node_name: {from_topic: to_topic}}``: ROS remappings (a robot's own topic names).
    remappings: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)
    #: Every node runs on the simulated time the graph publishes on /clock (a simulated
    #: graph), so stamps on every topic agree; False: wall time (a robot).
    use_sim_time: bool = False
    #: Nodes the graph runs on without (the adapter and recorder beside a robot's control
    #: loop): their exit is reported, the others keep running.
    optional: tuple[str, ...] = ()
    #: Nodes a starter runs together in one process (on one executor) when the others run
    #: one per process: the robot's control loop, while learners run beside it in their
    #: own processes (``unilab adapt``). Empty: every node in its own process.
    together: tuple[str, ...] = ()
    #: Nodes a starter moves to SCHED_IDLE as their process starts (the learners beside a
    #: robot's control loop): their imports and DDS start-up do not take a core the control
    #: loop wants (the nodes also move themselves, on any starter).
    idle: tuple[str, ...] = ()

    def node(self, name: str) -> NodeSpec:
        """Return the node called ``name``."""
        return next(n for n in self.nodes if n.name == name)

    def ros_args(self, node_name: str) -> list[str]:
        """Return the ``--ros-args`` of one node: its namespace and remappings."""
        args = ['-r', f'__ns:={self.namespace}'] if self.namespace else []
        for src, dst in self.remappings.get(node_name, {}).items():
            args += ['-r', f'{src}:={dst}']
        return args

    def param_key(self, node_name: str) -> str:
        """Return the key of a node's section in the parameter file (its full name)."""
        return f'{self.namespace.rstrip("/")}/{node_name}' if self.namespace else node_name

    def plain_parameters(self) -> dict[str, dict[str, Any]]:
        """Return every node's parameters as plain data."""
        return {n: p.model_dump(mode='python') for n, p in self.parameters.items()}

    def params_yaml(self) -> str:
        """Render the ROS parameter file (``node: ros__parameters: ...``)."""
        sim = {'use_sim_time': True} if self.use_sim_time else {}
        return yaml.dump(
            {self.param_key(n): {'ros__parameters': {**p, **sim}}
             for n, p in self.plain_parameters().items()},
            Dumper=_NoAliasDumper, sort_keys=False)

    def write_params(self, path: str | pathlib.Path) -> pathlib.Path:
        """Write the parameter file atomically and return its path."""
        atomic_write_text(path, self.params_yaml())
        return pathlib.Path(path)


def holds_joint_positions(task) -> bool:
    """
    Return whether ``task``'s drives hold the measured joint positions at an episode start.

    True for position-controlled tasks with one command per observed joint (the policy's
    action history starts from them); ``task`` is a TaskInfo or a simulator task.
    """
    return (task.command_interface == 'position' and task.uses_joint_state
            and task.action_dim == len(task.joint_names))
