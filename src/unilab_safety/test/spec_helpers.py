# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Build safety specs and node parameters from flat keyword arguments (tests only)."""

from rclpy.parameter import Parameter
from unilab_core.config import SafetySection
from unilab_safety.params import SafetySpec

#: SafetySpec's own fields; every other key belongs to its ``safety`` section.
TOP = set(SafetySpec.model_fields) - {'safety'}


def spec(**flat) -> SafetySpec:
    """Return a SafetySpec: spec fields by name, ``safety`` section fields by theirs."""
    top = {k: v for k, v in flat.items() if k in TOP}
    return SafetySpec(**top, safety=SafetySection(**{k: v for k, v in flat.items()
                                                     if k not in TOP}))


def node_parameters(**flat) -> list:
    """Return the safety node's parameter overrides for flat keys (section keys dotted)."""
    return [Parameter(k if k in TOP else f'safety.{k}', value=v) for k, v in flat.items()]
