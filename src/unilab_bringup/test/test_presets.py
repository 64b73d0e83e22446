# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Shipped configuration presets validate against the typed config."""

from unilab_bringup.paths import config_dir, default_config_files
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


def test_task_presets_sit_between_the_defaults_and_what_the_user_sets(tmp_path):
    from unilab_bringup.paths import task_preset_files, training_config
    assert all(p.is_file() for p in config_dir().glob('tasks/*.yaml'))
    assert [p.name for p in task_preset_files('Walker2d-v5')] == ['gymnasium_mujoco.yaml']
    assert task_preset_files('arm6_reach') == []  # the defaults are the arm's
    # A task name is never a path: no preset from outside config/tasks.
    for odd in ('../unilab_config', '..', 'a/b', 'x\x00y', ''):
        assert task_preset_files(odd) == []
    walker = training_config([], {'run.task': 'Walker2d-v5'})
    assert (walker.rollout.num_envs, walker.rollout.rollout_length) == (16, 128)
    assert walker.policy_update.clipped_value_loss is False  # returns in the hundreds
    arm = training_config([], {})
    default = load_run_config(list(default_config_files()))
    assert arm.rollout == default.rollout and arm.run.task == 'arm6_reach'
    assert arm.policy_update == default.policy_update
    # The task named in a user's file picks the preset; the user's keys win over it ...
    mine = tmp_path / 'mine.yaml'
    mine.write_text('run:\n  task: Hopper-v5\nrollout:\n  rollout_length: 64\n')
    hopper = training_config([mine], {})
    assert (hopper.rollout.num_envs, hopper.rollout.rollout_length) == (16, 64)
    # ... and so do flags.
    flags = training_config([mine], {'rollout.num_envs': 8})
    assert (flags.rollout.num_envs, flags.rollout.rollout_length) == (8, 64)
