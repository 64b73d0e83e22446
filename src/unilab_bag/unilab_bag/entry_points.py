# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Console scripts of unilab_bag, light: a stop while a node imports ends quietly."""

from unilab_core.entry import run_node


def recorder_node(args=None):
    """Run ``unilab_bag.recorder_node`` (``unilab_core.entry.run_node``)."""
    return run_node('unilab_bag.recorder_node', args)
