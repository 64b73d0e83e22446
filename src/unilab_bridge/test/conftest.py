# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: a private ROS domain, an rclpy context and private topic names."""

import types
import uuid

import pytest
import rclpy
from unilab_core import topics
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


@pytest.fixture
def private_topics():
    """
    Return the graph's topic names under a prefix of this test's own.

    The domain is picked from the process id, so another test run or a graph
    started by hand can share it; remapping keeps their messages out of the
    test. ``args`` are the ``cli_args`` that move a node onto these names.
    """
    prefix = f'/test_{uuid.uuid4().hex[:12]}'
    names = {key: prefix + name for key, name in topics.ALL.items()}
    args = ['--ros-args']
    for key, name in topics.ALL.items():
        args += ['-r', f'{name}:={names[key]}']
    return types.SimpleNamespace(args=args, **names)
