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


def test_sim2real_preset_is_what_bench_sim2real_trains_with():
    from unilab.bench_sim2real import _config
    injected = _config(1000, 0, 8, True)
    nominal = _config(1000, 0, 8, False)
    assert injected.disturbances.enabled and not nominal.disturbances.enabled
    # The same network for both policies: only the training conditions differ.
    assert injected.model.action_history == nominal.model.action_history == 3
    assert list(injected.disturbances.actuator.delay_steps) == [0, 3]
    # One PPO recipe for both: a fixed learning rate (see the preset's comment).
    for cfg in (injected, nominal):
        assert cfg.policy_update.schedule == 'fixed' and cfg.policy_update.lr == 3.0e-4
