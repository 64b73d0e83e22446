# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The envelope a policy was trained in: the joint range it saw and the task's workspace.

A policy knows nothing outside the states it was trained on: sent a goal far
outside its task's target range it winds joints to wherever its network
extrapolates (±2π was seen on a UR5e double). The checkpoints therefore carry
what the policy saw, and deployment narrows the robot to it
(``docs/safety.md``, "On a robot").

The source of the joint range is the trainer's own rollout data: for tasks
whose observation leads with the joint positions (``[q, qd, extras]``, the
layout of ``unilab_perception.joint_obs``), the raw (un-normalised) first
``J`` columns of every stored observation. The trainer sees every step of
every env it learns from, and it writes the checkpoints, so the range is
exactly that of the data the weights were fitted to, with no other node or
file involved. The workspace (a min/max xyz box in the task's base frame) is
the task's declaration (``BatchedTask.workspace``), copied alongside.

Stored as plain lists in the checkpoint (``weights_only``-loadable):
``{'joint_low': [J], 'joint_high': [J], 'samples': int, 'workspace': [6] or
[], 'workspace_frame': str}``; the joint keys are absent before any sample.
"""

from __future__ import annotations

import torch
from unilab_policy.checkpoint import load_checkpoint

#: Checkpoint key of the envelope.
KEY = 'envelope'


class TrainedEnvelope:
    """Running per-joint min/max of the joint positions in the observations trained on."""

    def __init__(self, joints: int, workspace=(), workspace_frame: str = ''):
        if joints < 1:
            raise ValueError(f'the envelope needs at least one joint column, got {joints}')
        if workspace and len(workspace) != 6:
            raise ValueError(f'workspace must be [xmin, ymin, zmin, xmax, ymax, zmax], got '
                             f'{list(workspace)}')
        self.joints = int(joints)
        self.workspace = [float(v) for v in workspace]
        self.workspace_frame = str(workspace_frame)
        self.low: torch.Tensor | None = None
        self.high: torch.Tensor | None = None
        self.samples = 0

    def update(self, raw_obs: torch.Tensor) -> None:
        """Take a chunk of raw observations ``[..., obs]`` (joint positions lead)."""
        q = raw_obs[..., :self.joints].reshape(-1, self.joints).to(torch.float64)
        if q.shape[0] == 0:
            return
        lo, hi = q.amin(dim=0), q.amax(dim=0)
        if self.low is None:
            self.low, self.high = lo, hi
        else:
            torch.minimum(self.low, lo, out=self.low)
            torch.maximum(self.high, hi, out=self.high)
        self.samples += q.shape[0]

    def state_dict(self) -> dict:
        """Return the checkpoint entry (plain lists)."""
        out = {'samples': int(self.samples), 'workspace': list(self.workspace),
               'workspace_frame': self.workspace_frame}
        if self.low is not None:
            out['joint_low'] = [float(v) for v in self.low.cpu()]
            out['joint_high'] = [float(v) for v in self.high.cpu()]
        return out

    def load_state_dict(self, state: dict) -> None:
        """Continue from a checkpoint entry (a resumed run keeps what it saw before)."""
        self.samples = int(state.get('samples', 0))
        if 'joint_low' in state:
            lo = torch.tensor(state['joint_low'], dtype=torch.float64)
            hi = torch.tensor(state['joint_high'], dtype=torch.float64)
            if lo.shape != (self.joints,) or hi.shape != (self.joints,):
                raise ValueError(f'envelope has {lo.numel()} joints, the run {self.joints}')
            self.low, self.high = lo, hi


def joint_range(entry: dict | None, margin: float) -> tuple[list, list] | None:
    """Return ``(low - margin, high + margin)`` of a checkpoint's envelope entry, or None."""
    if not entry or 'joint_low' not in entry:
        return None
    return ([float(v) - margin for v in entry['joint_low']],
            [float(v) + margin for v in entry['joint_high']])


def checkpoint_envelope(path) -> dict | None:
    """Return the trained envelope the checkpoint at ``path`` carries (None: an older one)."""
    return load_checkpoint(path).get(KEY)
