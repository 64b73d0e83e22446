# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A ros2_control controller's command input, without ROS: what the robot double accepts.

Two controllers, as ros2_controllers define them:

- ``forward_command_controller``: ``std_msgs/Float64MultiArray`` whose ``data`` has one
  value per joint of the controller's ``joints`` parameter, in that order; the
  controller writes it to the command interfaces and holds it until the next one.
  A message of the wrong length is rejected (``forward_command_controller.cpp``:
  "command size does not match number of interfaces").
- ``joint_trajectory_controller``: ``trajectory_msgs/JointTrajectory`` naming the
  joints it commands (any order, all of the controller's joints unless
  ``allow_partial_joints_goal``), points with strictly increasing
  ``time_from_start``; the trajectory starts at ``header.stamp`` (zero = on receipt),
  from the state the controller holds then, and is sampled at each update. With
  positions only, the controller interpolates linearly between points; after the last
  point it holds it (JTC docs, "Trajectory representation").

``CommandInput`` validates a message's contents (length, joint names, finite values,
times) and returns a ``Target`` in the policy's joint order (the profile's
``joint_names``); a refusal is a ``CommandRefused`` with a short ``kind`` for counting.
"""

from __future__ import annotations

import numpy as np

#: Kinds of refused commands (counted per kind by the robot double).
REFUSAL_KINDS = ('length', 'non_finite', 'joint_names', 'no_points', 'time')


class CommandRefused(ValueError):
    """A command the controller would reject; ``kind`` is one of ``REFUSAL_KINDS``."""

    def __init__(self, kind: str, text: str):
        super().__init__(text)
        self.kind = kind


class Target:
    """Joint position targets over time: ``at(t)`` is the drive's setpoint at sim time t."""

    def at(self, t: float) -> np.ndarray:
        """Return the setpoint [J] (policy joint order) at time ``t``."""
        raise NotImplementedError


class Hold(Target):
    """Hold one position (a forward command, or the pose before any command)."""

    def __init__(self, q):
        self.q = np.array(q, dtype=np.float64)

    def at(self, t: float) -> np.ndarray:
        """Return the held position."""
        return self.q


class Trajectory(Target):
    """
    Piecewise-linear positions through ``points`` at ``start + times``, from ``start_q``.

    Before ``start`` the start position is held; after the last point, the last point.
    """

    def __init__(self, start: float, start_q, times, points):
        self.start = float(start)
        # Knots: (start, start_q), then each point at start + time_from_start.
        self.t = np.concatenate([[self.start], self.start + np.asarray(times, np.float64)])
        self.q = np.vstack([np.asarray(start_q, np.float64)[None],
                            np.asarray(points, np.float64)])

    @property
    def end(self) -> float:
        """Return the time of the last point."""
        return float(self.t[-1])

    def at(self, t: float) -> np.ndarray:
        """Return the linearly interpolated position at ``t`` (held outside the knots)."""
        k = int(np.searchsorted(self.t, t, side='right'))
        if k <= 0:
            return self.q[0]
        if k >= len(self.t):
            return self.q[-1]
        t0, t1 = self.t[k - 1], self.t[k]
        w = (t - t0) / (t1 - t0) if t1 > t0 else 1.0
        return self.q[k - 1] + w * (self.q[k] - self.q[k - 1])


class CommandInput:
    """Validate controller messages and map them onto the policy's joint order."""

    def __init__(self, joint_names, controller_joints=None):
        """``joint_names``: policy order; ``controller_joints``: the controller's order."""
        self.joint_names = list(joint_names)
        self.controller_joints = list(controller_joints or joint_names)
        if sorted(self.controller_joints) != sorted(self.joint_names):
            raise ValueError(f'controller joints {self.controller_joints} must name the '
                             f'joints {self.joint_names}')
        where = {n: i for i, n in enumerate(self.controller_joints)}
        #: data[take] is in policy order for data in controller order.
        self._take = np.array([where[n] for n in self.joint_names], dtype=np.intp)

    def forward(self, data) -> Hold:
        """Return the held target of a Float64MultiArray's ``data`` (controller order)."""
        arr = np.asarray(data, dtype=np.float64).reshape(-1)
        if arr.size != len(self.controller_joints):
            raise CommandRefused('length', f'command has {arr.size} values for '
                                 f'{len(self.controller_joints)} joints')
        if not np.all(np.isfinite(arr)):
            raise CommandRefused('non_finite', 'command contains NaN or inf')
        return Hold(arr[self._take])

    def trajectory(self, joint_names, times, positions, start: float,
                   start_q) -> Trajectory:
        """
        Return the target of a JointTrajectory.

        ``joint_names`` as in the message, ``times`` [P] seconds from start,
        ``positions`` a list of P position lists (message order), ``start`` the sim
        time the trajectory starts, ``start_q`` the setpoint held then (policy order).
        """
        names = list(joint_names)
        if len(set(names)) != len(names) or sorted(names) != sorted(self.joint_names):
            raise CommandRefused('joint_names', f'trajectory joints {names} are not the '
                                 f'controller\'s joints {self.controller_joints}')
        if len(positions) == 0:
            raise CommandRefused('no_points', 'trajectory has no points')
        where = {n: i for i, n in enumerate(names)}
        take = np.array([where[n] for n in self.joint_names], dtype=np.intp)
        pts = np.empty((len(positions), len(names)))
        for p, row in enumerate(positions):
            row = np.asarray(row, dtype=np.float64).reshape(-1)
            if row.size != len(names):
                raise CommandRefused('length', f'point {p} has {row.size} positions for '
                                     f'{len(names)} joints')
            pts[p] = row
        t = np.asarray(times, dtype=np.float64).reshape(-1)
        if not (np.all(np.isfinite(pts)) and np.all(np.isfinite(t))):
            raise CommandRefused('non_finite', 'trajectory contains NaN or inf')
        if t[0] < 0 or np.any(np.diff(t) <= 0):
            raise CommandRefused('time', f'time_from_start must be >= 0 and strictly '
                                 f'increasing, got {t.tolist()}')
        return Trajectory(start, start_q, t, pts[:, take])
