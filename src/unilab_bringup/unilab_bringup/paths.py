# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Where the installed configuration lives."""

from __future__ import annotations

import pathlib
import re

from unilab_core.config import ConfigError, load_run_config


def share_dir() -> pathlib.Path:
    """Return the unilab_bringup share directory (installed), or its source in a checkout."""
    try:
        from ament_index_python.packages import get_package_share_directory
        return pathlib.Path(get_package_share_directory('unilab_bringup'))
    except Exception:  # not installed through colcon: run from the source tree
        return pathlib.Path(__file__).resolve().parents[1]


def config_dir() -> pathlib.Path:
    """Return the directory holding unilab_config.yaml and ppo_unilab.yaml."""
    return share_dir() / 'config'


def default_config_files() -> list[pathlib.Path]:
    """Return the two default configuration files, in merge order."""
    return [config_dir() / 'unilab_config.yaml', config_dir() / 'ppo_unilab.yaml']


#: Preset of every gymnasium MuJoCo task without a preset of its own.
GYMNASIUM_PRESET = 'gymnasium_mujoco'


def task_preset_files(task: str) -> list[pathlib.Path]:
    """
    Return the task's preset files (none, or one).

    ``config/tasks/<task>.yaml``, else for a gymnasium MuJoCo id
    ``config/tasks/gymnasium_mujoco.yaml``. A preset is merged over the defaults and under
    the user's files and flags, so what a user sets always wins (``training_config``).
    """
    from unilab_bridge.tasks.gym_adapter import is_gym_mujoco_id
    if not re.fullmatch(r'[A-Za-z0-9_.-]+', task) or task.startswith('.'):
        return []  # not a file name (an unknown task is refused where it is built)
    tasks = config_dir() / 'tasks'
    own = tasks / f'{task}.yaml'
    if own.is_file():
        return [own]
    if is_gym_mujoco_id(task):
        return [tasks / f'{GYMNASIUM_PRESET}.yaml']
    return []


def training_config(config_files=(), overrides: dict | None = None):
    """
    Load a training run's config: defaults, the task's preset, ``config_files``, flags.

    The task is known only once the files and flags are read, so they are read twice when
    the task has a preset.
    """
    defaults, files = default_config_files(), list(config_files)
    cfg = load_run_config(defaults + files, overrides)
    presets = task_preset_files(cfg.run.task)
    return load_run_config(defaults + presets + files, overrides) if presets else cfg


def robots_dir() -> pathlib.Path:
    """Return the directory of the shipped robot profiles and joint-limit files."""
    return config_dir() / 'robots'


def profile_path(name_or_path: str | pathlib.Path) -> pathlib.Path:
    """Return the file of a robot profile given by path or by a shipped name (``arm6``)."""
    path = pathlib.Path(name_or_path)
    if path.suffix in ('.yaml', '.yml') or path.exists():
        if not path.is_file():
            raise ConfigError(f'robot profile {path}: file not found')
        return path
    shipped = robots_dir() / f'{name_or_path}.yaml'
    if not shipped.is_file():
        known = sorted(p.stem for p in robots_dir().glob('*.yaml')
                       if not p.stem.endswith('_joint_limits'))
        raise ConfigError(f'robot profile `{name_or_path}`: no such file and no shipped '
                          f'profile of that name (shipped: {", ".join(known)})')
    return shipped
