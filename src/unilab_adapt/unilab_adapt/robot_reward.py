# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A robot's reward and success, recomputed from what it recorded: one rule per task.

A robot has no reward signal. Each rule here recomputes, from a rollout chunk's
observations and actions, the reward terms the policy was trained with that the robot's
own records give, and says when an episode succeeded:

- ``arm6_reach`` (``REACH``): the reach task's terms (``unilab_bridge.tasks.reach_reward``)
  from the tool and goal columns; an episode (one goal) succeeds when the tool is within
  ``SUCCESS_M`` of the goal at its end, the simulation test's rule.
- ``go2_walk`` (``WalkReward``): ``go2_walk.measurable_terms`` (velocity and yaw tracking,
  trunk motion, orientation, height, joint acceleration, action rate, standing still),
  scaled and clipped as in training; the terms that need the motors' torques, contacts
  or the joint limits' soft range are left out. The trunk's velocity and height come from
  the observation's critic columns, where a state estimator must put them (on the robot
  double, its ground truth; ``unilab_adapt.legged_robot``); perception on the ROS path
  sends them only from a configured state estimate (``task_inputs.estimate_topic``). An
  episode (a walk segment: one command held) succeeds without a fall: not ended
  ``terminated``, and the trunk never tilted past the fall stop's bound.
"""

from __future__ import annotations

import numpy as np
from unilab_bridge.tasks.go2_walk import (EXTRAS_NAMES, measurable_terms, MIN_HEIGHT,
                                          PRIVILEGED_NAMES, REWARD_SCALES as WALK_SCALES)
from unilab_bridge.tasks.reach_reward import combine, reach_terms, REWARD_SCALES
from unilab_bringup.evaluation import SUCCESS_M
from unilab_core.robot_profile import LeggedSection


def reach_columns(act_dim: int) -> dict[str, slice]:
    """
    Return the reach task's observation columns (perception's joint-state layout).

    ``[q (n), qd (n), tool xyz, goal xyz, goal - tool, action history...]`` with
    ``n`` the joint count: the layout of ``ReachInputs.extras`` after the joints.
    """
    n = int(act_dim)
    return {'q': slice(0, n), 'qd': slice(n, 2 * n), 'tool': slice(2 * n, 2 * n + 3),
            'goal': slice(2 * n + 3, 2 * n + 6)}


def robot_rewards(obs: np.ndarray, next_obs: np.ndarray, actions: np.ndarray,
                  prev_actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """
    Return the reach task's ``(reward, distance)`` of steps ``[T]`` from ``[T, D]`` observations.

    The step's outcome is read from the *next* observation (tool position,
    joint velocities) against the step's own goal.
    """
    c = reach_columns(actions.shape[1])
    terms = reach_terms(next_obs[:, c['tool']].astype(np.float64),
                        obs[:, c['goal']].astype(np.float64), actions.astype(np.float64),
                        prev_actions.astype(np.float64), next_obs[:, c['qd']].astype(np.float64))
    return combine(terms, REWARD_SCALES), terms['distance'].astype(np.float32)


class ReachReward:
    """The reach task's robot reward and success (module doc)."""

    task = 'arm6_reach'

    def rewards(self, obs, next_obs, actions, prev_actions):
        """Return ``(reward [T], tool-to-goal distance [T])`` (``robot_rewards``)."""
        return robot_rewards(obs, next_obs, actions, prev_actions)

    def success(self, distance: np.ndarray, fell: np.ndarray, start: int, end: int) -> bool:
        """Return whether the episode ``[start, end)`` ended with the tool at its goal."""
        return bool(distance[end - 1] < SUCCESS_M)


class WalkReward:
    """go2_walk's robot reward and success (module doc)."""

    task = 'go2_walk'
    #: Roll or pitch beyond this (rad) is a fall: the legged supervisor's default bound
    #: (a robot's own comes from its profile, ``legged.max_tilt_rad``).
    MAX_TILT_RAD = LeggedSection.model_fields['max_tilt_rad'].default

    def __init__(self, control_dt: float = 0.02, max_tilt_rad: float = MAX_TILT_RAD):
        self.dt = float(control_dt)
        self.max_tilt = float(max_tilt_rad)

    @staticmethod
    def columns(act_dim: int) -> dict[str, slice]:
        """Return the columns of ``[q, qd, extras...]``, the extras by go2_walk's names."""
        n = int(act_dim)
        names = EXTRAS_NAMES + PRIVILEGED_NAMES

        def at(first: str, width: int) -> slice:
            i = 2 * n + names.index(first)
            return slice(i, i + width)
        return {'q': slice(0, n), 'qd': slice(n, 2 * n), 'gyro': at('imu_gyro_x', 3),
                'gravity': at('projected_gravity_x', 3), 'command': at('command_vx', 3),
                'velocity': at('base_lin_vel_x', 3), 'height': at('base_height', 1)}

    def terms(self, obs, next_obs, actions, prev_actions) -> dict[str, np.ndarray]:
        """Return the scaled reward terms ``[T]`` (the training's scale times the period)."""
        c = self.columns(actions.shape[1])
        after = next_obs.astype(np.float64)
        terms = measurable_terms(
            obs[:, c['command']].astype(np.float64), after[:, c['velocity']],
            after[:, c['gyro']], after[:, c['gravity']], after[:, c['height']][:, 0],
            actions.astype(np.float64), prev_actions.astype(np.float64), after[:, c['q']],
            after[:, c['qd']], obs[:, c['qd']].astype(np.float64), self.dt)
        return {k: WALK_SCALES[k] * v * self.dt for k, v in terms.items()}

    def rewards(self, obs, next_obs, actions, prev_actions):
        """
        Return ``(reward [T], down [T])`` after each step.

        ``down`` is how far the trunk is from walking: its tilt (rad, the larger of roll
        and pitch, as the fall stop reads them) where its height (the estimate) is at
        least ``go2_walk.MIN_HEIGHT``, else pi (down: a fall, or damping after a fall stop).
        """
        c = self.columns(actions.shape[1])
        reward = sum(self.terms(obs, next_obs, actions, prev_actions).values())
        g = next_obs[:, c['gravity']].astype(np.float64)
        roll = np.abs(np.arctan2(g[:, 1], -g[:, 2]))
        pitch = np.abs(np.arctan2(-g[:, 0], np.hypot(g[:, 1], g[:, 2])))
        low = next_obs[:, c['height']][:, 0] < MIN_HEIGHT
        down = np.where(low, np.pi, np.maximum(roll, pitch))
        # Clipped at 0 as in training (go2_walk's only_positive_rewards).
        return np.clip(reward, 0.0, None).astype(np.float32), down.astype(np.float32)

    def success(self, distance: np.ndarray, fell: np.ndarray, start: int, end: int) -> bool:
        """
        Return whether the walk segment ``[start, end)`` went without a fall.

        A fall is the segment ending terminated (the robot double's fall, a fall stop) or,
        on a robot whose recording marks none, the trunk tilted past ``max_tilt`` or down
        on the floor (``rewards``' ``down``) in it.
        """
        return not (bool(fell[end - 1]) or float(np.max(distance[start:end])) > self.max_tilt)


REACH = ReachReward()


def robot_reward(task: str, control_dt: float | None = None, max_tilt_rad: float | None = None):
    """
    Return the robot reward rule of ``task`` (ValueError naming the supported ones).

    ``max_tilt_rad``: a walking robot's fall-stop bound (its profile's); None: the default.
    """
    if task == REACH.task:
        return REACH
    if task == WalkReward.task:
        given = {'control_dt': control_dt, 'max_tilt_rad': max_tilt_rad}
        return WalkReward(**{k: v for k, v in given.items() if v is not None})
    raise ValueError(f'task `{task}` has no reward computable on a robot (supported: '
                     f'{REACH.task}, {WalkReward.task})')
