# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Console scripts of unilab_bridge, light: a stop while a node imports ends quietly."""

from unilab_core.entry import run_node


def bridge_node(args=None):
    """Run ``unilab_bridge.bridge_node`` (``unilab_core.entry.run_node``)."""
    return run_node('unilab_bridge.bridge_node', args)


def legged_double_node(args=None):
    """Run ``unilab_bridge.legged_double_node`` (``unilab_core.entry.run_node``)."""
    return run_node('unilab_bridge.legged_double_node', args)


def robot_double_node(args=None):
    """Run ``unilab_bridge.robot_double_node`` (``unilab_core.entry.run_node``)."""
    return run_node('unilab_bridge.robot_double_node', args)


def scenario_node(args=None):
    """Run ``unilab_bridge.scenario_node`` (``unilab_core.entry.run_node``)."""
    return run_node('unilab_bridge.scenario_node', args)
