# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Export the deployable policy (frozen normaliser + actor mean + action map) to ONNX / TorchScript.

The exported model's output is the command in joint units: the action map
(``action_map.ActionMap``, e.g. measured position + scale * action) is part of
the exported graph, so a user's own runtime needs nothing but the file.
"""

import copy
import io
import os
from typing import Optional, Union
import warnings

import torch
from torch import nn
from unilab_core.atomic import atomic_path

from .action_map import ActionMap
from .models import ActorCritic
from .normalizer import EmpiricalNormalization
from .onnx_runtime import onnx_session

ONNX_OPSET = 17


class DeployablePolicy(nn.Module):
    """
    ``command = action_map(obs, actor(clip((obs - mean) / std)))``, float32 on CPU.

    A frozen copy, detached from training; without ``action_map`` the command is
    the actor's mean action itself (absolute actions).
    """

    def __init__(self, actor_critic: ActorCritic,
                 normalizer: Optional[EmpiricalNormalization] = None,
                 action_map: Optional[ActionMap] = None):
        """Deep-copy the actor MLP, the normaliser statistics and the map to CPU float32."""
        super().__init__()
        self.actor = copy.deepcopy(actor_critic.actor).to('cpu', torch.float32)
        self.action_map = copy.deepcopy(action_map if action_map is not None else ActionMap(
            'absolute', (), actor_critic.act_dim)).to('cpu')
        obs_dim = actor_critic.obs_dim
        mean = torch.zeros(obs_dim)
        std = torch.ones(obs_dim)
        clip = float('inf')
        if normalizer is not None:
            mean = normalizer.mean.detach().to('cpu', torch.float32)
            std = normalizer.std.detach().to('cpu', torch.float32)
            clip = normalizer.clip
        self.register_buffer('obs_mean', mean.clone())
        self.register_buffer('obs_std', std.clone())
        self.clip = clip
        self.eval()
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Return the deterministic command for raw observations ``[B, obs_dim]``."""
        x = ((obs - self.obs_mean) / self.obs_std).clamp(-self.clip, self.clip)
        return self.action_map(obs, self.actor(x))


#: Model metadata key (ONNX ``metadata_props``; TorchScript extra file ``unilab.json``):
#: a JSON object with the policy node's parameters (network, observation width, action
#: history, actuator range, the training run's ``run`` section with the task) and the
#: task (joint names, command interface, control period, observation layout).
METADATA_KEY = 'unilab.json'


def export_onnx(actor_critic: ActorCritic, normalizer: Optional[EmpiricalNormalization],
                path: Union[str, os.PathLike], obs_dim: int,
                opset: int = ONNX_OPSET, metadata: Optional[dict] = None,
                action_map: Optional[ActionMap] = None) -> DeployablePolicy:
    """
    Write an ONNX model with input ``obs`` [batch, obs_dim] and output ``action``.

    ``action`` is the command in joint units (``action_map`` applied).

    Uses the TorchScript-based exporter (``dynamo=False``): the dynamo exporter needs
    ``onnxscript``, which is not a dependency. ``metadata`` (plain data) is stored as
    JSON under ``METADATA_KEY``. Returns the exported module.
    """
    module = DeployablePolicy(actor_critic, normalizer, action_map)

    def write(tmp):
        data = onnx_bytes(module, obs_dim, opset)
        if metadata is not None:
            import json

            import onnx
            model = onnx.load_from_string(data)
            entry = model.metadata_props.add()
            entry.key, entry.value = METADATA_KEY, json.dumps(metadata)
            data = model.SerializeToString()
        with open(tmp, 'wb') as f:
            f.write(data)

    with atomic_path(path) as tmp:
        write(str(tmp))
    return module


def onnx_bytes(module: DeployablePolicy, obs_dim: int, opset: int = ONNX_OPSET) -> bytes:
    """Return ``module`` as a serialised ONNX model (input ``obs``, output ``action``)."""
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        torch.onnx.export(module, (torch.zeros(1, obs_dim),), buf, dynamo=False,
                          opset_version=opset, input_names=['obs'], output_names=['action'],
                          dynamic_axes={'obs': {0: 'batch'}, 'action': {0: 'batch'}})
    return buf.getvalue()


def export_torchscript(actor_critic: ActorCritic,
                       normalizer: Optional[EmpiricalNormalization],
                       path: Union[str, os.PathLike], obs_dim: int,
                       metadata: Optional[dict] = None,
                       action_map: Optional[ActionMap] = None) -> DeployablePolicy:
    """
    Write a traced TorchScript file (``torch.jit.load`` + ``module(obs)``).

    Returns the exported (eager) module.
    """
    module = DeployablePolicy(actor_critic, normalizer, action_map)

    def write(tmp):
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', DeprecationWarning)
            traced = torch.jit.trace(module, torch.zeros(1, obs_dim))
            extra = {}
            if metadata is not None:
                import json
                extra[METADATA_KEY] = json.dumps(metadata)
            traced.save(tmp, _extra_files=extra)

    with atomic_path(path) as tmp:
        write(str(tmp))
    return module


#: Largest |onnxruntime - torch| an ONNX export may show (``unilab export``, the in-memory
#: export of a deployed policy); anything larger, or NaN, refuses the export.
ONNX_TOLERANCE = 1e-5


@torch.no_grad()
def verify_onnx(model, module: nn.Module, obs_dim: int, n: int = 64, seed: int = 0) -> float:
    """
    Return max |onnxruntime(obs) - module(obs)| on ``n`` random N(0, 3^2) observations.

    ``model`` is an ONNX file path or an onnxruntime session already built.
    """
    session = model if hasattr(model, 'run') else onnx_session(os.fspath(model))
    gen = torch.Generator().manual_seed(seed)
    obs = 3.0 * torch.randn(n, obs_dim, generator=gen)
    (onnx_out,) = session.run(['action'], {'obs': obs.numpy()})
    expected = module.to('cpu').eval()(obs)
    return float((torch.from_numpy(onnx_out) - expected).abs().max())


def read_metadata(path: Union[str, os.PathLike]) -> Optional[dict]:
    """Return the metadata an exported model (``.onnx`` or TorchScript ``.pt``) carries."""
    import json
    path = os.fspath(path)
    if path.endswith('.onnx'):
        import onnx
        model = onnx.load(path, load_external_data=False)
        for entry in model.metadata_props:
            if entry.key == METADATA_KEY:
                return json.loads(entry.value)
        return None
    extra = {METADATA_KEY: ''}
    torch.jit.load(path, map_location='cpu', _extra_files=extra)
    return json.loads(extra[METADATA_KEY]) if extra[METADATA_KEY] else None
