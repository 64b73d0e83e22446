# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The policy's own recent actions, appended to its observation (``model.action_history``).

A robot's commands reach the joints some control steps late (bus queueing,
drive firmware). A policy that sees only the joint state cannot tell which
of its commands are still in flight, so a delay it was not trained for makes
it overshoot. Appending the last ``H`` actions it sent (newest first) makes
the in-flight commands part of the state, as legged_gym's ``last_actions``
term does for one step. The policy side owns the history: on a robot the
policy node knows what it sent, whatever drivers replace the simulator.
Pure numpy, no ROS: the policy node and the direct training loop both use it.
"""

from __future__ import annotations

import numpy as np


def policy_input_dim(obs_dim: int, act_dim: int, action_history: int) -> int:
    """Return the network's input width: the observation plus ``action_history`` actions."""
    return int(obs_dim) + int(action_history) * int(act_dim)


class ActionHistory:
    """The last ``length`` actions per env; zeros at an episode start."""

    def __init__(self, num_envs: int, act_dim: int, length: int):
        if length < 0:
            raise ValueError(f'action history length must be >= 0, got {length}')
        self.length = int(length)
        self.buf = np.zeros((int(num_envs), self.length, int(act_dim)), np.float32)

    def reset(self, envs) -> None:
        """Forget the actions of ``envs`` (indices or mask): their episodes start over."""
        self.buf[envs] = 0.0

    def observe(self, obs: np.ndarray) -> np.ndarray:
        """Return ``[obs, a_{t-1}, ..., a_{t-H}]`` as float32 ``[N, obs + H * act]``."""
        obs = np.asarray(obs, np.float32)
        if obs.shape[0] != self.buf.shape[0]:
            raise ValueError(f'observation batch {obs.shape[0]} != {self.buf.shape[0]} envs')
        if not self.length:
            return obs
        return np.concatenate([obs, self.buf.reshape(self.buf.shape[0], -1)], axis=1)

    def push(self, action: np.ndarray) -> None:
        """Record the actions just sent (``[N, act]``), dropping the oldest."""
        if not self.length:
            return
        action = np.asarray(action, np.float32)
        if action.shape != (self.buf.shape[0], self.buf.shape[2]):
            raise ValueError(f'action shape {action.shape}, expected '
                             f'{(self.buf.shape[0], self.buf.shape[2])}')
        self.buf[:, 1:] = self.buf[:, :-1]  # numpy copies overlapping slices correctly
        self.buf[:, 0] = action
