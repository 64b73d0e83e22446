# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The policy and trainer nodes' parameters: one typed model each, built from the run config.

The graph descriptions (``unilab_bringup.graphs``) construct these models from the
resolved configuration and the task or robot profile; the nodes declare their
ROS parameters from the same models (``unilab_core.ros.params.declare_params``).
Sections of the run configuration appear under their own names (``run``,
``rollout``, ``model``, ...), so a node parameter has the config key's name.
No ROS import: the models are plain pydantic.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from unilab_core.config import (AdvantageSection, GpuSection, LoggingSection, ModelSection,
                                NormalizationSection, PolicyUpdateSection, RolloutSection,
                                RunSection, Section)
from unilab_core.health import HealthParams


class PolicyNetParams(Section):
    """What builds the network: shapes, device, seed and the model sections."""

    obs_dim: int = Field(0, gt=0, description='Observation width the perception node sends.')
    act_dim: int = Field(0, gt=0, description='Action width (joints commanded).')
    run: RunSection = Field(default_factory=RunSection)
    model: ModelSection = Field(default_factory=ModelSection)
    normalization: NormalizationSection = Field(default_factory=NormalizationSection)
    gpu: GpuSection = Field(default_factory=GpuSection)

    @model_validator(mode='after')
    def _action_mode(self):
        # A node knows no task: the graph resolves model.action_mode 'task' for it
        # (action_map.resolve_action_map); parameters without one act in absolute commands,
        # as runs from before the action map did.
        if self.model.action_mode == 'task':
            self.model = self.model.model_copy(update={'action_mode': 'absolute',
                                                       'action_scale': [],
                                                       'action_offset': []})
        if self.model.action_clip < 0:  # likewise unresolved (runs from before the clip)
            self.model = self.model.model_copy(update={'action_clip': 0.0})
        return self


class PolicyNodeParams(PolicyNetParams):
    """Parameters of the policy node (``unilab_policy.policy_node``)."""

    mode: Literal['on_policy', 'deploy', 'adapt'] = Field(
        'on_policy', description='on_policy: act with weight version v for exactly '
        'rollout.rollout_length steps, send rollout chunks, wait for v + 1 (training); '
        'deploy: deterministic actions with whatever weights are loaded, never wait; '
        'adapt: sample and send chunks like on_policy but never wait (online adaptation).')
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    action_low: list[float] = Field(
        default_factory=list, description='Actuator command range, lower end per joint '
        '(clips the action history; [] = unbounded).')
    action_high: list[float] = Field(
        default_factory=list, description='Actuator command range, upper end per joint.')
    action_history_fill: Literal['zero', 'joint_position'] = Field(
        'zero', description='Action history at an episode start: zeros, or the measured '
        'joint positions that lead the observation (position-controlled joints).')
    runtime: Literal['torch', 'onnx', 'auto'] = Field(
        'torch', description='How the network runs: torch; onnx (deploy mode: exported in '
        'memory from the loaded weights and run through onnxruntime); auto = onnx for a '
        'deployed policy on a CPU, else torch. The deploy graph sets run.deploy_runtime.')
    weights_file: str = Field(
        '', description='deploy: a run directory, a checkpoint (.pt) or an exported ONNX '
        'model to load at start ("" = wait for the weights topic).')
    health: HealthParams = Field(default_factory=HealthParams)

    @model_validator(mode='after')
    def _ranges(self):
        for name in ('action_low', 'action_high'):
            v = getattr(self, name)
            if v and len(v) != self.act_dim:
                raise ValueError(f'{name} has {len(v)} values, act_dim is {self.act_dim}')
        if self.runtime == 'onnx' and self.mode != 'deploy':
            raise ValueError(f'runtime onnx needs mode deploy (mode {self.mode} samples '
                             'actions in torch)')
        if self.rollout.rollout_length % min(self.rollout.chunk_length,
                                             self.rollout.rollout_length):
            raise ValueError('rollout.rollout_length must be a multiple of '
                             'rollout.chunk_length')
        return self


class TrainerNodeParams(PolicyNetParams):
    """Parameters of the trainer node (``unilab_policy.trainer_node``)."""

    run_dir: str = Field('runs/latest', min_length=1,
                         description='Run directory (metrics, checkpoints, summary).')
    resume: str = Field('', description='Run directory to resume from ("" = a new run).')
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    advantage: AdvantageSection = Field(default_factory=AdvantageSection)
    policy_update: PolicyUpdateSection = Field(default_factory=PolicyUpdateSection)
    logging: LoggingSection = Field(default_factory=LoggingSection)
    envelope_joints: int = Field(
        0, ge=0, description='Joint positions leading the observation whose range the '
        'checkpoints record (the trained envelope; 0 = none).')
    workspace: list[float] = Field(
        default_factory=list, description='The task\'s workspace [xmin, ymin, zmin, xmax, '
        'ymax, zmax] (m), carried by the checkpoints ([] = none).')
    workspace_frame: str = Field('', description='Frame of the workspace box.')
    health: HealthParams = Field(default_factory=HealthParams)
