# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The safety gate's specification: the config's ``safety`` section plus what the robot says.

One typed model is the safety node's parameters, the real-time process's
start-up argument (as plain data) and the input of ``build.build_gate`` in
every loop without ROS. The ``safety`` section is the user's configuration
(with ``joint_limits_file`` resolved to the file in force); the other fields
come from the task or the robot profile. No ROS import.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
from unilab_core.config import _Section, SafetySection


class SafetySpec(_Section):
    """Everything the gate, its loop and the safety node are built from."""

    joint_names: list[str] = Field(
        default_factory=list, min_length=1,
        description='Commanded joints, in the action\'s column order.')
    interface: Literal['position', 'velocity', 'effort'] = Field(
        'position', description='Command interface of the joints (ros2_control naming).')
    dt: float = Field(0.02, gt=0.0, description='Control period [s] (rate limits per step).')
    num_envs: int = Field(1, ge=1, description='Rows per command batch (envs or robots).')
    lockstep: bool = Field(
        False, description='Simulation in lock-step: the consumer steps on `command` outputs '
        'only, so watchdog fallbacks are published but never applied.')
    run_dir: str = Field('', description='Write safety_stats.json here ("" = do not).')
    safety: SafetySection = Field(default_factory=SafetySection)

    @field_validator('joint_names')
    @classmethod
    def _names(cls, v):
        if any(not n for n in v) or len(set(v)) != len(v):
            raise ValueError(f'joint names must be distinct and non-empty, got {v}')
        return v
