# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Declare ROS parameters from the typed config sections and read them back.

A node declares ``<section>.<field>`` for each field of a section model with
the model's default, so ``node: ros__parameters: {rollout: {num_envs: 8}}``
works as ROS users expect; the values are then validated by the same model,
and an error names the node and the key.
"""

from __future__ import annotations

import typing

from pydantic import ValidationError
from rclpy.node import Node
from rclpy.parameter import Parameter

from unilab_core.config import _Section, ConfigError


_ARRAY_TYPES = {(int,): Parameter.Type.INTEGER_ARRAY, (float,): Parameter.Type.DOUBLE_ARRAY,
                (str,): Parameter.Type.STRING_ARRAY, (bool,): Parameter.Type.BOOL_ARRAY}


def declare_section(node: Node, section: str, model: type[_Section]) -> _Section:
    """Declare and read the parameters of one config section."""
    values = {}
    for fname, field in model.model_fields.items():
        default = field.default_factory() if field.default_factory else field.default
        name = f'{section}.{fname}'
        if isinstance(default, list) and not default:
            # An empty list has no ROS type of its own (rclpy would make it a byte
            # array and refuse the user's ints); take it from the annotation.
            ptype = _ARRAY_TYPES.get(typing.get_args(field.annotation)[:1], None)
            value = node.declare_parameter(name, ptype or default).value
            values[fname] = [] if value is None else list(value)
            continue
        values[fname] = node.declare_parameter(name, default).value
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        keys = '; '.join(f"{node.get_name()}: parameter `{section}.{'.'.join(map(str, e['loc']))}`"
                         f": {e['msg']}" for e in exc.errors())
        raise ConfigError(keys) from None
