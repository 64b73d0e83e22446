# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Robot profiles: validation with the key named, file paths resolved, controller order."""

import pytest
from unilab_core.config import ConfigError
from unilab_core.robot_profile import load_profile
import yaml

BASE = {'name': 'bot', 'task': 'arm6_reach', 'joint_names': ['a', 'b'],
        'joint_limits_file': 'limits.yaml', 'command': {'joints': ['b', 'a']}}


def _write(tmp_path, **changes):
    (tmp_path / 'limits.yaml').write_text('joint_limits: {}\n')
    data = {**BASE, **changes}
    path = tmp_path / 'bot.yaml'
    path.write_text(yaml.safe_dump({'robot': data}))
    return path


def test_a_profile_loads_with_its_files_resolved(tmp_path):
    p = load_profile(_write(tmp_path))
    assert p.joint_limits_file == str((tmp_path / 'limits.yaml').resolve())
    assert p.controller_joints == ['b', 'a'] and p.control_dt == pytest.approx(0.02)
    assert p.command.type == 'forward_command' and p.joint_states_topic == '/joint_states'


@pytest.mark.parametrize('changes, words', [
    ({'joint_name': ['a']}, ['robot.joint_name', 'bot.yaml', 'unknown key']),
    ({'control_rate_hz': -5}, ['control_rate_hz']),
    ({'command': {'type': 'ros1'}}, ['command.type']),
    ({'command': {'joints': ['a', 'c']}}, ['command.joints', 'joint_names']),
    ({'joint_names': ['a', 'a']}, ['joint_names', 'distinct']),
    ({'joint_limits_file': 'missing.yaml'}, ['joint_limits_file', 'not found']),
    ({'joint_limits_file': ''}, ['joint_limits_file or urdf_file']),
])
def test_bad_profiles_name_the_key(tmp_path, changes, words):
    with pytest.raises(ConfigError) as info:
        load_profile(_write(tmp_path, **changes))
    for w in words:
        assert w in str(info.value)


def test_package_paths_resolve_inside_python_packages(tmp_path):
    p = load_profile(_write(tmp_path, model_file='package://unilab_core/config.py'))
    assert p.model_file.endswith('unilab_core/config.py')
    with pytest.raises(ConfigError, match='no Python package'):
        load_profile(_write(tmp_path, model_file='package://no_such_pkg/x.xml'))


def test_a_copied_profile_resolves_its_files_beside_itself(tmp_path):
    # The shipped ur5e profile copied alone: its limits file is looked for beside the
    # copy, and the error says so; copied together, the copy loads from its own directory.
    import pathlib
    import shutil
    shipped = pathlib.Path(__file__).resolve().parents[3] / 'config' / 'robots'
    alone = tmp_path / 'alone'
    alone.mkdir()
    shutil.copy(shipped / 'ur5e.yaml', alone / 'my_ur5e.yaml')
    with pytest.raises(ConfigError) as info:
        load_profile(alone / 'my_ur5e.yaml')
    text = str(info.value)
    assert 'joint_limits_file' in text and str(alone / 'ur5e_joint_limits.yaml') in text
    assert 'copied beside it' in text
    shutil.copy(shipped / 'ur5e_joint_limits.yaml', alone / 'ur5e_joint_limits.yaml')
    p = load_profile(alone / 'my_ur5e.yaml')
    assert p.joint_limits_file == str(alone / 'ur5e_joint_limits.yaml')
