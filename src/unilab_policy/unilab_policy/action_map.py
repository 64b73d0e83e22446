# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
What the policy network's output means: the one mapping from actions to commands.

``model.action_mode`` (docs/actions.md):

- ``absolute``: the action is the command (joint targets in rad, efforts).
- ``relative``: the action is a joint position target around the measured joint
  position, ``command = q + action_scale * action``; ``q`` is read from the
  observation's leading joint positions (``holds_joint_positions`` tasks). The
  network explores in units the robot can follow (one unit of action is a few
  slew steps), so the safety gate clamps only what is really too fast. This is
  Isaac Lab's relative joint-position action.
- ``offset``: joint position targets around a fixed pose, ``command =
  action_offset + action_scale * action`` (legged_gym's default joint positions
  plus its action scale; for legged robots, whose stance is the natural origin).

``action_clip`` (relative / offset; 0 = none) clips every action to ``+-action_clip``
before the map, as rsl_rl's environments clip actions: a relative command then leads
the measured joint by at most ``action_clip * action_scale``. PPO's log-probabilities
stay those of the unclipped sample; the command is what the robot gets.

PPO learns in action space (the rollout chunks carry actions and their
log-probabilities); everything downstream of the policy (the gate, the
drives, the action topic, exported models) sees commands in joint units.
``ActionMap.forward`` is the torch form an exported model carries;
``command``/``action`` are the numpy forms the actor and the offline dataset use.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn
from unilab_core.config import ConfigError, ModelSection
from unilab_core.graph import holds_joint_positions

MODES = ('absolute', 'relative', 'offset')


def resolve_action_map(model: ModelSection, task) -> ModelSection:
    """
    Return ``model`` with ``action_mode`` and ``action_scale`` made concrete for ``task``.

    ``task`` is a TaskInfo or a simulator task. Raises ConfigError naming the key
    for a relative map the task cannot take or a scale of the wrong length.
    """
    mode = task.action_mode if model.action_mode == 'task' else model.action_mode
    if mode == 'absolute':
        return model.model_copy(update={'action_mode': 'absolute', 'action_scale': [],
                                        'action_offset': [], 'action_clip': 0.0})
    if not holds_joint_positions(task):
        raise ConfigError(
            f'model.action_mode: {mode} needs position-controlled joints observed one per '
            f'command; task {task.name} has the {task.command_interface} interface '
            f'({task.action_dim} commands)')
    scale = _per_joint('action_scale', model.action_scale, task.action_scale, task,
                       'rad per unit action')
    offset = _per_joint('action_offset', model.action_offset, task.action_offset, task,
                        'the pose in rad') if mode == 'offset' else []
    clip = float(getattr(task, 'action_clip', 0.0)) if model.action_clip < 0 \
        else float(model.action_clip)
    return model.model_copy(update={'action_mode': mode, 'action_scale': scale,
                                    'action_offset': offset, 'action_clip': clip})


def _per_joint(key: str, configured, default, task, unit: str) -> list[float]:
    values = list(configured) or list(default)
    if not values:
        raise ConfigError(f'model.{key}: task {task.name} has no default; give one value or '
                          f'{task.action_dim} ({unit})')
    if len(values) == 1:
        values = values * task.action_dim
    if len(values) != task.action_dim:
        raise ConfigError(f'model.{key}: {len(values)} values, task {task.name} has '
                          f'{task.action_dim} joints')
    return [float(x) for x in values]


class ActionMap(nn.Module):
    """``command = offset(obs) + scale * clip(action)`` for one resolved ``model`` section."""

    def __init__(self, mode: str, scale, act_dim: int, offset=(), clip: float = 0.0):
        """Build the map; ``mode`` one of MODES (resolve 'task' first); ``clip`` 0: none."""
        super().__init__()
        if mode == 'task':
            raise ValueError("model.action_mode 'task' is not resolved for a task: build the "
                             'policy parameters with unilab_bringup.graphs.policy_params')
        if mode not in MODES:
            raise ValueError(f'action_mode must be one of {MODES}, got {mode!r}')
        self.mode = mode
        self.act_dim = int(act_dim)
        scale = np.ones(self.act_dim) if mode == 'absolute' else np.asarray(scale, float)
        if scale.shape != (self.act_dim,) or not np.all(np.isfinite(scale) & (scale > 0)):
            raise ValueError(f'action_scale must be {self.act_dim} finite values > 0, '
                             f'got {list(np.atleast_1d(scale))}')
        pose = np.zeros(self.act_dim) if mode != 'offset' else np.asarray(offset, float)
        if pose.shape != (self.act_dim,) or not np.all(np.isfinite(pose)):
            raise ValueError(f'action_offset must be {self.act_dim} finite values, '
                             f'got {list(np.atleast_1d(pose))}')
        clip = float(clip)
        if not (np.isfinite(clip) and clip >= 0.0) or (clip and mode == 'absolute'):
            raise ValueError(f'action_clip must be >= 0 (0: none; absolute: 0), got {clip}')
        self.clip = clip
        self.register_buffer('scale', torch.as_tensor(scale, dtype=torch.float32))
        self.register_buffer('offset', torch.as_tensor(pose, dtype=torch.float32))
        self._scale32 = scale.astype(np.float32)
        self._offset32 = pose.astype(np.float32)

    @classmethod
    def of(cls, model: ModelSection, act_dim: int) -> 'ActionMap':
        """Return the map a resolved ``model`` section describes."""
        return cls(model.action_mode, model.action_scale, act_dim, model.action_offset,
                   max(0.0, model.action_clip))

    @property
    def identity(self) -> bool:
        """Return True when commands are the actions themselves."""
        return self.mode == 'absolute'

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Return commands ``[B, act]`` for raw observations and actions (torch)."""
        if self.identity:
            return action
        if self.clip:
            action = action.clamp(-self.clip, self.clip)
        if self.mode == 'offset':
            return self.offset + self.scale * action
        return obs[:, :self.act_dim] + self.scale * action

    def command(self, obs: np.ndarray, action: np.ndarray) -> np.ndarray:
        """Return float32 commands for raw observations ``[N, obs]`` and actions ``[N, act]``."""
        if self.identity:
            return action
        action = np.asarray(action, np.float32)
        if self.clip:
            action = np.clip(action, -self.clip, self.clip)
        return self._origin(obs) + self._scale32 * action

    def action(self, obs: np.ndarray, command: np.ndarray) -> np.ndarray:
        """Return the actions that give ``command`` at ``obs`` (the inverse of ``command``)."""
        if self.identity:
            return command
        return (np.asarray(command, np.float32) - self._origin(obs)) / self._scale32

    def _origin(self, obs: np.ndarray) -> np.ndarray:
        if self.mode == 'offset':
            return self._offset32
        return np.asarray(obs[:, :self.act_dim], np.float32)
