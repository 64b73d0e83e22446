# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Explicit torch device selection; nothing in the package calls ``.cuda()`` by itself."""

from typing import Callable

import torch


def resolve_device(name: str = 'auto') -> torch.device:
    """
    Turn a configured device name into a ``torch.device``.

    ``'auto'`` picks ``cuda`` when a CUDA device is visible and ``cpu`` otherwise. Any
    explicit CUDA name (``'cuda'``, ``'cuda:1'``) raises ``ValueError`` when CUDA is not
    available, instead of failing later inside the first kernel launch.
    """
    name = (name or 'auto').strip().lower()
    if name == 'auto':
        return torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        raise ValueError(f"unknown device '{name}': expected 'auto', 'cpu' or 'cuda[:i]'") from exc
    if device.type == 'cuda':
        if not torch.cuda.is_available():
            raise ValueError(
                f"device '{name}' requested but CUDA is not available "
                f"(torch {torch.__version__}); use device:='cpu' or 'auto'")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(
                f"device '{name}' requested but only {torch.cuda.device_count()} "
                'CUDA device(s) are visible')
    return device


def setup_device(name: str, torch_threads: int, memory_pool_ratio: float | None = None,
                 log: Callable[[str], None] = print) -> torch.device:
    """
    Resolve the device and prepare it for a process that runs the policy or the trainer.

    On CPU: ``torch_threads`` intra-op threads. On CUDA with ``memory_pool_ratio``
    (one node per process reserves: the trainer, which owns the big tensors):
    that share of the free device memory is allocated once and freed, so torch's
    caching allocator keeps it and later rollout/update tensors do not hit
    cudaMalloc mid-training. Raises ValueError for an unusable device name.
    """
    device = resolve_device(name)
    if device.type == 'cpu':
        torch.set_num_threads(torch_threads)
        if memory_pool_ratio is not None:
            log('gpu.memory_pool_ratio skipped: device is CPU')
    elif memory_pool_ratio is not None:
        free, total = torch.cuda.mem_get_info(device)
        nbytes = int(free * memory_pool_ratio)
        torch.empty(nbytes, dtype=torch.uint8, device=device)  # freed at once, kept cached
        log(f'reserved {nbytes / 2**30:.2f} GiB of {total / 2**30:.2f} GiB on {device} '
            f'(gpu.memory_pool_ratio={memory_pool_ratio})')
    return device
