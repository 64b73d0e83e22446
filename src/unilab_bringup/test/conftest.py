# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: a private ROS domain, an rclpy context and private topic names."""

from unilab_core.testing import isolate_ros_domain

# Before any rclpy.init: a training run may be using domain 0 on this machine.
isolate_ros_domain()

from unilab_core.pytest_fixtures import context, private_topics  # noqa: E402,F401,I100
