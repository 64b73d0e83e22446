# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
ur5e_reach: the reach task on a UR5e with the maker's joint zeros (``assets/ur5e.xml``).

The same task as arm6_reach (reward, episodes, observation ``[tool, goal, goal - tool]``),
on a model whose joints are Universal Robots' own, so a policy's joint positions and
commands mean on a real UR5e what they meant in training. Episodes start near UR's home
pose, or (half of them) where the last goal left the arm; targets are drawn uniformly
from a box above the table in front of the robot, in ``base_link`` (ur_description's base
frame: x forward, z up from the mounting plane), all of it reachable by the flange
(``tests``: the IK expert reaches every corner).
"""

import math
import pathlib

from unilab_bridge.tasks.arm6_reach import Arm6Reach
from unilab_core.graph import Workspace

ASSET = pathlib.Path(__file__).resolve().parents[1] / 'assets' / 'ur5e.xml'

#: UR's usual home pose (rad): upper arm up, forearm forward, flange pointing down.
UR5E_HOME = (0.0, -1.57, 1.57, -1.57, -1.57, 0.0)


class Ur5eReach(Arm6Reach):
    """Reach with a UR5e: targets in a box above its table, episodes from UR's home pose."""

    NAME = 'ur5e_reach'
    ASSET = ASSET
    MAX_JOINT_VELOCITY = math.pi  # UR5e: 180 deg/s on every joint
    HOME = UR5E_HOME
    # In front of the robot, 10 cm above the table to 50 cm; the home pose's flange is at
    # (0.49, 0.13, 0.49), inside. The far corners are 0.78 m from the shoulder (reach 0.85 m).
    WORKSPACE_MIN = (0.25, -0.4, 0.1)
    WORKSPACE_MAX = (0.65, 0.4, 0.5)
    WORKSPACE_FRAME = 'base_link'
    # Smooth enough for a real robot's gate (issue 38): commands that change little from
    # step to step, and a tool that keeps under the Cartesian speed limit.
    ACTION_RATE_SCALE = -15.0
    TOOL_SPEED_SCALE = -100.0
    COMMAND_TOOL_SPEED_SCALE = -1.0
    # Commands that lead the measured joints by little (the gate's tracking bound, 0.15 rad,
    # and the bench's 0.1 rad): a squared cost per joint above reach_reward.LEAD_SOFT_RAD.
    LEAD_SCALE = -100.0
    # One slew step of lead per unit of action (arm6: two). The exploration noise of a fresh
    # policy moves the commanded tool half as far, so the smoothness terms above charge the
    # task, not the noise; full speed needs |action| about 1.5 (docs/robots.md).
    ACTION_SCALE_SLEW_STEPS = 1.0
    # At most 1.5 slew steps of lead (0.094 rad): the bench's tracking bound is 0.1 rad, and
    # a heavier or later arm than the training model's must not make the policy ask more.
    ACTION_CLIP = 1.5
    # Half of the episodes start where the last goal left the arm: a robot (and `bench
    # robot`) goes from goal to goal without returning home, so the policy must know the
    # poses its own reaches end in, not only the home region.
    CHAINED_GOALS = 0.5

    def task_workspace(self) -> Workspace:
        """Return the box the targets are drawn from, in the robot's base frame."""
        return Workspace(self.WORKSPACE_MIN, self.WORKSPACE_MAX, self.WORKSPACE_FRAME)

    def sample_targets(self, count):
        """Return [count, 3] target positions drawn uniformly from the workspace box."""
        return self._rng.uniform(self.WORKSPACE_MIN, self.WORKSPACE_MAX, size=(count, 3))
