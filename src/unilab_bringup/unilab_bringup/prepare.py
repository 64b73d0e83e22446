# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Resolve a run: config files + flags -> validated config, task, run dir, graph."""

from __future__ import annotations

import dataclasses
import datetime
import math
import pathlib

from unilab_bridge.tasks import make_task, UnknownTaskError
from unilab_bringup.graphs import training_graph
from unilab_bringup.paths import config_dir, training_config
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError, dump_config, RunConfig
from unilab_core.graph import Graph, TaskInfo
from unilab_policy.checkpoint import load_checkpoint
import yaml


@dataclasses.dataclass
class PreparedRun:
    """Everything a starter needs to launch the graph."""

    cfg: RunConfig
    task: TaskInfo
    run_dir: pathlib.Path
    graph: Graph
    params_file: pathlib.Path
    joint_limits_file: pathlib.Path


def _motor_gains(task) -> dict:
    """Return the task's motor PD gains as TaskInfo fields (none for tasks without a PD)."""
    pd = getattr(task, 'pd', None)
    if pd is None:
        return {}
    return {'motor_kp': tuple(float(x) for x in pd.kp),
            'motor_kd': tuple(float(x) for x in pd.kd)}


def task_info(name: str) -> tuple[TaskInfo, dict]:
    """Instantiate the task once (one env) to read its dimensions and joint limits."""
    try:
        task = make_task(name, 1, seed=0)
    except UnknownTaskError as exc:
        raise ConfigError(f'run.task: {exc}') from None
    try:
        info = TaskInfo(name=name, joint_names=tuple(task.joint_names),
                        action_dim=task.action_dim, obs_dim=task.obs_dim,
                        extras_dim=task.extras_dim, uses_joint_state=task.uses_joint_state,
                        command_interface=task.command_interface,
                        control_dt=float(task.control_dt),
                        max_episode_steps=int(task.max_episode_steps),
                        action_low=tuple(float(x) for x in task.action_low),
                        action_high=tuple(float(x) for x in task.action_high),
                        action_mode=task.action_mode,
                        action_scale=tuple(float(x) for x in task.action_scale),
                        action_offset=tuple(float(x) for x in task.action_offset),
                        action_clip=float(getattr(task, 'action_clip', 0.0)),
                        critic_only_extras=int(getattr(task, 'critic_only_extras', 0)),
                        home=tuple(float(x) for x in getattr(task, 'home', ())),
                        workspace=task.workspace.box() if task.workspace else (),
                        workspace_frame=task.workspace.frame if task.workspace else '',
                        **_motor_gains(task))
        return info, dict(task.joint_limits)
    finally:
        task.close()


def resolve_limits_file(cfg: RunConfig, task: TaskInfo, model_limits: dict,
                        run_dir: pathlib.Path) -> pathlib.Path:
    """Pick the joint-limits file: configured, shipped for the task, or derived from the model."""
    if cfg.safety.joint_limits_file:
        path = pathlib.Path(cfg.safety.joint_limits_file)
        if not path.is_file():
            raise ConfigError(f'safety.joint_limits_file: {path} not found')
        return path.resolve()
    shipped = config_dir() / 'robots' / f'{task.name}_joint_limits.yaml'
    if shipped.is_file():
        return shipped
    path = run_dir / 'joint_limits.yaml'
    # Absent limits are NaN in ros2_control's structs; in YAML they are left out.
    clean = {j: {k: v for k, v in lim.items() if not (isinstance(v, float) and math.isnan(v))}
             for j, lim in model_limits.items()}
    atomic_write_text(path, '# Derived from the simulation model by unilab.\n' + yaml.safe_dump(
        {'joint_limits': clean}, sort_keys=False))
    return path


def make_run_dir(task: str, run_dir: str | None, kind: str = '') -> pathlib.Path:
    """Create (if needed) and return the run directory; default ``runs/<task>[-kind]-<time>``."""
    if run_dir is None:
        stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
        run_dir = f'runs/{task}-{kind + "-" if kind else ""}{stamp}'
    rd = pathlib.Path(run_dir).resolve()
    rd.mkdir(parents=True, exist_ok=True)
    return rd


def prepare_run(config_files: list[str] | None = None, overrides: dict | None = None,
                run_dir: str | None = None, resume: str = '') -> PreparedRun:
    """Validate configuration, create the run directory and write the parameter file."""
    files = []
    if resume:
        resume_dir = pathlib.Path(resume)
        saved = resume_dir / 'config.yaml'
        if not saved.is_file():
            raise ConfigError(f'--resume {resume}: no config.yaml (not a run directory?)')
        if not (resume_dir / 'checkpoints' / 'latest.pt').is_file():
            raise ConfigError(f'--resume {resume}: no checkpoints/latest.pt to resume from')
        files.append(saved)
        run_dir = run_dir or str(resume_dir)
    files.extend(config_files or [])
    cfg = training_config(files, overrides)
    rd = make_run_dir(cfg.run.task, run_dir)
    dump_config(cfg, rd / 'config.yaml')
    info, limits_file, graph = describe_training(cfg, rd, resume=str(rd) if resume else '')
    params = graph.write_params(rd / 'graph_params.yaml')
    if resume:
        check_resumable(rd)
    return PreparedRun(cfg, info, rd, graph, params, limits_file)


def describe_training(cfg: RunConfig, run_dir: pathlib.Path,
                      resume: str = '') -> tuple[TaskInfo, pathlib.Path, Graph]:
    """Return the task, the joint-limits file in force and the training graph of ``cfg``."""
    info, limits = task_info(cfg.run.task)
    limits_file = resolve_limits_file(cfg, info, limits, pathlib.Path(run_dir))
    return info, limits_file, training_graph(cfg, info, run_dir, limits_file, resume=resume)


def check_resumable(run_dir: pathlib.Path) -> None:
    """
    Refuse a run whose ``latest.pt`` cannot be resumed, before any node starts.

    The trainer node would find out only after the graph is up (in its own
    process with ``--multiprocess``); here the error is one line naming the file.
    """
    from unilab_policy.networks import load_trained
    from unilab_policy.trainer import RESUME_KEYS
    load_checkpoint(run_dir / 'checkpoints' / 'latest.pt', required=RESUME_KEYS)
    load_trained(run_dir)  # the weights fit the run's model
