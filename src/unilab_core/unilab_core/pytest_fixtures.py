# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Pytest fixtures shared by the packages' node tests.

A package's ``test/conftest.py`` imports them (``from unilab_core.pytest_fixtures
import context, private_topics``) after calling
``unilab_core.testing.isolate_ros_domain()``.
"""

import types
import uuid

import pytest
import rclpy
from unilab_core import topics


def _new_context():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        yield ctx
    finally:
        ctx.try_shutdown()


@pytest.fixture(scope='module')
def context():
    """Yield a fresh, initialised rclpy context; shut it down after the module."""
    yield from _new_context()


@pytest.fixture
def fresh_context():
    """Yield an rclpy context of this test alone; shut it down afterwards."""
    yield from _new_context()


@pytest.fixture
def private_topics():
    """
    Return the graph's topic names under a prefix of this test's own.

    The ROS domain is already private to the test process; remapping also
    keeps a graph started by hand in the same domain out of the test.
    ``args`` are the ``cli_args`` that move a node onto these names.
    """
    prefix = f'/test_{uuid.uuid4().hex[:12]}'
    names = {key: prefix + name for key, name in topics.ALL.items()}
    args = ['--ros-args']
    for key, name in topics.ALL.items():
        args += ['-r', f'{name}:={names[key]}']
    return types.SimpleNamespace(args=args, **names)
