# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab deploy MODEL --robot PROFILE``: a trained policy on a ROS 2 robot through its own topics.

A model is a run directory, one of its checkpoints (``.pt``), or an exported
model (ONNX, TorchScript) that carries its description as metadata
(``unilab_policy.export.METADATA_KEY``). The description (the policy node's
parameters and the task it was trained on) is checked against the robot
profile: joint count, command interface and control rate must match, or
deployment stops with an error that names both. The deploy graph
(``unilab_bringup.graphs.deploy_graph``: perception, policy, safety; no simulator, no
trainer) is then written like a training graph's, and every starter (the CLI,
``--multiprocess``, ``deploy.launch.py``) starts the same description.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import pathlib
from typing import Callable

from unilab_bringup.graphs import deploy_graph
from unilab_bringup.paths import default_config_files, profile_path
from unilab_bringup.prepare import make_run_dir, task_info
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError, dump_config, load_run_config, read_yaml, RunConfig
from unilab_core.graph import Graph, TaskInfo
from unilab_core.robot_profile import load_profile, RobotProfile
from unilab_policy.envelope import checkpoint_envelope
from unilab_policy.params import PolicyNodeParams
import yaml


@dataclasses.dataclass(frozen=True)
class DeployModel:
    """A trained policy as deployment needs it."""

    path: pathlib.Path          # what the policy node loads (run dir, checkpoint, export)
    params: object              # the policy node's parameters it was trained with
    task: TaskInfo              # the task it was trained on
    envelope: dict | None = None  # the trained envelope (unilab_policy.envelope), if carried


def model_metadata(params, task: TaskInfo, envelope: dict | None = None) -> dict:
    """Return the description an exported model carries (plain data)."""
    return {'format': 1, 'policy': params.model_dump(mode='python'),
            'task': dataclasses.asdict(task),
            **({'envelope': envelope} if envelope else {})}


def _checkpoint_envelope(checkpoint: pathlib.Path) -> dict | None:
    """Return the trained envelope a checkpoint carries (None: none, or no checkpoint yet)."""
    if not checkpoint.is_file():
        return None  # the policy node names the missing file
    return checkpoint_envelope(checkpoint)


def describe_model(path: str | pathlib.Path) -> DeployModel:
    """Return the description of a run directory, a checkpoint or an exported model."""
    path = pathlib.Path(path)
    if not path.exists():
        raise ConfigError(f'model {path}: not found')
    from unilab_policy.exported_inference import is_exported
    if is_exported(path):
        from unilab_policy.export import read_metadata
        try:
            meta = read_metadata(path)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's error
            raise ConfigError(f'model {path}: not a readable exported model ({exc})') from None
        if not meta or 'policy' not in meta:
            raise ConfigError(f'model {path}: carries no UniLab description; export it again '
                              'with `unilab export RUN_DIR` (this version writes one)')
        from unilab_policy.networks import upgrade_policy_params
        return DeployModel(path, PolicyNodeParams.model_validate(
                               upgrade_policy_params(meta['policy'])),
                           TaskInfo(**{k: tuple(v) if isinstance(v, list) else v
                                       for k, v in meta['task'].items()}),
                           meta.get('envelope'))
    from unilab_policy.networks import checkpoint_of, run_policy_params
    run_dir, checkpoint = checkpoint_of(path)
    params = run_policy_params(run_dir)
    task_name = params.run.task
    config = run_dir / 'config.yaml'
    if config.is_file():  # the run's own record wins (older runs lack run.task)
        task_name = (read_yaml(config).get('run') or {}).get('task', task_name)
    info, _ = task_info(task_name)
    return DeployModel(path, params, info, _checkpoint_envelope(checkpoint))


def check_model_fits(model: DeployModel, profile: RobotProfile, source: str) -> None:
    """Raise ConfigError naming both sides when the policy cannot drive the profile's robot."""
    task = model.task
    problems = []
    if len(profile.joint_names) != task.action_dim:
        problems.append(f'the policy commands {task.action_dim} joints, the profile names '
                        f'{len(profile.joint_names)} ({profile.joint_names})')
    # A legged robot's supervisor takes position targets whatever its controller takes.
    interface = 'position' if profile.legged is not None else profile.command.interface
    if interface != task.command_interface:
        problems.append(f'the policy commands `{task.command_interface}`, the controller '
                        f'takes `{profile.command.interface}`')
    if not math.isclose(profile.control_dt, task.control_dt, rel_tol=1e-3):
        problems.append(f'the policy was trained at {1.0 / task.control_dt:g} Hz, the profile '
                        f'runs at {profile.control_rate_hz:g} Hz')
    leg = profile.legged
    if leg is not None and task.motor_kp:
        # The robot's PD (the gate's, or the driver's: check-robot confirms it declares the
        # same) must be the one the policy learned with.
        for key, want, got in (('kp', task.motor_kp, leg.kp), ('kd', task.motor_kd, leg.kd)):
            if not all(math.isclose(got, w, rel_tol=1e-6) for w in want):
                problems.append(f'the policy was trained with motor {key} '
                                f'{sorted(set(want))}, the profile sets legged.{key} {got:g}')
    if profile.task != task.name:
        problems.append(f'the policy was trained on `{task.name}`, the profile is for '
                        f'`{profile.task}`')
    if problems:
        raise ConfigError(f'{source}: model {model.path} does not fit robot `{profile.name}`: '
                          + '; '.join(problems))


@dataclasses.dataclass(frozen=True)
class GraphExtension:
    """What a feature adds to a deploy (``unilab_adapt.graph.ADAPT``: recorder and adapter)."""

    name: str  # the run directory's kind and the graph's name (``adapt``)
    check: Callable[[DeployModel], None]  # raises ConfigError for a model it cannot take
    #: (deploy graph, config, model path, run dir) -> the graph to start
    extend: Callable[[Graph, RunConfig, pathlib.Path, pathlib.Path], Graph]


@dataclasses.dataclass
class PreparedDeploy:
    """Everything a starter needs to run the deploy graph."""

    cfg: RunConfig
    profile: RobotProfile
    model: DeployModel
    run_dir: pathlib.Path
    graph: Graph
    params_file: pathlib.Path
    warnings: list[str] = dataclasses.field(default_factory=list)


def prepare_deploy(model: str, robot: str, armed: bool = False, namespace: str = '',
                   config_files: list[str] | None = None, run_dir: str | None = None,
                   overrides: dict | None = None,
                   extension: GraphExtension | None = None,
                   require_envelope: bool = False) -> PreparedDeploy:
    """
    Check model and profile, write the deploy graph's parameter file; return the run.

    ``extension`` checks the model and extends the deploy graph for a feature
    (``unilab_adapt.graph.prepare_adapt``: the adaptation graph of ``unilab adapt``,
    the deploy graph plus recorder and adapter).

    A model without a trained envelope (trained before checkpoints carried one, or imported
    without one) runs within the driver's limits only, with a warning in ``warnings``;
    ``require_envelope`` refuses it instead (ConfigError).
    """
    source = str(profile_path(robot))
    profile = load_profile(source)
    desc = describe_model(model)
    check_model_fits(desc, profile, source)
    if extension is not None:
        extension.check(desc)
    warnings = []
    if not (desc.envelope or {}).get('joint_low'):
        text = (f'model {desc.path} carries no trained joint range (trained before '
                'checkpoints recorded one, or imported without one)')
        if require_envelope:
            raise ConfigError(f'{text}; --require-envelope refuses it: train it again, or '
                              'deploy without --require-envelope (driver limits only)')
        warnings.append(f'{text}: the gate enforces the driver\'s joint limits only')
    cfg = load_run_config(list(default_config_files()) + list(config_files or []), overrides)
    rd = make_run_dir(profile.name, run_dir, extension.name if extension else 'deploy')
    dump_config(cfg, rd / 'config.yaml')
    limits = profile.joint_limits_file or profile.urdf_file
    graph = deploy_graph(cfg, profile, desc.params, desc.task, desc.path.resolve(), limits,
                         namespace=namespace, armed=armed, run_dir=rd,
                         envelope=desc.envelope)
    if extension is not None:
        graph = extension.extend(graph, cfg, desc.path.resolve(), rd)
    params = graph.write_params(rd / 'graph_params.yaml')
    atomic_write_text(rd / 'deploy.yaml', yaml.safe_dump({
        'model': str(desc.path.resolve()), 'robot': source, 'namespace': namespace,
        'adapt': extension is not None and extension.name == 'adapt',
        'armed_at_start': armed,
        'started': datetime.datetime.now().isoformat(timespec='seconds')}, sort_keys=False))
    return PreparedDeploy(cfg, profile, desc, rd, graph, params, warnings)
