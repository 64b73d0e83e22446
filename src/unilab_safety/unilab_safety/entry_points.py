# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Console scripts of unilab_safety, light: a stop while a node imports ends quietly."""

from unilab_core.entry import run_node


def safety_node(args=None):
    """Run ``unilab_safety.safety_node`` (``unilab_core.entry.run_node``)."""
    return run_node('unilab_safety.safety_node', args)
