# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Console scripts of unilab_policy, light: a stop while a node imports ends quietly."""

from unilab_core.entry import run_node


def policy_node(args=None):
    """Run ``unilab_policy.policy_node`` (``unilab_core.entry.run_node``)."""
    return run_node('unilab_policy.policy_node', args)


def trainer_node(args=None):
    """Run ``unilab_policy.trainer_node`` (``unilab_core.entry.run_node``)."""
    return run_node('unilab_policy.trainer_node', args)
