# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The adapter node's parameters (a typed model, no ROS)."""

from __future__ import annotations

from pydantic import Field
from unilab_core.config import AdaptSection, Section
from unilab_core.health import HealthParams

#: The recorder's folder in an adaptation run directory: rotating bags ``00000``, ...
RECORDINGS = 'recordings'


class AdapterNodeParams(Section):
    """Parameters of the adapter node (``unilab.adapt.adapter_node``) in the adapt graph."""

    run_dir: str = Field('', min_length=1, description='The deployment\'s run directory '
                         '(its config.yaml; the adapter writes into <run_dir>/adapt).')
    model: str = Field('', min_length=1, description='The deployed policy: a run directory '
                       'or checkpoint (fine-tuning needs the network, not an export).')
    control_rate_hz: float = Field(0.0, ge=0.0, description='The robot\'s control rate (the '
                                   'profile\'s): the period the adapter yields around '
                                   '(0: unknown, no yielding).')
    adapt: AdaptSection = Field(default_factory=AdaptSection)
    health: HealthParams = Field(default_factory=HealthParams)
