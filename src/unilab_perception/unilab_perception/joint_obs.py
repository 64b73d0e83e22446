# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Build the policy observation from joint states and task extras (no ROS).

The joint names are mapped onto the policy's ``[N, J]`` layout by
``unilab_core.joint_names.JointStateIndex`` (batched ``env<i>/<joint>`` names
from the bridge, a robot's own names for one robot).
"""

from __future__ import annotations

import numpy as np
from unilab_core.joint_names import JointLayoutError, JointStateIndex


def joint_field(index: JointStateIndex, names, values, field: str) -> np.ndarray:
    """
    Return one JointState field as the observation's float32 ``[N, J]``.

    Validated in the precision the policy sees: a value that is finite in
    float64 but overflows float32 (e.g. 1e39) is refused like NaN or Inf.
    Raises JointLayoutError naming the field.
    """
    return joint_array(index.gather(names, values, field), field)


def joint_array(values: np.ndarray, field: str) -> np.ndarray:
    """Return ``[N, J]`` joint values as float32, refusing NaN / Inf (in float32) by name."""
    out = np.asarray(values).astype(np.float32)
    if not np.all(np.isfinite(out)):
        raise JointLayoutError(f'JointState `{field}` contains NaN or Inf (in float32)')
    return out


def build_observation(q: np.ndarray | None, qd: np.ndarray | None, extras: np.ndarray,
                      uses_joint_state: bool, out: np.ndarray | None = None) -> np.ndarray:
    """
    Concatenate [q, qd, extras] (or extras alone) into ``out`` [N, obs] float32.

    The rule matches ``unilab_bridge.tasks.observation`` so the simulated and
    the ROS path give the policy the same vector.
    """
    parts = [q, qd, extras] if uses_joint_state else [extras]
    n = extras.shape[0]
    width = sum(p.shape[1] for p in parts)
    if out is None or out.shape != (n, width):
        out = np.empty((n, width), dtype=np.float32)
    col = 0
    for p in parts:
        out[:, col:col + p.shape[1]] = p
        col += p.shape[1]
    return out
