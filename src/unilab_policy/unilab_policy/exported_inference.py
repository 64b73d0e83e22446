# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Deterministic inference with an exported policy: ONNX through onnxruntime, or TorchScript.

An exported model is ``action = actor(normalise(obs))`` (``export.DeployablePolicy``):
no sampling, no value head. It stands in for ``inference.InferencePolicy`` in a
deploy-mode ``PolicyActor`` (same ``act`` signature); value and log-probability
are zeros (nothing trains on a deployed policy's outputs).

- ``ExportedPolicy``: a model file (``unilab export``'s ONNX or TorchScript).
- ``OnnxBundlePolicy``: the actor's own network exported in memory and run
  through onnxruntime (``runtime: onnx``, a robot's default on a CPU): one call
  into C++ per control step instead of a torch module tree, 0.4-0.5 ms less per
  cycle on a cold 2-core CPU (docs/deploy.md, Latency through the deploy path).
"""

from __future__ import annotations

import os
import threading
from typing import Callable

import numpy as np
import torch

from unilab_policy import export
from unilab_policy.models import ActOutput
from unilab_policy.onnx_runtime import onnx_session


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


_OUTPUTS = ['action']


def _torch_command(module, obs: np.ndarray) -> np.ndarray:
    """Return ``module``'s command for ``obs`` in torch (a private copy of a read-only input)."""
    with torch.inference_mode():
        return module(torch.from_numpy(np.array(obs, dtype=np.float32))).numpy()


class _CommandRuntime:
    """What both exported runtimes share: ``command(obs)`` and the ActOutput around it."""

    #: An exported model's output is already the command (its action map is inside).
    outputs_commands = True

    def __init__(self, num_envs: int, input_dim: int):
        self.input_dim = int(input_dim)
        self._zeros = torch.zeros(int(num_envs))

    def command(self, obs: np.ndarray) -> np.ndarray:  # pragma: no cover - overridden
        """Return the command for ``obs`` ``[N, input]`` as a float32 numpy array."""
        raise NotImplementedError

    def act(self, obs: np.ndarray, deterministic: bool = True) -> ActOutput:
        """Return the command (deterministic only) as an ActOutput; value, log-prob 0."""
        if not deterministic:
            raise ValueError('an exported policy acts deterministically only (deploy mode)')
        action = torch.from_numpy(self.command(obs))
        return ActOutput(action, self._zeros, self._zeros, action, torch.zeros_like(action))


class ExportedPolicy(_CommandRuntime):
    """Act with an exported model file on ``[N, obs]`` numpy batches (CPU)."""

    def __init__(self, path: str | os.PathLike, num_envs: int, input_dim: int):
        super().__init__(num_envs, input_dim)
        path = os.fspath(path)
        if path.endswith('.onnx'):
            session = onnx_session(path)
            width = session.get_inputs()[0].shape[-1]
            self._run = lambda obs: session.run(_OUTPUTS, {'obs': obs})[0]
        else:
            module = torch.jit.load(path, map_location='cpu').eval()
            width = None
            self._run = lambda obs: _torch_command(module, obs)
        if isinstance(width, int) and width != self.input_dim:
            raise ValueError(f'{path}: the model takes {width} inputs, the policy has '
                             f'{self.input_dim}')

    def command(self, obs: np.ndarray) -> np.ndarray:
        """Return the model's command for ``obs`` as a float32 numpy array."""
        return self._run(np.ascontiguousarray(obs, dtype=np.float32))


class OnnxBundlePolicy(_CommandRuntime):
    """
    Act with a bundle's deployable policy exported in memory, through onnxruntime.

    ``reload(bundle)`` snapshots the bundle's current weights (a frozen
    ``export.DeployablePolicy``) and acts with the snapshot from the next step
    on. The first export runs at once; later ones (weights that arrive while the
    robot runs) on one worker thread while the snapshot acts in torch, so a swap
    never stalls a control step; versions that arrive faster than exports finish
    are skipped to the newest (one export at a time, whatever the weights topic
    sends). An export that fails, or whose outputs differ from torch by more
    than ``export.ONNX_TOLERANCE``, is not used (logged, counted; torch acts).
    """

    def __init__(self, action_map, num_envs: int, input_dim: int, threads: int = 1,
                 log: Callable[[str], None] = print):
        super().__init__(num_envs, input_dim)
        self.action_map = action_map
        self.threads = int(threads)
        self.log = log
        self._lock = threading.Lock()
        # (the newest snapshot in torch, its onnxruntime session or None while building),
        # replaced as one reference so a step never pairs one version's module with
        # another's session.
        self._active = (None, None)
        self._worker = None    # the export thread while one runs
        self.exports = 0       # sessions built and checked
        self.failed = 0        # exports refused (error or mismatch)

    @property
    def onnx_active(self) -> bool:
        """Return True when steps act through onnxruntime (not the torch snapshot)."""
        return self._active[1] is not None

    def reload(self, bundle, background: bool = True) -> None:
        """Act with ``bundle``'s current weights from the next step on (see the class)."""
        module = export.DeployablePolicy(bundle.actor_critic, bundle.obs_normalizer,
                                         self.action_map)
        with self._lock:
            self._active = (module, None)
            first = not (self.exports or self.failed)
            if not first and background and self._worker is not None:
                return  # the running worker exports the newest snapshot when done
            if not first and background:
                self._worker = threading.Thread(target=self._work, name='onnx-export',
                                                daemon=True)
                self._worker.start()
                return
        self._build(module)

    def _work(self) -> None:
        while True:
            module = self._active[0]
            self._build(module)
            with self._lock:
                if self._active[0] is module:  # nothing newer arrived meanwhile
                    self._worker = None
                    return

    def _build(self, module) -> None:
        try:
            session = onnx_session(export.onnx_bytes(module, self.input_dim), self.threads)
            diff = export.verify_onnx(session, module, self.input_dim)
            if not diff <= export.ONNX_TOLERANCE:  # NaN included
                raise ValueError(f'onnxruntime differs from torch by {diff:.2e} '
                                 f'(> {export.ONNX_TOLERANCE:.0e})')
        except Exception as exc:  # noqa: B902 - any export failure: keep acting in torch
            with self._lock:
                self.failed += 1
            self.log(f'onnx runtime not used, acting in torch: {exc}')
            return
        with self._lock:
            self.exports += 1
            if self._active[0] is module:  # not overtaken by newer weights
                self._active = (module, session)

    def command(self, obs: np.ndarray) -> np.ndarray:
        """
        Return the command for ``obs`` ``[N, input]`` as a float32 numpy array.

        The control path's call: numpy in, numpy out, no torch between (each torch
        call costs tens of microseconds on a CPU gone cold between control steps).
        """
        module, session = self._active
        if session is not None:
            return session.run(_OUTPUTS, {'obs': np.ascontiguousarray(obs, np.float32)})[0]
        return _torch_command(module, obs)
