# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The training graph as data: which nodes, from which packages, with which parameters.

The CLI (composed or one process per node) and ``train.launch.py`` all start
the graph from ``describe_graph``; none of them lists nodes of its own, so
they cannot drift apart. Parameters are written once to a
``node: ros__parameters:`` YAML file that every starter passes to every node.
"""

from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

from unilab_core.atomic import atomic_write_text
from unilab_core.config import bev_cells, RunConfig
import yaml


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


@dataclasses.dataclass(frozen=True)
class NodeSpec:
    """One node of the graph."""

    name: str
    package: str
    executable: str
    module: str
    node_class: str


NODES: tuple[NodeSpec, ...] = (
    NodeSpec('bridge', 'unilab_bridge', 'bridge_node', 'unilab_bridge.bridge_node', 'BridgeNode'),
    NodeSpec('perception', 'unilab_perception', 'perception_node',
             'unilab_perception.perception_node', 'PerceptionNode'),
    NodeSpec('policy', 'unilab_policy', 'policy_node', 'unilab_policy.policy_node', 'PolicyNode'),
    NodeSpec('trainer', 'unilab_policy', 'trainer_node', 'unilab_policy.trainer_node',
             'TrainerNode'),
    NodeSpec('safety', 'unilab_safety', 'safety_node', 'unilab_safety.safety_node', 'SafetyNode'),
)


@dataclasses.dataclass(frozen=True)
class Graph:
    """Nodes plus their parameters (``{node_name: {param: value}}``)."""

    nodes: tuple[NodeSpec, ...]
    parameters: dict[str, dict[str, Any]]

    def params_yaml(self) -> str:
        """Render the ROS parameter file (``node: ros__parameters: ...``)."""
        return yaml.dump(
            {n: {'ros__parameters': p} for n, p in self.parameters.items()},
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


def observation_layout(cfg: RunConfig, task_obs_dim: int) -> tuple[int, list[int]]:
    """
    Return ``(obs_dim, grid_input)`` of the perception node's observation for ``cfg``.

    Layout (the node's assembler): ``[q, qd, extras]``, imu (6), cloud, image.
    ``grid_input`` is ``[offset, 2, H, W]`` when the cloud part is the BEV
    height map (``perception.bev_output: height_map``), else ``[]``.
    """
    per = cfg.perception
    cloud, grid_input = 0, []
    if per.pointcloud:
        if per.bev_output == 'height_map':
            n = bev_cells(per.bev_range, per.pillar_size)
            cloud = 2 * n * n
            grid_input = [task_obs_dim + 6 * per.imu, 2, n, n]
        else:
            cloud = per.bev_feature_dim
    obs_dim = task_obs_dim + 6 * per.imu + cloud + per.image_feature_dim * per.image
    return obs_dim, grid_input


def describe_graph(cfg: RunConfig, task: TaskInfo, run_dir: str | pathlib.Path,
                   joint_limits_file: str | pathlib.Path, resume: str = '') -> Graph:
    """Return the training graph for a resolved config and task."""
    c = cfg.to_dict()
    run, ro, per = c['run'], c['rollout'], c['perception']
    obs_dim, grid_input = observation_layout(cfg, task.obs_dim)
    model = dict(c['model'])
    if grid_input:
        model['grid_input'] = grid_input
    shared_policy = {
        'obs_dim': obs_dim, 'act_dim': task.action_dim, 'device': run['device'],
        'torch_threads': run['torch_threads'],
        'seed': run['seed'], 'model': model, 'normalization': c['normalization'],
        'gpu': c['gpu'],
    }
    params = {
        'bridge': {
            'task': task.name, 'num_envs': ro['num_envs'], 'seed': run['seed'],
            **c['bridge'], 'disturbances': c['disturbances'], 'run_dir': str(run_dir),
            'lidar': c['bridge']['lidar'] or per['pointcloud'],
            'imu': c['bridge']['imu'] or per['imu'],
            'camera': c['bridge']['camera'] or per['image'],
            # The observation needs every env's image: no rendering is a start-up error.
            'camera_required': per['image'],
        },
        'perception': {
            'num_envs': ro['num_envs'], 'joint_names': list(task.joint_names),
            'uses_joint_state': task.uses_joint_state, 'extras_dim': task.extras_dim,
            'obs_dim': obs_dim,
            'sensors': {'pointcloud': per['pointcloud'], 'imu': per['imu'],
                        'image': per['image']},
            'image': {'feature_dim': per['image_feature_dim']},
            'bev': {'feature_dim': per['bev_feature_dim'], 'output': per['bev_output'],
                    'x_range': [-per['bev_range'], per['bev_range']],
                    'y_range': [-per['bev_range'], per['bev_range']],
                    'pillar_size': per['pillar_size']},
            'pointcloud': {'voxel_size': per['voxel_size']},
        },
        'policy': {
            **shared_policy, 'num_envs': ro['num_envs'],
            # model.action_history: commands as the actuators take them (clipped to their
            # range), and at an episode start the held command (see unilab_policy.history).
            **({'action_low': [float(x) for x in task.action_low],
                'action_high': [float(x) for x in task.action_high]} if task.action_low else {}),
            'action_history_fill': 'joint_position' if holds_joint_positions(task) else 'zero',
            'chunk_length': min(ro['chunk_length'], ro['rollout_length']),
            'rollout_length': ro['rollout_length'],
        },
        'trainer': {
            **shared_policy, 'run_dir': str(run_dir), 'total_steps': run['total_steps'],
            'rollout': ro, 'advantage': c['advantage'], 'policy_update': c['policy_update'],
            'checkpoint_every': c['logging']['checkpoint_every'],
            'tensorboard': c['logging']['tensorboard'], 'resume': resume,
        },
        'safety': {
            'joint_limits_file': str(joint_limits_file), 'joint_names': list(task.joint_names),
            'interface': task.command_interface, 'dt': task.control_dt,
            'num_envs': ro['num_envs'],
            'allow_unlimited_joints': c['safety']['allow_unlimited_joints'],
            'max_delta': c['safety']['max_delta'], 'fallback': c['safety']['fallback'],
            'diagnostics_period_s': c['safety']['diagnostics_period_s'],
            **{k: c['safety'][k] for k in (
                'rate_hz', 'watchdog_timeout_s', 'watchdog_fallback', 'rt_priority', 'mlockall',
                'busy_wait_us', 'workspace_model_file', 'lookahead_s', 'lookahead_model',
                'lookahead_joint_limits', 'rt_mode')},
            **{k: [float(v) for v in c['safety'][k]]
               for k in ('pid_kp', 'pid_ki', 'pid_kd', 'pid_i_max')},
            'cpu_affinity': [int(v) for v in c['safety']['cpu_affinity']],
            'workspace_box': [float(v) for v in c['safety']['workspace_box']],
            'lockstep': True,  # the bridge steps on 'command' batches only
            'run_dir': str(run_dir),
        },
    }
    return Graph(NODES, params)
