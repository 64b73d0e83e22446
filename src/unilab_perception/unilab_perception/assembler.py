# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Concatenate the enabled observation parts into the policy's ``[N, obs]`` array (no ROS).

The order is fixed at construction (``[q, qd, extras]`` by default, the layout
of ``unilab_bridge.tasks.observation``; optional ``imu``, ``cloud``, ``image``,
``joint_history`` after it), widths are checked on every call, and the output
buffer is reused.
"""

from __future__ import annotations

import numpy as np


class ObservationAssembler:
    """Write named ``[N, d]`` parts side by side into one reused ``[N, sum d]`` float32 array."""

    def __init__(self, num_envs: int, widths: dict[str, int]):
        self.num_envs = int(num_envs)
        self.widths = dict(widths)
        self.width = sum(self.widths.values())
        self._out = np.empty((self.num_envs, self.width), np.float32)

    @property
    def layout(self) -> dict[str, tuple[int, int]]:
        """Return each part's ``[start, end)`` columns."""
        out, col = {}, 0
        for name, w in self.widths.items():
            out[name] = (col, col + w)
            col += w
        return out

    def __call__(self, parts: dict[str, np.ndarray]) -> np.ndarray:
        """Return the assembled observation (the same buffer each call); raise on bad parts."""
        missing = [n for n in self.widths if n not in parts]
        if missing:
            raise ValueError(f'observation parts missing: {missing}')
        col = 0
        for name, w in self.widths.items():
            p = np.asarray(parts[name])
            if p.shape != (self.num_envs, w):
                raise ValueError(f'observation part `{name}` has shape {p.shape}, '
                                 f'expected {(self.num_envs, w)}')
            self._out[:, col:col + w] = p
            col += w
        return self._out
