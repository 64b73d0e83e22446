# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The workspace box a policy was trained for, from its run or exported model.

The task's workspace (``unilab_core.graph.Workspace``: a box in the robot's base frame)
travels in every checkpoint's trained envelope and in an exported model's metadata
(docs/robots.md); a deploy refuses goals outside it. The view draws it around the
robot, so an operator sees where goals may lie. Without a run named, the view asks the
live graph (``unilab_view.live_workspace``).
"""

from __future__ import annotations

import math
import pathlib


def model_workspace(path) -> tuple[tuple[float, ...], str] | None:
    """
    Return ``((xmin, ymin, zmin, xmax, ymax, zmax), frame)`` of a run, checkpoint or export.

    None when it carries no workspace (a task without one, or a run without a checkpoint
    yet). Raises ValueError for a path that is none of these.
    """
    path = pathlib.Path(path)
    if not path.exists():
        raise ValueError(f'{path}: not found')
    from unilab_policy.exported_inference import is_exported
    if is_exported(path):
        from unilab_policy.export import read_metadata
        meta = read_metadata(path) or {}
        source = meta.get('envelope') or {}
        if not source.get('workspace'):
            task = meta.get('task') or {}
            source = {'workspace': task.get('workspace'),
                      'workspace_frame': task.get('workspace_frame')}
    else:
        from unilab_policy.envelope import checkpoint_envelope
        from unilab_policy.networks import checkpoint_of
        _, checkpoint = checkpoint_of(path)
        if not checkpoint.is_file():
            return None
        source = checkpoint_envelope(checkpoint) or {}
    return parse_workspace(source.get('workspace'), source.get('workspace_frame') or 'base_link')


def box_geometry(box) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
    """Return ``(centre, dimensions)`` of ``(xmin, ymin, zmin, xmax, ymax, zmax)``."""
    low, high = box[:3], box[3:]
    return (tuple((lo + hi) / 2.0 for lo, hi in zip(low, high)),
            tuple(hi - lo for lo, hi in zip(low, high)))


def parse_workspace(box, frame) -> tuple[tuple[float, ...], str] | None:
    """Return ``(box, frame)``; None unless a finite 6-box (min <= max) in a named frame."""
    try:
        box = tuple(float(v) for v in box or ())
    except (TypeError, ValueError):
        return None
    if len(box) != 6 or not all(math.isfinite(v) for v in box) \
            or any(lo > hi for lo, hi in zip(box[:3], box[3:])):
        return None
    return (box, str(frame)) if isinstance(frame, str) and frame else None
