# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Adaptation's config section (``adapt:``) and the adapter node's parameters (no ROS)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from unilab_core.config import Section
from unilab_core.health import HealthParams

#: The recorder's folder in an adaptation run directory: rotating bags ``00000``, ...
RECORDINGS = 'recordings'


class AdaptSection(Section):
    """
    Online adaptation on a robot (``unilab adapt``): fine-tune rounds and the safety fuse.

    See docs/adapt.md. A round starts every ``period_s`` once the running
    version has ``min_episodes`` complete robot episodes.
    """

    period_s: float = Field(60.0, gt=0.0, description='Seconds between adaptation rounds.')
    min_episodes: int = Field(8, gt=0, description='Complete robot episodes of the running '
                              'version before a round scores it and fine-tunes.')
    window_steps: int = Field(20000, gt=0, description='Most recent robot steps kept for '
                              'fine-tuning (older ones are dropped, counted).')
    layers: Literal['last', 'all'] = Field('last', description='Fine-tune the last '
                                           '`last_layers` linear layers of actor and critic, '
                                           'or all weights.')
    last_layers: int = Field(2, gt=0, description='Linear layers counted from the output '
                             '(layers: last).')
    method: Literal['ppo', 'iql'] = Field(
        'ppo', description='Fine-tuning method: ppo (PPO on the recorded on-policy steps with '
        'their log-probs) or iql (the offline learner of `train --offline`, IQL, on the '
        'same steps as a fixed dataset; its twin Q starts fresh each round).')
    lr: float = Field(3e-4, gt=0.0, lt=1.0, description='Fine-tuning learning rate (fixed).')
    epochs: int = Field(4, gt=0, description='Passes over the window per round (PPO epochs; '
                        'IQL: epochs x steps / batch_size updates).')
    batch_size: int = Field(32, gt=0, description='Minibatch size (transitions).')
    critic_epochs: int = Field(8, ge=0, description='PPO only: passes fitting the critic\'s '
                               'trainable layers to the robot\'s returns before the policy '
                               'update (advantages recomputed after each pass; 0 = off).')
    sim_envs: int = Field(8, gt=0, description='Simulated envs of the simulation test.')
    sim_episodes_per_env: int = Field(2, gt=0, description='Episodes per env of the '
                                      'simulation test.')
    sim_seed: int = Field(1234, ge=0, description='Fixed seed of the simulation test.')
    sim_variant: str = Field('nominal', description='Robot variant the simulation test runs '
                             '(unilab_bridge.variants: nominal, real, ...).')
    sim_tolerance: float = Field(0.05, ge=0.0, le=1.0, description='A candidate whose '
                                 'simulation success is below the running version\'s by more '
                                 'is never deployed.')
    drop_tolerance: float = Field(0.05, ge=0.0, le=1.0, description='Robot success below the '
                                  'last good version\'s by more counts as a drop.')
    consecutive_drops: int = Field(3, gt=0, description='Drops in a row that roll back to '
                                   'the last good version.')
    drop_z: float = Field(1.0, ge=0.0, description='A drop must also exceed this many '
                          'standard errors of the two success fractions (0: bare threshold).')
    hold_after_rollback: bool = Field(True, description='After a rollback deploy no new '
                                      'candidate until an operator resumes (adapter\'s '
                                      '~/resume service).')
    torch_threads: int = Field(1, gt=0, description='CPU threads of the fine-tuning.')
    nice: int = Field(10, ge=0, le=19, description='Scheduling niceness of the adapter '
                      'process (the control loop keeps the CPU).')
    sched_idle: bool = Field(True, description='Run the adapter and the recorder under '
                             'SCHED_IDLE (Linux): they get a core only when no other process '
                             'wants it, so they do not delay a control step (the adapter falls '
                             'back to `nice` where refused).')
    yield_to_control: bool = Field(True, description='The adapter pauses its work around each '
                                   'control step (phase from the rollout chunks\' stamps; off '
                                   'where the quiet window exceeds 3/4 of the control period).')
    yield_before_ms: float = Field(4.0, ge=0.0, description='Quiet window: from this long '
                                   'before a control step\'s command is due out ...')
    yield_after_ms: float = Field(3.0, ge=0.0, description='... to this long after it (a slow '
                                  'step included).')
    record_rotate_mb: float = Field(16.0, gt=0.0, description='Recorder: new bag after this '
                                    'many MB.')
    record_keep_mb: float = Field(512.0, gt=0.0, description='Recorder: disk budget of the '
                                  'closed bags (oldest deleted, counted).')
    sabotage: Literal['none', 'sign_flip', 'huge_lr'] = Field(
        'none', description='Make fine-tuning harm the policy (bench and tests of the fuse '
        'only).')


class AdapterNodeParams(Section):
    """Parameters of the adapter node (``unilab_adapt.adapter_node``) in the adapt graph."""

    run_dir: str = Field('', min_length=1, description='The deployment\'s run directory '
                         '(its config.yaml; the adapter writes into <run_dir>/adapt).')
    model: str = Field('', min_length=1, description='The deployed policy: a run directory '
                       'or checkpoint (fine-tuning needs the network, not an export).')
    control_rate_hz: float = Field(0.0, ge=0.0, description='The robot\'s control rate (the '
                                   'profile\'s): the period the adapter yields around '
                                   '(0: unknown, no yielding).')
    max_tilt_rad: float = Field(0.0, ge=0.0, lt=1.5708, description='A walking robot\'s '
                                'fall-stop bound (its profile\'s legged.max_tilt_rad): a walk '
                                'segment whose trunk tilts past it counts as a fall (0: the '
                                'supervisor\'s default).')
    adapt: AdaptSection = Field(default_factory=AdaptSection)
    health: HealthParams = Field(default_factory=HealthParams)
