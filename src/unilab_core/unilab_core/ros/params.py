# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Declare a node's ROS parameters from its typed parameter model and read them back.

Every node has one pydantic model of its parameters (``unilab_policy.params.
PolicyNodeParams``, ...), built from the run configuration's sections. A node
declares each leaf field with the model's default: top-level fields under
their own name, fields of a nested section as ``<section>.<field>`` (and
deeper, ``disturbances.imu.enabled``), so ``node: ros__parameters:
{rollout: {num_envs: 8}}`` works as ROS users expect. The values are then
validated by the same model, and an error names the node and the key. No node
lists a parameter by hand.

Every parameter is read-only: nodes read them once, at start, so ``ros2 param set``
on a running node is refused with the reason instead of accepted and ignored. An
empty list holds a typed empty value (never "not set"), so ``ros2 param dump``
answers with every parameter.
"""

from __future__ import annotations

import copy
import typing

from pydantic import ValidationError
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.parameter import Parameter

from unilab_core.config import ConfigError, nested_section, Section


_ARRAY_TYPES = {(int,): Parameter.Type.INTEGER_ARRAY, (float,): Parameter.Type.DOUBLE_ARRAY,
                (str,): Parameter.Type.STRING_ARRAY, (bool,): Parameter.Type.BOOL_ARRAY}


def read_only() -> ParameterDescriptor:
    """Return a new descriptor of a parameter read once at start (``param set`` refused)."""
    return ParameterDescriptor(read_only=True)


def _declare_typed_list(node: Node, name: str, ptype: Parameter.Type):
    """Declare a list parameter by its type; unset, it holds a typed empty list."""
    value = node.declare_parameter(name, ptype).value
    if value is None:
        node.set_parameters([Parameter(name, ptype, [])])
        value = []
    descriptor = copy.copy(node.describe_parameter(name))
    descriptor.read_only = True
    node.set_descriptor(name, descriptor)
    return value


def _declare(node: Node, prefix: str, model: type[Section]) -> dict:
    values = {}
    for fname, field in model.model_fields.items():
        name = f'{prefix}{fname}'
        sub = nested_section(field)
        if sub is not None:
            values[fname] = _declare(node, f'{name}.', sub)
            continue
        default = field.default_factory() if field.default_factory else field.default
        if isinstance(default, list) and not default:
            # An empty list has no ROS type of its own (rclpy would make it a byte
            # array and refuse the user's ints); take it from the annotation.
            ptype = _ARRAY_TYPES.get(typing.get_args(field.annotation)[:1], None)
            if ptype is None:
                value = node.declare_parameter(name, default, read_only()).value
            else:
                value = _declare_typed_list(node, name, ptype)
            values[fname] = [] if value is None else list(value)
            continue
        value = node.declare_parameter(name, default, read_only()).value
        values[fname] = list(value) if isinstance(default, list) else value
    return values


def declare_params(node: Node, model: type[Section], prefix: str = '') -> Section:
    """
    Declare every parameter of ``model`` (nested sections as dotted names) and validate.

    ``prefix`` puts the whole model under a name (``declare_params(node, ModelSection,
    'model')`` declares ``model.hidden_sizes``, ...). Raises ConfigError naming the node
    and each bad key.
    """
    values = _declare(node, f'{prefix}.' if prefix else '', model)
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        head = f'{prefix}.' if prefix else ''
        keys = '; '.join(f"{node.get_name()}: parameter `{head}{'.'.join(map(str, e['loc']))}`"
                         f": {e['msg']}" for e in exc.errors())
        raise ConfigError(keys) from None
