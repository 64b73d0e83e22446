# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""QoS of the per-env sensor topics (``/imu``, ``/points``, ``/camera/image_raw``) and the URDF."""

from __future__ import annotations

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

#: Control steps of sensor messages a history keeps.
STEPS_KEPT = 4


def sensor_qos(messages_per_step: int, reliable: bool = True) -> QoSProfile:
    """
    Return a keep-last QoS deep enough for ``STEPS_KEPT`` steps of per-env messages.

    One message per env and step goes out as a burst; rclpy's sensor-data
    preset keeps 5, which drops envs as soon as more publish at once (and a
    lock-step observation that waits for every env then never completes).
    Publishers are reliable; subscribers pass ``reliable=False`` (best effort
    matches reliable and best-effort drivers alike).
    """
    return QoSProfile(depth=max(5, STEPS_KEPT * int(messages_per_step)),
                      reliability=ReliabilityPolicy.RELIABLE if reliable
                      else ReliabilityPolicy.BEST_EFFORT)


#: QoS of ``robot_description``: robot_state_publisher's (late joiners get the last one).
DESCRIPTION_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
