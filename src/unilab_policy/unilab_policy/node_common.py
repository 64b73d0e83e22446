# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""What the policy and trainer nodes share at the ROS edge: the weights QoS."""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

#: Weights are latched: a policy that starts (or restarts) late still gets
#: the current version without waiting for the next update.
WEIGHTS_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
