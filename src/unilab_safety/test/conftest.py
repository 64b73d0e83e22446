# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: a private ROS domain and an rclpy context per test module."""

import pytest
import rclpy
from unilab_core.testing import isolate_ros_domain

# Before any rclpy.init: a training run may be using domain 0 on this machine.
isolate_ros_domain()


@pytest.fixture(scope='module')
def context():
    """Yield a fresh, initialised rclpy context; shut it down after the module."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        yield ctx
    finally:
        ctx.try_shutdown()
