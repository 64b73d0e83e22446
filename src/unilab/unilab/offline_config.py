# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Offline training's config section (``offline:``), registered as a feature section."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from unilab_core.config import Section


class OfflineSection(Section):
    """
    Offline training from bags (``unilab train --offline BAG...``): IQL and a BC baseline.

    Networks use the ``model`` section (so ``unilab export`` works on the result).
    """

    gradient_steps: int = Field(20000, gt=0, description='Gradient steps of IQL and of BC.')
    batch_size: int = Field(256, gt=0, description='Minibatch size (transitions).')
    lr: float = Field(3e-4, gt=0.0, lt=1.0, description='Adam learning rate (all networks).')
    expectile: float = Field(0.7, gt=0.0, lt=1.0, description='IQL value expectile tau.')
    beta: float = Field(3.0, gt=0.0, description='IQL advantage temperature (AWR weights).')
    target_tau: float = Field(0.005, gt=0.0, le=1.0, description='Target-Q Polyak rate.')
    eval_envs: int = Field(64, gt=0, description='Simulated envs for evaluation.')
    eval_episodes: int = Field(128, gt=0, description='Evaluation episodes per policy.')
    eval_every: int = Field(5000, gt=0, description='Evaluate every K gradient steps.')
    dataset_source: Literal['rollout', 'sensors'] = Field(
        'rollout', description='Transitions from /unilab/rollout chunks, or from '
        'joint states + /unilab/task_state (through perception) + /unilab/action.')
