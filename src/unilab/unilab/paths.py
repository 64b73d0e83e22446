# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Where the installed configuration lives."""

from __future__ import annotations

import pathlib


def share_dir() -> pathlib.Path:
    """Return the unilab share directory (installed), or the source package in a checkout."""
    try:
        from ament_index_python.packages import get_package_share_directory
        return pathlib.Path(get_package_share_directory('unilab'))
    except Exception:  # not installed through colcon: run from the source tree
        return pathlib.Path(__file__).resolve().parents[1]


def config_dir() -> pathlib.Path:
    """Return the directory holding unilab_config.yaml and ppo_unilab.yaml."""
    return share_dir() / 'config'


def default_config_files() -> list[pathlib.Path]:
    """Return the two default configuration files, in merge order."""
    return [config_dir() / 'unilab_config.yaml', config_dir() / 'ppo_unilab.yaml']
