# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Shipped configuration presets validate against the typed config."""

from unilab.paths import config_dir, default_config_files
from unilab_core.config import load_run_config


def test_every_shipped_preset_validates():
    defaults = list(default_config_files())
    presets = sorted(p for p in config_dir().glob('*.yaml') if p not in defaults)
    assert presets, 'no presets shipped'
    for preset in presets:
        cfg = load_run_config(defaults + [preset])
        assert cfg.run.task  # merged over the defaults


def test_lidar_imu_preset_turns_on_the_perception_paths():
    cfg = load_run_config(list(default_config_files()) + [config_dir() / 'lidar_imu.yaml'])
    assert cfg.perception.pointcloud and cfg.perception.imu
    assert cfg.bridge.lidar_channels == 4 and cfg.rollout.num_envs == 8
