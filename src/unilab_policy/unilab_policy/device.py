# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Explicit torch device selection; nothing in the package calls ``.cuda()`` by itself."""

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
