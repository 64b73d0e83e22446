# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Running mean / variance observation normaliser (rsl_rl ``EmpiricalNormalization``)."""

from typing import Optional

import torch
from torch import nn


class EmpiricalNormalization(nn.Module):
    """
    Normalise inputs with running statistics and clip the result to ``[-clip, clip]``.

    ``mean``, ``var`` (population variance) and ``count`` are registered buffers, so they
    follow ``.to(device)`` and appear in ``state_dict()``. ``count`` is int64 so a later
    ``.float()`` / ``.half()`` of the module does not touch it. Statistics change only via
    ``update()``, never in ``forward()``; ``frozen`` (or reaching ``until`` samples) turns
    ``update()`` into a no-op.
    """

    def __init__(self, shape, eps: float = 1e-8, clip: float = 10.0,
                 until: Optional[int] = None):
        """Create empty statistics for inputs whose trailing shape is ``shape``."""
        super().__init__()
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        self.eps = float(eps)
        self.clip = float(clip)
        self.until = until
        self.frozen = False
        self.register_buffer('mean', torch.zeros(shape))
        self.register_buffer('var', torch.ones(shape))
        self.register_buffer('count', torch.zeros((), dtype=torch.long))

    @property
    def std(self) -> torch.Tensor:
        """Return the std used for normalisation, ``sqrt(var + eps)``."""
        return torch.sqrt(self.var + self.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return ``clip((x - mean) / sqrt(var + eps), -clip, clip)``."""
        y = (x - self.mean) / torch.sqrt(self.var + self.eps)
        return y.clamp(-self.clip, self.clip)

    def freeze(self) -> None:
        """Stop updating the statistics."""
        self.frozen = True

    def unfreeze(self) -> None:
        """Resume updating the statistics."""
        self.frozen = False

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """
        Merge a batch ``x`` of shape ``[..., *shape]`` into the running statistics.

        Chan et al. parallel update (the batched form of Welford), computed in float64:
            delta = mean_b - mean_a,  n = n_a + n_b
            mean  = mean_a + delta * n_b / n
            M2    = var_a * n_a + var_b * n_b + delta^2 * n_a * n_b / n,  var = M2 / n
        """
        if self.frozen or (self.until is not None and int(self.count) >= self.until):
            return
        x = x.detach().reshape(-1, *self.mean.shape).to(torch.float64)
        n_b = x.shape[0]
        if n_b == 0:
            return
        n_a = self.count.to(torch.float64)
        n = n_a + n_b
        mean_b = x.mean(0)
        var_b = x.var(0, unbiased=False)
        mean_a = self.mean.to(torch.float64)
        delta = mean_b - mean_a
        new_mean = mean_a + delta * (n_b / n)
        m2 = self.var.to(torch.float64) * n_a + var_b * n_b + delta.square() * (n_a * n_b / n)
        self.mean.copy_(new_mean)
        self.var.copy_(m2 / n)
        self.count += n_b
