# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Configuration: defaults, merge order, and errors that name file and key."""

import pathlib

import pytest
from unilab_core.config import ConfigError, describe_keys, load_run_config, RunConfig

REPO_CONFIG = pathlib.Path(__file__).resolve().parents[2] / 'unilab_bringup' / 'config'


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_defaults_are_valid():
    cfg = RunConfig()
    assert cfg.rollout.num_envs == 64
    assert cfg.policy_update.schedule == 'adaptive'


def test_shipped_files_validate():
    cfg = load_run_config([REPO_CONFIG / 'unilab_config.yaml', REPO_CONFIG / 'ppo_unilab.yaml'])
    assert cfg.run.task == 'arm6_reach'
    assert cfg.gpu.memory_pool_ratio == 0.7


def test_later_file_overrides_earlier(tmp_path):
    a = write(tmp_path, 'a.yaml', 'rollout: {num_envs: 8, rollout_length: 16}\n')
    b = write(tmp_path, 'b.yaml', 'rollout: {num_envs: 4}\n')
    cfg = load_run_config([a, b])
    assert (cfg.rollout.num_envs, cfg.rollout.rollout_length) == (4, 16)


def test_unknown_key_names_file_and_key(tmp_path):
    bad = write(tmp_path, 'bad.yaml', 'policy_update:\n  lr: 0.001\n  lrr: 0.1\n')
    with pytest.raises(ConfigError) as err:
        load_run_config([bad])
    assert str(bad) in str(err.value)
    assert '`policy_update.lrr`: unknown key' in str(err.value)


def test_unknown_section_is_an_error(tmp_path):
    bad = write(tmp_path, 'bad.yaml', 'rolout: {num_envs: 8}\n')
    with pytest.raises(ConfigError, match='`rolout`: unknown key'):
        load_run_config([bad])


def test_out_of_range_value(tmp_path):
    bad = write(tmp_path, 'bad.yaml', 'policy_update: {lr: -1.0}\n')
    with pytest.raises(ConfigError, match=r'`policy_update\.lr`: Input should be greater than 0'):
        load_run_config([bad])


def test_wrong_type(tmp_path):
    bad = write(tmp_path, 'bad.yaml', 'rollout: {num_envs: many}\n')
    with pytest.raises(ConfigError, match=r'`rollout\.num_envs`'):
        load_run_config([bad])


def test_bad_choice(tmp_path):
    bad = write(tmp_path, 'bad.yaml', 'run: {device: tpu}\n')
    with pytest.raises(ConfigError, match=r'`run\.device`'):
        load_run_config([bad])


def test_error_names_the_file_that_introduced_it(tmp_path):
    good = write(tmp_path, 'good.yaml', 'rollout: {num_envs: 8}\n')
    bad = write(tmp_path, 'second.yaml', 'advantage: {gamma: 1.5}\n')
    with pytest.raises(ConfigError) as err:
        load_run_config([good, bad])
    assert 'second.yaml' in str(err.value) and 'good.yaml' not in str(err.value)


def test_overrides_are_validated():
    cfg = load_run_config([], {'rollout.num_envs': 3, 'run.task': 'Hopper-v5'})
    assert cfg.rollout.num_envs == 3 and cfg.run.task == 'Hopper-v5'
    with pytest.raises(ConfigError, match='command line: key `rollout.num_envs`'):
        load_run_config([], {'rollout.num_envs': 0})


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match='not found'):
        load_run_config([tmp_path / 'nope.yaml'])
    bad = write(tmp_path, 'list.yaml', '- 1\n- 2\n')
    with pytest.raises(ConfigError, match='mapping'):
        load_run_config([bad])
    broken = write(tmp_path, 'broken.yaml', 'a: [1, 2\n')
    with pytest.raises(ConfigError, match='not valid YAML'):
        load_run_config([broken])


def test_a_key_given_twice_is_refused_with_both_lines(tmp_path):
    # YAML itself keeps the last of two equal keys: the first section would vanish.
    twice = write(tmp_path, 'twice.yaml', 'rollout:\n  num_envs: 4\nrollout:\n  num_envs: 8\n')
    with pytest.raises(ConfigError, match=r'twice.yaml:3:1: not valid YAML: .*key `rollout` '
                       r'appears twice \(lines 1 and 3\)'):
        load_run_config([twice])
    nested = write(tmp_path, 'nested.yaml', 'rollout:\n  num_envs: 4\n  num_envs: 8\n')
    with pytest.raises(ConfigError, match=r'key `num_envs` appears twice \(lines 2 and 3\)'):
        load_run_config([nested])
    # Equal keys in different mappings are no repetition.
    ok = write(tmp_path, 'ok.yaml', 'rollout:\n  num_envs: 4\nrun:\n  seed: 4\n')
    assert load_run_config([ok]).rollout.num_envs == 4


def test_every_key_is_documented():
    rows = describe_keys()
    assert len(rows) > 30
    assert all(desc for _, desc, _ in rows), [k for k, d, _ in rows if not d]


def test_a_feature_section_is_validated_like_a_core_one_and_an_unknown_section_refused(
        tmp_path, monkeypatch):
    from pydantic import Field
    from unilab_core import config

    class DemoSection(config.Section):
        period_s: float = Field(60.0, gt=0.0)

    monkeypatch.setattr(config, 'feature_sections', lambda: {'demo': DemoSection})
    config.run_config_model.cache_clear()
    try:
        ok = tmp_path / 'ok.yaml'
        ok.write_text('demo: {period_s: 2.5}\n')
        cfg = load_run_config([ok])
        assert isinstance(cfg, RunConfig) and cfg.demo.period_s == 2.5
        assert load_run_config([]).demo.period_s == 60.0  # a default, as core sections have
        assert 'demo' in cfg.to_dict() and config.all_sections()['demo'] is DemoSection
        bad = tmp_path / 'bad.yaml'
        bad.write_text('demo: {period_s: -1}\n')
        with pytest.raises(ConfigError, match='demo.period_s'):
            load_run_config([bad])
        typo = tmp_path / 'typo.yaml'
        typo.write_text('dmeo: {period_s: 1}\n')
        with pytest.raises(ConfigError, match='`dmeo`: unknown key'):
            load_run_config([typo])
    finally:
        config.run_config_model.cache_clear()


def test_the_installed_features_add_their_sections():
    from unilab_core.config import feature_sections
    sections = feature_sections()
    if not sections:
        pytest.skip('no feature package installed beside unilab_core')
    assert {'adapt', 'offline'} <= set(sections)
    cfg = load_run_config([])
    assert cfg.adapt.period_s > 0 and cfg.offline.batch_size > 0
