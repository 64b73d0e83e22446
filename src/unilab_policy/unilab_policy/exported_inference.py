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
  into C++ per control step instead of a torch module tree, ~0.3 ms less per
  cycle on a cold 2-core CPU (README, Deploy on a robot).
"""

from __future__ import annotations

import os
import threading
from typing import Callable

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


#: Largest |onnxruntime - torch| accepted for the in-memory export (``unilab export``'s
#: own check uses the same bound).
ONNX_TOLERANCE = 1e-5


def onnx_session(model, threads: int = 1):
    """
    Return an onnxruntime CPU session for a model file path or serialised bytes.

    ``threads`` intra-op threads (1: a small MLP per control step loses more to a
    thread pool's hand-off than it gains), no inter-op parallelism.
    """
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(threads)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return ort.InferenceSession(model, options, providers=['CPUExecutionProvider'])


_OUTPUTS = ['action']


def _float32(obs: np.ndarray) -> np.ndarray:
    """Return ``obs`` as a C-contiguous float32 array (itself when it is one already)."""
    if obs.dtype == np.float32 and obs.flags.c_contiguous:
        return obs
    return np.ascontiguousarray(obs, dtype=np.float32)


def _deterministic(deterministic: bool) -> None:
    if not deterministic:
        raise ValueError('an exported policy acts deterministically only (deploy mode)')


class ExportedPolicy:
    """Act with an exported model file on ``[N, obs]`` numpy batches (CPU)."""

    #: An exported model's output is already the command (its action map is inside).
    outputs_commands = True

    def __init__(self, path: str | os.PathLike, num_envs: int, input_dim: int):
        path = os.fspath(path)
        self.input_dim = int(input_dim)
        self._zeros = torch.zeros(int(num_envs))
        if path.endswith('.onnx'):
            self._session = onnx_session(path)
            width = self._session.get_inputs()[0].shape[-1]
            self._run = lambda obs: self._session.run(_OUTPUTS, {'obs': obs})[0]
        else:
            module = torch.jit.load(path, map_location='cpu').eval()
            width = None

            def run(obs):
                with torch.inference_mode():  # a private copy: published arrays are read-only
                    return module(torch.from_numpy(np.array(obs))).numpy()
            self._run = run
        if isinstance(width, int) and width != self.input_dim:
            raise ValueError(f'{path}: the model takes {width} inputs, the policy has '
                             f'{self.input_dim}')

    def command(self, obs: np.ndarray) -> np.ndarray:
        """Return the model's command for ``obs`` as a float32 numpy array."""
        return self._run(_float32(obs))

    def act(self, obs: np.ndarray, deterministic: bool = True) -> ActOutput:
        """Return the model's action (deterministic only) as an ActOutput."""
        _deterministic(deterministic)
        action = torch.from_numpy(self.command(obs))
        return ActOutput(action, self._zeros, self._zeros, action, torch.zeros_like(action))


class OnnxBundlePolicy:
    """
    Act with a bundle's deployable policy exported in memory, through onnxruntime.

    ``reload(bundle)`` snapshots the bundle's current weights (a frozen
    ``export.DeployablePolicy``); the first export runs at once, later ones
    (weights that arrive while the robot runs) on a worker thread while the
    snapshot acts in torch, so a swap never stalls a control step and every
    step acts with the newest weights. An export whose outputs differ from
    torch by more than ``ONNX_TOLERANCE`` is not used (logged; torch acts).
    """

    #: The deployable policy's output is already the command (its action map is inside).
    outputs_commands = True

    def __init__(self, action_map, num_envs: int, input_dim: int, threads: int = 1,
                 log: Callable[[str], None] = print):
        self.action_map = action_map
        self.input_dim = int(input_dim)
        self.threads = int(threads)
        self.log = log
        self._zeros = torch.zeros(int(num_envs))
        self._lock = threading.Lock()
        # (the newest snapshot in torch, its onnxruntime session or None while building),
        # replaced as one reference so a step never pairs one version's module with
        # another's session.
        self._active = (None, None)
        self.exports = 0       # sessions built and checked
        self.failed = 0        # exports refused (error or mismatch)

    @property
    def onnx_active(self) -> bool:
        """Return True when steps act through onnxruntime (not the torch snapshot)."""
        return self._active[1] is not None

    def reload(self, bundle, background: bool = True) -> None:
        """Act with ``bundle``'s current weights from the next step on (see the class)."""
        from unilab_policy.export import DeployablePolicy
        ac = bundle.actor_critic
        module = DeployablePolicy(ac, bundle.obs_normalizer, self.action_map)
        with self._lock:
            self._active = (module, None)
        if background and self.exports + self.failed:
            threading.Thread(target=self._build, args=(module,), name='onnx-export',
                             daemon=True).start()
        else:
            self._build(module)

    def _build(self, module) -> None:
        from unilab_policy.export import onnx_bytes
        try:
            session = onnx_session(onnx_bytes(module, self.input_dim), self.threads)
            obs = 3.0 * torch.randn(64, self.input_dim,
                                    generator=torch.Generator().manual_seed(0))
            with torch.inference_mode():
                expected = module(obs)
            got = torch.from_numpy(session.run(['action'], {'obs': obs.numpy()})[0])
            diff = float((got - expected).abs().max())
            if not diff <= ONNX_TOLERANCE:
                raise ValueError(f'onnxruntime differs from torch by {diff:.2e} '
                                 f'(> {ONNX_TOLERANCE:.0e})')
        except Exception as exc:  # noqa: BLE001 - any export failure: keep acting in torch
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
        x = _float32(obs)
        if session is not None:
            return session.run(_OUTPUTS, {'obs': x})[0]
        with torch.inference_mode():  # a private copy: published arrays are read-only
            return module(torch.from_numpy(np.array(x))).numpy()

    def act(self, obs: np.ndarray, deterministic: bool = True) -> ActOutput:
        """Return the deployable policy's command (deterministic only) as an ActOutput."""
        _deterministic(deterministic)
        action = torch.from_numpy(self.command(obs))
        return ActOutput(action, self._zeros, self._zeros, action, torch.zeros_like(action))
