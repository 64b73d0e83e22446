# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
quad12_walk: quad_walk's recipe on a 12-joint quadruped (abduction, hip, knee per leg).

quad_walk's legs only pitch, so its feet cannot be placed sideways and yaw needs the
feet to skid; real quadrupeds (Unitree, ANYmal) have a hip abduction/adduction joint
per leg, and so does this model (assets/quad12.xml). Commands, rewards, observations
and action scaling are quad_walk's (docs/quad_walk.md).
"""

import pathlib

import numpy as np

from unilab_bridge.tasks.quad_walk import QuadWalk


class Quad12Walk(QuadWalk):
    """quad_walk on the 12-joint model; commands are joint position targets in rad."""

    TASK_NAME = 'quad12_walk'
    ASSET = pathlib.Path(__file__).resolve().parents[1] / 'assets' / 'quad12.xml'
    HOME = np.array([0.0, 0.5, -1.0] * 4)  # abad, hip, knee per leg (fl, fr, hl, hr)
