# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A task's observation extras on a robot, from standard messages instead of the simulator.

In simulation the bridge publishes each task's extras (``task_state``); a
robot has no such topic. These classes compute the same columns, in the same
order and units, from what a robot and its operator provide:

- ``ReachInputs`` (``arm6_reach``: ``[tool (3), goal (3), goal - tool (3)]``):
  the goal from ``geometry_msgs/PoseStamped`` (position, in the robot's base
  frame), the tool position by forward kinematics of the measured joints on
  the robot's model (``unilab_core.kinematics``);
- ``WalkInputs`` (``quad_walk``: ``[v_body (3), w_body (3), gravity_body (3),
  command (2), base height (1)]``): body-frame velocity and height from
  ``nav_msgs/Odometry`` (twist in the child frame, pose z), angular velocity
  and orientation from ``sensor_msgs/Imu``, the command (forward speed, yaw
  rate) from ``geometry_msgs/Twist``;
- ``LeggedInputs`` (``go2_walk``: ``[gyro (3), gravity_body (3), command v_x, v_y,
  yaw rate (3), critic-only columns]``): what a legged robot's IMU and its operator
  give, no odometry; the critic-only columns (simulator truth the actor's network
  never reads, ``model.critic_only``) are zero on a robot.

Until every input has arrived there is no observation (``extras`` returns
None and says what is missing): the policy does not act, and the safety gate's
watchdog holds the robot. Values are checked finite in float32, the precision
the policy uses. No ROS import: the perception node passes plain numbers.
"""

from __future__ import annotations

import numpy as np
from unilab_core.kinematics import SiteKinematics


class MissingInput(ValueError):
    """A task input has not arrived yet (or was refused); the message names it."""


#: Why a goal is refused (each counted: ``goals_refused_<kind>``).
GOAL_REFUSALS = ('non_finite', 'frame', 'workspace')


class GoalRefused(ValueError):
    """A goal the policy must not chase; ``kind`` (non_finite, frame, workspace) is counted."""

    def __init__(self, kind: str, text: str):
        super().__init__(text)
        self.kind = kind


def _finite32(name: str, values) -> np.ndarray:
    v = np.asarray(values, np.float64).astype(np.float32)
    if not np.all(np.isfinite(v)):
        raise ValueError(f'{name} is not finite in float32: {np.asarray(values).tolist()}')
    return v


def _rotate_inverse(q_xyzw: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate ``v`` by the inverse of the unit quaternion ``q`` (x, y, z, w)."""
    x, y, z, w = q_xyzw
    u = np.array([x, y, z])
    # v' = v - 2 w (u x v) + 2 u x (u x v)   (rotation by the conjugate quaternion)
    t = 2.0 * np.cross(u, v)
    return v - w * t + np.cross(u, t)


class ReachInputs:
    """
    Tool position by forward kinematics, goal from the operator: ``[tool, goal, goal-tool]``.

    A goal is refused (``GoalRefused``; the last valid goal stays, and before the
    first there is no observation, so the robot holds) when it is not finite in
    float32, when its frame is not ``frame`` (the robot's base frame; an empty
    frame_id is refused too: a goal must say where it is, and tf2 treats an
    empty frame as an error), or when it lies outside ``workspace``
    ``(xmin, ymin, zmin, xmax, ymax, zmax)``: a policy sent beyond the goals it
    was trained on extrapolates (a goal at (5, 5, 5) wound a UR5e's joints to
    +-2 pi). No frame transform is attempted: no tf2 here.
    """

    width = 9

    def __init__(self, model_file: str, joint_names, tool_site: str, frame: str = 'base_link',
                 workspace=()):
        self.fk = SiteKinematics(model_file, joint_names, tool_site)
        if workspace and len(workspace) != 6:
            raise ValueError(f'workspace must be [xmin, ymin, zmin, xmax, ymax, zmax], got '
                             f'{list(workspace)}')
        self.frame = frame
        # In the goal's precision (float32, as the policy sees it): a goal on the box's
        # face is inside.
        self.workspace = (np.asarray(workspace[:3], np.float32).astype(np.float64),
                          np.asarray(workspace[3:], np.float32).astype(np.float64)) \
            if workspace else None
        self.goal: np.ndarray | None = None
        self.episode = 0  # a new goal is a new episode (for rollouts recorded on a robot)

    def set_goal(self, xyz, frame_id: str | None = None) -> None:
        """
        Take a new goal position (m) in frame ``frame_id``; raise GoalRefused if refused.

        ``frame_id`` None skips the frame check (a caller without a header).
        """
        try:
            goal = _finite32('goal position', xyz).astype(np.float64)
        except ValueError as exc:
            raise GoalRefused('non_finite', str(exc)) from None
        if frame_id is not None and frame_id != self.frame:
            raise GoalRefused('frame', f'goal frame_id `{frame_id}` is not the robot\'s base '
                              f'frame `{self.frame}` (goals are not transformed)')
        if self.workspace is not None:
            lo, hi = self.workspace
            if not (np.all(goal >= lo) and np.all(goal <= hi)):
                raise GoalRefused('workspace', f'goal {goal.round(3).tolist()} lies outside '
                                  f'the trained workspace {lo.round(3).tolist()} .. '
                                  f'{hi.round(3).tolist()} (frame {self.frame})')
        if self.goal is None or not np.array_equal(goal, self.goal):
            self.episode += 1
        self.goal = goal

    def extras(self, q: np.ndarray) -> np.ndarray:
        """Return ``[1, 9]`` float32 extras for joint positions ``q`` ``[1, J]``."""
        if self.goal is None:
            raise MissingInput('no goal yet')
        tool = self.fk.positions(q)[0]
        return _finite32('reach extras', np.concatenate(
            [tool, self.goal, self.goal - tool]))[None, :]


class WalkInputs:
    """Body velocities, gravity, command and height: ``quad_walk``'s extras on a robot."""

    width = 12

    def __init__(self):
        self.imu: tuple[np.ndarray, np.ndarray] | None = None   # (quat xyzw, gyro)
        self.odom: tuple[np.ndarray, float] | None = None       # (v_body, z)
        self.command = np.zeros(2)                             # stand still until told
        self.episode = 0

    def set_imu(self, quat_xyzw, gyro) -> None:
        """Take an IMU sample (orientation x, y, z, w and angular velocity, body frame)."""
        self.imu = (_finite32('imu orientation', quat_xyzw).astype(np.float64),
                    _finite32('imu angular velocity', gyro).astype(np.float64))

    def set_odometry(self, v_body, z) -> None:
        """Take the base's body-frame linear velocity and height."""
        self.odom = (_finite32('odometry velocity', v_body).astype(np.float64),
                     float(_finite32('odometry height', [z])[0]))

    def set_command(self, forward, yaw_rate) -> None:
        """Take the commanded forward speed (m/s) and yaw rate (rad/s)."""
        self.command = _finite32('velocity command', [forward, yaw_rate]).astype(np.float64)

    def extras(self, q: np.ndarray) -> np.ndarray:
        """Return the ``[1, 12]`` float32 extras; the joint positions are not needed."""
        missing = [n for n, v in (('imu', self.imu), ('odometry', self.odom)) if v is None]
        if missing:
            raise MissingInput(f'no {" and ".join(missing)} yet')
        quat, gyro = self.imu
        v_body, z = self.odom
        gravity = _rotate_inverse(quat, np.array([0.0, 0.0, -1.0]))
        return _finite32('walk extras', np.concatenate(
            [v_body, gyro, gravity, self.command, [z]]))[None, :]


class LeggedInputs:
    """
    IMU angular velocity and gravity, the velocity command: ``go2_walk``'s actor extras.

    With a state estimate (``set_estimate``), its trunk velocity and height go into the
    critic's first four columns after the actor's (zeros without one). A new command
    starts a new episode (``episode``): on a robot, a walk segment is one command held.
    """

    ACTOR = 9
    #: A command differing from the last by more than this (any axis) starts an episode.
    NEW_COMMAND = 1e-3

    def __init__(self, width: int):
        """``width`` is the task's extras width; columns past the actor's nine are zeros."""
        if width < self.ACTOR:
            raise ValueError(f'legged task inputs give {self.ACTOR} extras, the task has '
                             f'{width}')
        self.width = int(width)
        self.imu: tuple[np.ndarray, np.ndarray] | None = None   # (quat xyzw, gyro)
        self.command = np.zeros(3)                             # stand still until told
        self.episode = 0
        self.estimate: np.ndarray | None = None                # velocity (3), height
        self.estimate_ns: int | None = None                    # when it arrived
        self._out = np.zeros((1, self.width), np.float32)

    def set_imu(self, quat_xyzw, gyro) -> None:
        """Take an IMU sample (orientation x, y, z, w and angular velocity, body frame)."""
        self.imu = (_finite32('imu orientation', quat_xyzw).astype(np.float64),
                    _finite32('imu angular velocity', gyro).astype(np.float64))

    def set_command(self, vx, vy, yaw_rate) -> None:
        """Take the commanded velocity: v_x, v_y (m/s, body frame) and yaw rate (rad/s)."""
        command = _finite32('velocity command', [vx, vy, yaw_rate]).astype(np.float64)
        if np.any(np.abs(command - self.command) > self.NEW_COMMAND):
            self.episode += 1
        self.command = command

    def set_estimate(self, v_body, z, now_ns: int | None = None) -> None:
        """
        Take a state estimate: the trunk's body-frame velocity (m/s) and height (m).

        ``now_ns``: when it arrived (any monotonic clock; ``estimate_age_s`` compares).
        """
        if self.width < self.ACTOR + 4:
            raise ValueError(f'the task has {self.width - self.ACTOR} critic columns; a '
                             'state estimate needs 4')
        self.estimate = _finite32('state estimate', [*v_body, z])
        self.estimate_ns = now_ns

    def estimate_age_s(self, now_ns: int) -> float | None:
        """Return how long ago (s) the last estimate arrived; None without a timed one."""
        if self.estimate_ns is None:
            return None
        return (now_ns - self.estimate_ns) / 1e9

    def extras(self, q: np.ndarray) -> np.ndarray:
        """Return the ``[1, width]`` float32 extras; the joint positions are not needed."""
        if self.imu is None:
            raise MissingInput('no imu yet')
        quat, gyro = self.imu
        gravity = _rotate_inverse(quat, np.array([0.0, 0.0, -1.0]))
        out = self._out.copy()
        out[0, :self.ACTOR] = _finite32('legged extras', np.concatenate(
            [gyro, gravity, self.command]))
        if self.estimate is not None:
            out[0, self.ACTOR:self.ACTOR + 4] = self.estimate
        return out
