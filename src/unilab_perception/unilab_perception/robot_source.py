# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The perception node's robot side: task inputs from standard topics, one step per period.

With ``source: robot`` the observation's extras come from ``task_inputs``
(``unilab_perception.task_inputs``) instead of a simulator's task state, and
an observation is made from the joint states once per control period (by
their stamps, so a robot double running faster than the wall clock is
followed). Messages a task input refuses (not finite) are counted and logged
through the node's ``_invalid`` (goals per reason: ``task_inputs/goal_workspace``,
``goal_frame``, ``goal_non_finite``); a step without all inputs yet is skipped and
counted (``task_inputs/missing``). A legged robot's state estimate missing or older than
``task_inputs.estimate_timeout_s`` at a step is counted (``estimate_stale``) and logged.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
import numpy as np
from sensor_msgs.msg import Imu

from unilab_perception.ingest import InvalidMessage, read_imu
from unilab_perception.task_inputs import (GOAL_REFUSALS, GoalRefused, LeggedInputs,
                                           MissingInput, ReachInputs, WalkInputs)


class RobotStep(NamedTuple):
    """One control step on a robot (what the node's flush reads of a task state)."""

    seq: int
    tensors: dict


class RobotSource:
    """Subscribe to a robot's task inputs; turn joint states into control steps."""

    def __init__(self, node, p, qos):
        self.node = node
        self.estimate_timeout_s: float | None = None
        self.period_ns = int(round(1e9 / p.control_rate_hz)) if p.control_rate_hz else 0
        self.last_ns: int | None = None
        self.seq = -1
        self.skipped = 0
        self._episode: int | None = None
        ti = p.task_inputs
        if ti.kind == 'reach':
            self.inputs = ReachInputs(p.model_file, p.joint_names, ti.tool_site,
                                      ti.goal_frame, p.goal_workspace)
            # On /diagnostics and in the deploy summary with the node's counters.
            node.counters.update({'goals_accepted': 0, **{f'goals_refused_{k}': 0
                                                          for k in GOAL_REFUSALS}})
            node.create_subscription(PoseStamped, ti.goal_topic, self._on_goal, qos)
        elif ti.kind == 'walk':
            self.inputs = WalkInputs()
            node.create_subscription(Imu, p.imu.topic, self._on_imu, qos)
            node.create_subscription(Odometry, ti.odom_topic, self._on_odom, qos)
            node.create_subscription(Twist, ti.cmd_vel_topic, self._on_cmd, qos)
        elif ti.kind == 'legged':
            self.inputs = LeggedInputs(p.extras_dim)
            node.create_subscription(Imu, p.imu.topic, self._on_imu, qos)
            node.create_subscription(Twist, ti.cmd_vel_topic, self._on_cmd, qos)
            if ti.estimate_topic:
                node.create_subscription(Odometry, ti.estimate_topic, self._on_estimate, qos)
                # Steps whose estimate is missing or older than this (on /diagnostics).
                self.estimate_timeout_s = ti.estimate_timeout_s
                node.counters['estimate_stale'] = 0
        else:
            self.inputs = None
        width = 0 if self.inputs is None else self.inputs.width
        if width != p.extras_dim:
            raise ValueError(f'task_inputs.kind `{ti.kind}` gives {width} extras, the task '
                             f'has {p.extras_dim}')

    def _refused(self, kind: str, exc: Exception) -> None:
        self.node._invalid(f'task_inputs/{kind}', str(exc))

    def _on_goal(self, msg: PoseStamped) -> None:
        pos = msg.pose.position
        try:
            self.inputs.set_goal([pos.x, pos.y, pos.z], msg.header.frame_id)
        except GoalRefused as exc:
            # Counted per kind (goals_refused_workspace, _frame, _non_finite); the policy
            # keeps its last valid goal (before the first one it does not act).
            self.node.counters[f'goals_refused_{exc.kind}'] += 1
            self._refused(f'goal_{exc.kind}', exc)
            return
        self.node.counters['goals_accepted'] += 1

    def _on_imu(self, msg: Imu) -> None:
        try:
            sample = read_imu(msg)
            if sample.orientation is None:
                raise InvalidMessage('imu_orientation', 'the Imu carries no orientation '
                                     '(orientation_covariance[0] == -1)')
            self.inputs.set_imu(sample.orientation, sample.angular_velocity)
        except (InvalidMessage, ValueError) as exc:
            self._refused('imu', exc)

    def _on_odom(self, msg: Odometry) -> None:
        self._take_odometry(msg, self.inputs.set_odometry, 'odometry')

    def _on_estimate(self, msg: Odometry) -> None:
        now = time.monotonic_ns()
        self._take_odometry(msg, lambda v, z: self.inputs.set_estimate(v, z, now), 'estimate')

    def _check_estimate(self) -> None:
        """Count (and log) a step whose state estimate is missing or stale."""
        age = self.inputs.estimate_age_s(time.monotonic_ns())
        if age is not None and age <= self.estimate_timeout_s:
            return
        self.node.counters['estimate_stale'] += 1
        what = 'none yet' if age is None else f'the last one {age * 1e3:.0f} ms old'
        self.node.get_logger().warning(
            f'state estimate stale ({what}, bound {self.estimate_timeout_s * 1e3:g} ms): the '
            'critic\'s columns keep the last one', throttle_duration_sec=5.0)

    def _take_odometry(self, msg: Odometry, setter, kind: str) -> None:
        """Give ``setter`` the base-frame linear velocity and height; count a refusal."""
        v = msg.twist.twist.linear
        try:
            setter([v.x, v.y, v.z], msg.pose.pose.position.z)
        except ValueError as exc:
            self._refused(kind, exc)

    def _on_cmd(self, msg: Twist) -> None:
        try:
            if isinstance(self.inputs, LeggedInputs):
                self.inputs.set_command(msg.linear.x, msg.linear.y, msg.angular.z)
                return
            self.inputs.set_command(msg.linear.x, msg.angular.z)
        except ValueError as exc:
            self._refused('cmd_vel', exc)

    def rehearse(self, q: np.ndarray) -> None:
        """Compute the task inputs of ``q`` and throw them away (``Rehearsal``): no state."""
        if self.inputs is not None:
            try:
                self.inputs.extras(q)  # pure: the last inputs (goal, IMU, command) and q
            except MissingInput:
                pass

    def step(self, stamp_ns: int, q: np.ndarray) -> RobotStep | None:
        """Return the control step of a joint state at ``stamp_ns``, or None (not due yet)."""
        if self.period_ns and self.last_ns is not None \
                and stamp_ns - self.last_ns < self.period_ns * 0.95:
            return None
        if self.inputs is None:
            extras = np.zeros((1, 0), np.float32)
        else:
            try:
                extras = self.inputs.extras(q)
            except MissingInput as exc:
                self.skipped += 1
                self.node._invalid('task_inputs/missing', str(exc))
                return None
        if self.estimate_timeout_s is not None:
            self._check_estimate()
        self.last_ns = stamp_ns
        self.seq += 1
        # A robot has no reward signal (a learner on its recordings computes one) and no
        # terminal states; a new goal (a legged robot: a new command) starts a new episode
        # (truncation of the old one).
        episode = getattr(self.inputs, 'episode', 0)
        started = self._episode is not None and episode != self._episode
        self._episode = episode
        zero = np.zeros(1, np.float32)
        return RobotStep(self.seq, {
            'extras': extras, 'reward': zero, 'terminated': zero,
            'truncated': np.full(1, float(started), np.float32),
            'episode_return': np.full(1, np.nan, np.float32), 'episode_length': zero})
