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

The history holds commands as the actuators take them: clipped to the
actuator range (a Gaussian policy's samples are not), and at an episode start
filled with the command the drives hold then. For position-controlled joints
that is (close to) the measured joint position; for torque interfaces zero.
With zeros instead, a policy trained under delay is told the wrong in-flight
commands during exactly the steps that earn most of a reach task's return.
Pure numpy, no ROS: the policy node and the direct training loop both use it.
"""

from __future__ import annotations

import numpy as np


def policy_input_dim(obs_dim: int, act_dim: int, action_history: int) -> int:
    """Return the network's input width: the observation plus ``action_history`` actions."""
    return int(obs_dim) + int(action_history) * int(act_dim)


class ActionHistory:
    """The last ``length`` commands per env (clipped to ``low``/``high`` when given)."""

    def __init__(self, num_envs: int, act_dim: int, length: int, low=None, high=None):
        if length < 0:
            raise ValueError(f'action history length must be >= 0, got {length}')
        self.length = int(length)
        self.buf = np.zeros((int(num_envs), self.length, int(act_dim)), np.float32)
        self.low = None if low is None or not len(low) else np.asarray(low, np.float32)
        self.high = None if high is None or not len(high) else np.asarray(high, np.float32)
        for name, b in (('low', self.low), ('high', self.high)):
            if b is not None and b.shape != (int(act_dim),):
                raise ValueError(f'action history {name} has {b.size} values, act_dim is '
                                 f'{act_dim}')

    def _clip(self, a: np.ndarray) -> np.ndarray:
        if self.low is not None or self.high is not None:
            a = np.clip(a, self.low, self.high)
        return a

    def reset(self, envs, fill=None) -> None:
        """
        Start the history of ``envs`` (indices or mask) over: a new episode.

        ``fill`` (``[len(envs), act]``) is the command the drives hold at the
        start, e.g. the measured joint positions of position-controlled joints;
        None fills zeros.
        """
        if not self.length:
            return
        if fill is None:
            self.buf[envs] = 0.0
        else:
            fill = self._clip(np.asarray(fill, np.float32))
            self.buf[envs] = fill[:, None, :]

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
        self.buf[:, 0] = self._clip(action)
