# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Helpers for the packages' tests (no ROS import at module level)."""

from __future__ import annotations

import os
import time
from typing import Callable


def isolate_ros_domain() -> int:
    """
    Give this test process its own ROS domain, on this machine only.

    Tests of several packages (and a training run a developer left going) must
    not see each other's topics; call this before ``rclpy.init``. Children
    inherit the environment, so a node started in a subprocess joins the test.
    """
    domain = int(os.environ.get('UNILAB_TEST_DOMAIN', 0)) or 20 + os.getpid() % 80
    os.environ['ROS_DOMAIN_ID'] = str(domain)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    return domain


def spin_until(executor, predicate: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """Spin ``executor`` until ``predicate()`` holds; return whether it did before the timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        executor.spin_once(timeout_sec=0.05)
    return predicate()
