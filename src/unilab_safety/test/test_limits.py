# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Loading and validating ros2_control joint limits."""

import math

import numpy as np
import pytest
from unilab_safety.limits import JointLimits, LimitsError, load_joint_limits
import yaml

ARM = {
    'joint_limits': {
        'j1': {'has_position_limits': True, 'min_position': -1.0, 'max_position': 2.0,
               'has_velocity_limits': True, 'max_velocity': 1.5},
        'j2': {'has_effort_limits': True, 'max_effort': 10.0,
               'has_acceleration_limits': True, 'max_acceleration': 4.0},
    }
}


def _one(**spec):
    return {'joint_limits': {'j1': spec}}


def test_vectorised_arrays():
    ls = load_joint_limits(ARM, ['j2', 'j1'])
    assert ls.joint_names == ('j2', 'j1')
    np.testing.assert_array_equal(ls.pos_lo, [-np.inf, -1.0])
    np.testing.assert_array_equal(ls.pos_hi, [np.inf, 2.0])
    np.testing.assert_array_equal(ls.vel_max, [np.inf, 1.5])
    np.testing.assert_array_equal(ls.acc_max, [4.0, np.inf])
    np.testing.assert_array_equal(ls.eff_max, [10.0, np.inf])
    assert ls.pos_lo.dtype == np.float64 and not ls.pos_lo.flags.writeable


def test_plain_and_ros_parameters_forms():
    plain = load_joint_limits(ARM['joint_limits'], ['j1'])
    nested = load_joint_limits({'arm_controller': {'ros__parameters': ARM}}, ['j1'])
    np.testing.assert_array_equal(plain.pos_hi, nested.pos_hi)


def test_yaml_file_round_trip(tmp_path):
    path = tmp_path / 'limits.yaml'
    path.write_text(yaml.safe_dump({'node': {'ros__parameters': ARM}}))
    ls = load_joint_limits(str(path), ['j1', 'j2'])
    out = tmp_path / 'out.yaml'
    out.write_text(yaml.safe_dump(ls.to_dict()))
    back = load_joint_limits(out, ['j1', 'j2'])
    for name in ('pos_lo', 'pos_hi', 'vel_max', 'acc_max', 'eff_max'):
        np.testing.assert_array_equal(getattr(ls, name), getattr(back, name))
    assert back.to_dict() == ls.to_dict()
    assert ls.to_dict()['joint_limits']['j1']['max_velocity'] == 1.5


def test_soft_limits_only_narrow():
    spec = {'has_position_limits': True, 'min_position': -1.0, 'max_position': 1.0,
            'has_soft_limits': True, 'k_position': 10.0,
            'soft_lower_limit': -0.5, 'soft_upper_limit': 3.0}
    ls = load_joint_limits(_one(**spec), ['j1'])
    # Lower soft bound narrows; upper one is wider than hard, so hard 1.0 stays.
    assert ls.pos_lo[0] == -0.5 and ls.pos_hi[0] == 1.0
    assert len(ls.warnings) == 1 and "'soft_upper_limit'" in ls.warnings[0]
    assert ls.joints[0].k_position == 10.0


def test_soft_limits_disjoint_from_hard():
    spec = {'min_position': -1.0, 'max_position': 1.0,
            'soft_lower_limit': 2.0, 'soft_upper_limit': 3.0}
    with pytest.raises(LimitsError, match="joint 'j1'.*does not overlap"):
        load_joint_limits(_one(**spec), ['j1'])


@pytest.mark.parametrize('spec, words', [
    ({'has_velocity_limits': True, 'max_velocty': 1.0},
     ["joint 'j1'", "key 'max_velocty'", "did you mean 'max_velocity'"]),
    ({'has_velocity_limits': True, 'max_velocity': 'fast'},
     ["joint 'j1'", "key 'max_velocity'", 'expected a number']),
    ({'has_velocity_limits': True, 'max_velocity': '1e3'}, ["key 'max_velocity'", '1.0e3']),
    ({'has_velocity_limits': 'yes', 'max_velocity': 1.0},
     ["key 'has_velocity_limits'", 'true/false']),
    ({'min_position': 1.0, 'max_position': 1.0}, ["joint 'j1'", "key 'min_position'", '< max']),
    ({'max_velocity': -1.0}, ["joint 'j1'", "key 'max_velocity'", '>= 0']),
    ({'max_effort': -2}, ["key 'max_effort'", '>= 0']),
    ({'max_acceleration': -0.1}, ["key 'max_acceleration'", '>= 0']),
    ({'has_velocity_limits': True}, ["joint 'j1'", "key 'max_velocity'", 'missing']),
    ({'has_position_limits': True, 'min_position': 0.0},
     ["key 'max_position'", 'has_position_limits is true']),
    ({'min_position': 0.0}, ["key 'max_position'", 'implied by min_position']),
    ({'max_velocity': math.nan}, ["key 'max_velocity'", 'NaN']),
    ({'has_position_limits': False}, ["joint 'j1'", 'no limits']),
])
def test_error_names_joint_and_key(spec, words):
    with pytest.raises(LimitsError) as err:
        load_joint_limits(_one(**spec), ['j1'])
    for word in words:
        assert word in str(err.value)


def test_error_names_file(tmp_path):
    path = tmp_path / 'bad.yaml'
    path.write_text('joint_limits:\n  j1: {has_velocity_limits: true, max_velocty: 1.0}\n')
    with pytest.raises(LimitsError, match='bad.yaml.*j1.*max_velocty'):
        load_joint_limits(path, ['j1'])
    with pytest.raises(LimitsError, match='missing.yaml.*cannot read'):
        load_joint_limits(tmp_path / 'missing.yaml', ['j1'])


def test_missing_joint():
    with pytest.raises(LimitsError, match="joint 'j9' has no entry"):
        load_joint_limits(ARM, ['j1', 'j9'])
    ls = load_joint_limits(ARM, ['j1', 'j9'], allow_unlimited=True)
    assert ls.pos_hi[1] == np.inf and ls.vel_max[1] == np.inf


def test_unlimited_joint_allowed():
    ls = load_joint_limits(_one(has_position_limits=False), ['j1'], allow_unlimited=True)
    assert ls.pos_lo[0] == -np.inf and ls.eff_max[0] == np.inf


def test_disabled_flag_ignores_value_and_extra_keys_round_trip():
    spec = {'has_velocity_limits': False, 'max_velocity': 1.0, 'max_effort': 3.0,
            'has_jerk_limits': False, 'angle_wraps': False}
    ls = load_joint_limits(_one(**spec), ['j1'])
    assert ls.vel_max[0] == np.inf and ls.eff_max[0] == 3.0
    assert ls.to_dict()['joint_limits']['j1']['angle_wraps'] is False


def test_joint_limits_defaults():
    jl = JointLimits()
    assert not jl.has_any_limits and jl.max_velocity == math.inf


def test_vendor_files_with_degrees_load_as_radians(tmp_path):
    path = tmp_path / 'ur.yaml'
    path.write_text('joint_limits:\n  elbow_joint:\n    has_position_limits: true\n'
                    '    max_position: !degrees  180.0\n    min_position: !degrees -180.0\n'
                    '    has_velocity_limits: true\n    max_velocity: !degrees 90\n')
    lim = load_joint_limits(str(path), ['elbow_joint'])
    assert lim.pos_hi[0] == pytest.approx(math.pi) and lim.pos_lo[0] == pytest.approx(-math.pi)
    assert lim.vel_max[0] == pytest.approx(math.pi / 2)
    path.write_text('joint_limits:\n  j:\n    has_position_limits: true\n'
                    '    max_position: !degrees lots\n    min_position: 0.0\n')
    with pytest.raises(LimitsError, match='degrees'):
        load_joint_limits(str(path), ['j'])
    path.write_text('joint_limits:\n  j: !!python/object/apply:os.system ["true"]\n')
    with pytest.raises(LimitsError):  # still a safe loader: no code runs
        load_joint_limits(str(path), ['j'])


def test_urdf_limit_tags_load_like_ros2_control_reads_them(tmp_path):
    path = tmp_path / 'robot.urdf'
    path.write_text('<robot name="r"><link name="a"/><link name="b"/><link name="c"/>'
                    '<joint name="j1" type="revolute"><parent link="a"/><child link="b"/>'
                    '<limit lower="-1.5" upper="1.5" effort="20" velocity="2.0"/>'
                    '<safety_controller soft_lower_limit="-1.0" soft_upper_limit="1.2"/>'
                    '</joint><joint name="j2" type="continuous"><parent link="b"/>'
                    '<child link="c"/><limit effort="5" velocity="3.0"/></joint></robot>')
    lim = load_joint_limits(str(path), ['j1', 'j2'])
    assert lim.pos_lo.tolist()[0] == -1.0 and lim.pos_hi.tolist()[0] == 1.2  # soft narrows
    assert lim.vel_max.tolist() == [2.0, 3.0] and lim.eff_max.tolist() == [20.0, 5.0]
    assert lim.pos_hi[1] == float('inf')  # continuous: no position range
    path.write_text('<robot><joint name="j1" type="revolute"><limit lower="x"/></joint></robot>')
    with pytest.raises(LimitsError, match="joint 'j1'"):
        load_joint_limits(str(path), ['j1'])


def test_a_broken_limits_file_is_refused_in_one_line_naming_the_place(tmp_path):
    path = tmp_path / 'joint_limits.yaml'
    path.write_text('joint_limits:\n  j1: {max_position: [1.0\n  j2: {}\n')
    with pytest.raises(LimitsError) as info:
        load_joint_limits(str(path), ['j1', 'j2'])
    text = str(info.value)
    assert text.startswith(f'{path}:3:') and 'not valid YAML' in text
    assert '\n' not in text and '^' not in text
