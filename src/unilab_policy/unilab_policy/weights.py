# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Flat float32 (de)serialisation of a module's state for publishing weights over a topic.

The trainer sends ``flatten_state(bundle)`` (one 1-D float32 tensor + a spec of names and
shapes); the policy node calls ``unflatten_into(bundle, flat, spec)`` between two inference
steps. Every tensor of ``state_dict()`` is included (parameters *and* buffers such as the
normaliser statistics); integer buffers (the normaliser ``count``) travel as float32, which
is exact up to 2**24 and irrelevant for inference.
"""

from typing import List, Tuple, Union

import torch
from torch import nn

Spec = List[Tuple[str, Tuple[int, ...]]]


def _state(module_or_state_dict: Union[nn.Module, dict]) -> dict:
    if isinstance(module_or_state_dict, nn.Module):
        return module_or_state_dict.state_dict()
    return module_or_state_dict


@torch.no_grad()
def flatten_state(module_or_state_dict: Union[nn.Module, dict]) -> Tuple[torch.Tensor, Spec]:
    """Concatenate all state tensors (state_dict order) into one CPU float32 vector."""
    state = _state(module_or_state_dict)
    spec: Spec = []
    parts = []
    for name, tensor in state.items():
        if not isinstance(tensor, torch.Tensor):
            continue
        spec.append((name, tuple(int(s) for s in tensor.shape)))
        parts.append(tensor.detach().reshape(-1).to('cpu', torch.float32))
    flat = torch.cat(parts) if parts else torch.zeros(0)
    return flat, spec


def spec_numel(spec: Spec) -> int:
    """Total number of elements described by ``spec``."""
    total = 0
    for _, shape in spec:
        n = 1
        for s in shape:
            n *= s
        total += n
    return total


@torch.no_grad()
def unflatten_into(module: nn.Module, flat: torch.Tensor, spec: Spec) -> None:
    """
    Copy ``flat`` into ``module``'s parameters/buffers in place (same storage, same device).

    Everything is validated (names, shapes, total length) before the first copy, so a bad
    message raises ``ValueError`` and leaves the module untouched.
    """
    flat = flat.reshape(-1)
    if flat.numel() != spec_numel(spec):
        raise ValueError(f'flat weights have {flat.numel()} elements, spec needs '
                         f'{spec_numel(spec)}')
    state = module.state_dict(keep_vars=True)
    targets = []
    offset = 0
    for name, shape in spec:
        if name not in state:
            raise ValueError(f"weights spec entry '{name}' does not exist in the module")
        dst = state[name]
        if tuple(dst.shape) != tuple(shape):
            raise ValueError(f"weights spec entry '{name}': shape {tuple(shape)} != module "
                             f'{tuple(dst.shape)}')
        n = dst.numel()
        targets.append((dst, flat[offset:offset + n].view(dst.shape)))
        offset += n
    missing = set(state) - {name for name, _ in spec}
    if missing:
        raise ValueError(f'weights spec lacks module entries: {sorted(missing)}')
    for dst, src in targets:
        dst.copy_(src)
