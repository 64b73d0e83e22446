# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge node's parameters: one typed model, built from the run config (no ROS)."""

from __future__ import annotations

from pydantic import Field
from unilab_core.config import _Section, BridgeSection, DisturbancesSection, RunSection


class BridgeNodeParams(_Section):
    """Parameters of the bridge node (``unilab_bridge.bridge_node``)."""

    run: RunSection = Field(default_factory=RunSection)
    num_envs: int = Field(64, ge=1, le=65536, description='Simulated envs stepped together.')
    run_dir: str = Field('', description='Append finished episodes\' disturbance parameters '
                         'to <run_dir>/disturbances.jsonl ("" = do not).')
    camera_required: bool = Field(
        False, description='Images are part of the observation: no rendering is a start-up '
        'error instead of a warning.')
    bridge: BridgeSection = Field(default_factory=BridgeSection)
    disturbances: DisturbancesSection = Field(default_factory=DisturbancesSection)
