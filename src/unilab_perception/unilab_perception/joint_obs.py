# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Build the policy observation from batched joint states and task extras (no ROS).

The bridge (or a robot driver) publishes one sensor_msgs/JointState for all
environments with names ``env<i>/<joint>``; drivers do not promise an order,
so the name -> column map is built once per distinct name list and cached.
"""

from __future__ import annotations

import numpy as np

from unilab_perception.ingest import MAX_MAGNITUDE, usable


class JointLayoutError(ValueError):
    """A JointState does not carry the joints the policy expects."""


def batched_joint_names(joint_names: list[str], num_envs: int) -> list[str]:
    """Return the names a batched JointState carries: ``env<i>/<joint>``."""
    return [f'env{i}/{j}' for i in range(num_envs) for j in joint_names]


class JointStateIndex:
    """Map a JointState name list onto an [N, J] layout."""

    def __init__(self, joint_names: list[str], num_envs: int):
        self.joint_names = list(joint_names)
        self.num_envs = num_envs
        self._cache_key: tuple[str, ...] | None = None
        self._index: np.ndarray | None = None

    def index_for(self, names: list[str]) -> np.ndarray:
        """Return flat indices [N*J] into the message arrays; raise on missing joints."""
        key = tuple(names)
        if key != self._cache_key:
            pos = {n: i for i, n in enumerate(names)}
            wanted = batched_joint_names(self.joint_names, self.num_envs)
            missing = [n for n in wanted if n not in pos]
            if missing:
                raise JointLayoutError(
                    f'JointState lacks {len(missing)} expected joints, e.g. {missing[:3]} '
                    f'(got {len(names)} names, expected {len(wanted)})')
            self._index = np.fromiter((pos[n] for n in wanted), dtype=np.intp,
                                      count=len(wanted))
            self._cache_key = key
        return self._index

    def gather(self, names: list[str], values, field: str) -> np.ndarray:
        """Gather one field (position / velocity) as [N, J] float32."""
        arr = np.frombuffer(values, dtype=np.float64) if len(values) else np.zeros(0)
        if arr.size != len(names):
            raise JointLayoutError(
                f'JointState `{field}` has {arr.size} values for {len(names)} names')
        idx = self.index_for(names)
        # Checked in float32, the observation's precision: 1e300 rad/s is Inf there.
        out, ok = usable(arr[idx])
        if not ok.all():
            raise JointLayoutError(f'JointState `{field}` contains NaN, Inf or values beyond '
                                   f'+-{MAX_MAGNITUDE:g} in float32 ({int((~ok).sum())} of '
                                   f'{ok.size})')
        return out.reshape(self.num_envs, len(self.joint_names))


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
