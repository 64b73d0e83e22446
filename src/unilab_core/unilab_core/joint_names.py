# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Joint names on ``sensor_msgs/JointState``: batched simulator names and a robot's own.

The simulated bridge publishes all envs in one message with names
``env<i>/<joint>``; a robot's ``joint_state_broadcaster`` publishes its own
joint names (plain, in no promised order, possibly with joints the policy
does not command). ``JointStateIndex`` maps either onto the ``[N, J]`` layout
of the policy's joints: for env ``i`` and joint ``j`` it takes
``env<i>/<j>``, and for a single robot (N = 1) the plain name ``j`` as well.
The index is built once per distinct name list and cached. Bridge,
perception and safety all use this module, so they agree on one rule.
"""

from __future__ import annotations

import re

import numpy as np

#: ``env<i>/`` at the start of a name or frame id (an optional leading slash).
_ENV = re.compile(r'^/?env(\d+)/')


class JointLayoutError(ValueError):
    """A JointState does not carry the joints the policy expects, or its arrays do not fit."""


def batched_joint_names(joint_names, num_envs: int) -> list[str]:
    """Return the names a batched JointState carries: ``env<i>/<joint>``, env-major."""
    return [f'env{i}/{j}' for i in range(num_envs) for j in joint_names]


def env_of(frame_id: str) -> int | None:
    """Return ``i`` of an ``env<i>/...`` name or frame id, or None without that prefix."""
    m = _ENV.match(frame_id)
    return int(m.group(1)) if m else None


def env_joints(names, values, env: int = 0) -> tuple[list[str], list]:
    """
    Return env ``env``'s joints of a JointState: names without ``env<i>/``, their values.

    A batched JointState (the simulated bridge's, every name ``env<i>/<joint>``) gives
    env ``env``'s joints under their plain names, for a reader that knows one robot (a
    URDF); a robot's own JointState (no such prefix) comes back unchanged.
    """
    names = list(names)
    if not names or env_of(names[0]) is None:
        return names, list(values)
    out_names, out_values = [], []
    for n, v in zip(names, values):
        m = _ENV.match(n)
        if m is not None and int(m.group(1)) == env:
            out_names.append(n[m.end():])
            out_values.append(v)
    return out_names, out_values


class JointStateIndex:
    """Map a JointState's name list onto the ``[N, J]`` layout of ``joint_names``."""

    def __init__(self, joint_names, num_envs: int = 1):
        self.joint_names = list(joint_names)
        self.num_envs = int(num_envs)
        self._key: tuple[str, ...] | None = None
        self._index: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """Return ``(N, J)``."""
        return self.num_envs, len(self.joint_names)

    def index_for(self, names) -> np.ndarray:
        """Return flat indices ``[N * J]`` into the message arrays; raise on missing joints."""
        key = tuple(names)
        if key != self._key:
            where = {n: k for k, n in enumerate(key)}
            take, missing = [], []
            plain = self.num_envs == 1
            for i in range(self.num_envs):
                for j in self.joint_names:
                    k = where.get(f'env{i}/{j}')
                    if k is None and plain:
                        k = where.get(j)
                    if k is None:
                        missing.append(j if plain else f'env{i}/{j}')
                    take.append(k)
            if missing:
                raise JointLayoutError(
                    f'JointState lacks {len(missing)} expected joint(s), e.g. {missing[:3]} '
                    f'(it names {list(key[:6])}{" ..." if len(key) > 6 else ""})')
            self._index = np.asarray(take, dtype=np.intp)
            self._key = key
        return self._index

    def gather(self, names, values, field: str = 'position',
               out: np.ndarray | None = None) -> np.ndarray:
        """
        Return one field (position, velocity, effort) as ``[N, J]`` float64.

        ``values`` is the message's array for ``field``; it must have one value
        per name. ``out`` (``[N, J]`` float64) is filled instead of a new array.
        """
        arr = np.asarray(values, dtype=np.float64)
        if arr.ndim != 1 or arr.size != len(names):
            raise JointLayoutError(
                f'JointState `{field}` has {arr.size} values for {len(names)} names')
        idx = self.index_for(names)
        if out is None:
            return arr[idx].reshape(self.shape)
        np.take(arr, idx, out=out.reshape(-1))
        return out
