# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Node parameters declared from typed models: nested sections, defaults, errors naming keys."""

from typing import Literal

from pydantic import Field
import pytest
from rclpy.node import Node
from rclpy.parameter import Parameter
from unilab_core.config import ConfigError, DisturbancesSection, SafetySection, Section
from unilab_core.ros.params import declare_params
from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()

from unilab_core.pytest_fixtures import fresh_context  # noqa: E402,F401,I100


class _Inner(Section):
    """A nested section."""

    gains: list[float] = Field(default_factory=list, description='empty list default')
    mode: Literal['a', 'b'] = Field('a', description='a choice')


class _Params(Section):
    """A node's parameters: top-level fields and nested sections, two deep."""

    joint_names: list[str] = Field(default_factory=list, min_length=1, description='names')
    rate_hz: float = Field(100.0, gt=0.0, description='rate')
    inner: _Inner = Field(default_factory=_Inner)
    disturbances: DisturbancesSection = Field(default_factory=DisturbancesSection)
    safety: SafetySection = Field(default_factory=SafetySection)


@pytest.fixture
def node(fresh_context):  # noqa: F811 - the fixture imported above
    made = []

    def make(**overrides):
        n = Node('params_test', context=fresh_context, parameter_overrides=[
            Parameter(k, value=v) for k, v in overrides.items()])
        made.append(n)
        return n
    yield make
    for n in made:
        n.destroy_node()


def test_nested_sections_are_dotted_parameters_with_the_models_defaults(node):
    n = node(**{'joint_names': ['j1'], 'inner.gains': [1.0, 2.0],
                'disturbances.imu.enabled': False, 'safety.rate_hz': 250.0})
    p = declare_params(n, _Params)
    assert p.joint_names == ['j1'] and p.rate_hz == 100.0
    assert p.inner.gains == [1.0, 2.0] and p.inner.mode == 'a'
    assert p.disturbances.imu.enabled is False  # two levels deep
    assert p.disturbances.network.observation_delay_steps == [0, 2]  # default kept
    assert p.safety.rate_hz == 250.0
    names = set(n.get_parameters_by_prefix('').keys())
    assert {'joint_names', 'inner.gains', 'disturbances.imu.enabled',
            'safety.watchdog_timeout_s'} <= names


def test_bad_values_name_the_node_and_the_dotted_key(node):
    with pytest.raises(ConfigError) as info:
        declare_params(node(**{'joint_names': ['j1'], 'inner.mode': 'c',
                               'safety.rate_hz': -1.0}), _Params)
    text = str(info.value)
    assert 'params_test: parameter `inner.mode`' in text
    assert 'params_test: parameter `safety.rate_hz`' in text


def test_a_required_value_left_at_its_default_is_an_error(node):
    with pytest.raises(ConfigError, match='parameter `joint_names`'):
        declare_params(node(), _Params)


def test_a_whole_model_under_a_prefix(node):
    p = declare_params(node(**{'imu.enabled': False}), DisturbancesSection.model_fields[
        'imu'].annotation, prefix='imu')
    assert p.enabled is False
