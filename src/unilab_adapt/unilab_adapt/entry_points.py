# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Console scripts of unilab_adapt, light: a stop while a node imports ends quietly."""

from unilab_core.entry import run_node


def adapter_node(args=None):
    """Run ``unilab_adapt.adapter_node`` (``unilab_core.entry.run_node``)."""
    return run_node('unilab_adapt.adapter_node', args)
