# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Deterministic inference with an exported policy: ONNX through onnxruntime, or TorchScript.

An exported model is ``action = actor(normalise(obs))`` (``export.DeployablePolicy``):
no sampling, no value head. It stands in for ``inference.InferencePolicy`` in a
deploy-mode ``PolicyActor`` (same ``act`` signature); value and log-probability
are zeros (nothing trains on a deployed policy's outputs).
"""

from __future__ import annotations

import os

import numpy as np
import torch

from unilab_policy.models import ActOutput


def is_exported(path: str | os.PathLike) -> bool:
    """Return True for an exported model file (ONNX, or a TorchScript archive)."""
    import zipfile
    path = os.fspath(path)
    if path.endswith('.onnx'):
        return True
    if not os.path.isfile(path) or not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as z:  # torch.save archives hold data.pkl, not code/
        return any('/code/' in n or n.endswith('constants.pkl') for n in z.namelist())


class ExportedPolicy:
    """Act with an exported model file on ``[N, obs]`` numpy batches (CPU)."""

    #: An exported model's output is already the command (its action map is inside).
    outputs_commands = True

    def __init__(self, path: str | os.PathLike, num_envs: int, input_dim: int):
        path = os.fspath(path)
        self.input_dim = int(input_dim)
        self._zeros = torch.zeros(int(num_envs))
        if path.endswith('.onnx'):
            import onnxruntime as ort
            self._session = ort.InferenceSession(path, providers=['CPUExecutionProvider'])
            width = self._session.get_inputs()[0].shape[-1]
            self._run = lambda obs: torch.from_numpy(
                self._session.run(['action'], {'obs': obs})[0])
        else:
            module = torch.jit.load(path, map_location='cpu').eval()
            width = None
            self._run = lambda obs: module(torch.from_numpy(obs))
        if isinstance(width, int) and width != self.input_dim:
            raise ValueError(f'{path}: the model takes {width} inputs, the policy has '
                             f'{self.input_dim}')

    def act(self, obs: np.ndarray, deterministic: bool = True) -> ActOutput:
        """Return the model's action (deterministic only) as an ActOutput."""
        if not deterministic:
            raise ValueError('an exported policy acts deterministically only (deploy mode)')
        x = np.ascontiguousarray(obs, dtype=np.float32)
        with torch.inference_mode():
            action = self._run(x)
        return ActOutput(action, self._zeros, self._zeros, action, torch.zeros_like(action))
