# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Batched torch encoders for the policy observation (no ROS).

- :class:`PillarEncoder`: PointPillars' pillar feature net (Lang et al. 2019,
  arXiv:1812.05784, sec. 2.1): each point is decorated with its offset from
  its pillar's mean and from the pillar centre, a shared linear layer + ReLU
  lifts it, a max over the pillar's points gives the pillar feature, and the
  pillars are scattered into a BEV grid ``[B, C, H, W]``. Unlike the paper's
  dense ``[P, N, D]`` tensor with a points-per-pillar cap, the max is a
  ``scatter_reduce`` over all points, so no point is dropped and there is no
  per-point Python. A small strided CNN + global pooling gives ``[B, F]``.
- :class:`ImageEncoder`: three strided convolutions + global pooling.
- :class:`JointHistoryEncoder`: 1-D convolution over time (or a GRU) on the
  last T joint readings ``[B, T, D]``.

- :func:`pillar_height_map`: the BEV grid without weights (occupancy and
  highest z per pillar), for a policy that learns its own CNN on the grid.

All run on one device chosen by :func:`resolve_device` (``auto``: CUDA when
present). The encoders' weights are seeded and not trained: they are fixed
random features (see docs/perception.md); ``bev.output: height_map`` hands
the grid itself to the policy instead.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn


def resolve_device(name: str = 'auto') -> torch.device:
    """Return the torch device for ``auto`` / ``cpu`` / ``cuda`` (the one device switch)."""
    if name == 'auto':
        return torch.device('cuda' if torch.cuda.is_available() else 'cpu')
    if name == 'cuda' and not torch.cuda.is_available():
        raise ValueError('device `cuda` requested but torch sees no CUDA device')
    return torch.device(name)


@dataclasses.dataclass(frozen=True)
class BevGrid:
    """Bird's-eye-view grid: x and y ranges (m) and the pillar edge length (m)."""

    x_range: tuple[float, float] = (-10.0, 10.0)
    y_range: tuple[float, float] = (-10.0, 10.0)
    pillar_size: float = 0.5

    @property
    def shape(self) -> tuple[int, int]:
        """Return (H, W) = (cells along y, cells along x)."""
        h = round((self.y_range[1] - self.y_range[0]) / self.pillar_size)
        w = round((self.x_range[1] - self.x_range[0]) / self.pillar_size)
        return int(h), int(w)


def pillar_index(xyz: torch.Tensor, batch: torch.Tensor, grid: BevGrid):
    """
    Return ``(flat pillar index [P'], keep [P])`` for points inside the grid.

    The flat index is ``b * H * W + iy * W + ix``.
    """
    h, w = grid.shape
    ix = torch.floor((xyz[:, 0] - grid.x_range[0]) / grid.pillar_size).long()
    iy = torch.floor((xyz[:, 1] - grid.y_range[0]) / grid.pillar_size).long()
    keep = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
    return batch[keep] * (h * w) + iy[keep] * w + ix[keep], keep


def scatter_max(values: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    """Return ``out [size, C]`` with the per-index max of ``values [P, C]`` (0 where empty)."""
    out = torch.zeros(size, values.shape[1], dtype=values.dtype, device=values.device)
    return out.scatter_reduce_(0, index[:, None].expand_as(values), values, 'amax',
                               include_self=False)


def pillar_height_map(points: torch.Tensor, batch: torch.Tensor, batch_size: int,
                      grid: BevGrid) -> torch.Tensor:
    """
    Return the BEV height map ``[B, 2, H, W]`` of the points ``[P, >= 3]`` (no weights).

    Channel 0 is 1 where a pillar holds a point, channel 1 the highest z in
    it (0 where empty). Row ``iy``, column ``ix`` as in :func:`pillar_index`.
    This is the grid the policy's own CNN learns on (``bev.output: height_map``).
    """
    h, w = grid.shape
    cells = batch_size * h * w
    pillar, keep = pillar_index(points[:, :3], batch, grid)
    z = points[keep, 2:3]
    out = torch.zeros(cells, 2, dtype=points.dtype, device=points.device)
    out[pillar, 0] = 1.0
    out[:, 1:2] = scatter_max(z, pillar, cells)
    return out.view(batch_size, h, w, 2).permute(0, 3, 1, 2)


class PillarEncoder(nn.Module):
    """Point clouds of a batch -> BEV pillar features -> ``[B, out_dim]``."""

    def __init__(self, grid: BevGrid, in_features: int = 4, channels: int = 16,
                 out_dim: int = 32):
        super().__init__()
        self.grid = grid
        # Point decoration: raw features + (x, y, z) - pillar mean + (x, y) - pillar centre.
        self.point_net = nn.Sequential(nn.Linear(in_features + 5, channels), nn.ReLU())
        self.channels = channels
        self.bev_net = nn.Sequential(
            nn.Conv2d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, out_dim))
        self.out_dim = out_dim

    def bev(self, points: torch.Tensor, batch: torch.Tensor, batch_size: int) -> torch.Tensor:
        """Return the scattered BEV pseudo-image ``[B, C, H, W]`` for points ``[P, F]``."""
        g = self.grid
        h, w = g.shape
        cells = batch_size * h * w
        pillar, keep = pillar_index(points[:, :3], batch, g)
        pts = points[keep]
        ones = torch.ones(pts.shape[0], 1, dtype=pts.dtype, device=pts.device)
        count = torch.zeros(cells, 1, dtype=pts.dtype, device=pts.device).index_add_(
            0, pillar, ones)
        mean = torch.zeros(cells, 3, dtype=pts.dtype, device=pts.device).index_add_(
            0, pillar, pts[:, :3]) / count.clamp(min=1)
        cell = pillar % (h * w)
        centre = torch.stack([(cell % w).to(pts.dtype) + 0.5, (cell // w).to(pts.dtype) + 0.5],
                             dim=1) * g.pillar_size
        centre = centre + torch.tensor([g.x_range[0], g.y_range[0]], dtype=pts.dtype,
                                       device=pts.device)
        decorated = torch.cat([pts, pts[:, :3] - mean[pillar], pts[:, :2] - centre], dim=1)
        feats = self.point_net(decorated)
        bev = scatter_max(feats, pillar, cells)
        return bev.view(batch_size, h, w, self.channels).permute(0, 3, 1, 2)

    def forward(self, points: torch.Tensor, batch: torch.Tensor, batch_size: int):
        """Return ``[B, out_dim]`` features."""
        return self.bev_net(self.bev(points, batch, batch_size))


class ImageEncoder(nn.Module):
    """Images ``[B, C, H, W]`` (float, 0..1) -> ``[B, out_dim]``."""

    def __init__(self, in_channels: int = 3, out_dim: int = 32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(in_channels, 16, 5, stride=2, padding=2), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, out_dim))
        self.out_dim = out_dim

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Return ``[B, out_dim]`` features."""
        return self.net(images)


class JointHistoryEncoder(nn.Module):
    """Joint history ``[B, T, D]`` -> ``[B, out_dim]`` by 1-D conv over time or a GRU."""

    def __init__(self, in_dim: int, history: int, out_dim: int = 32, kind: str = 'conv1d'):
        super().__init__()
        if kind not in ('conv1d', 'gru'):
            raise ValueError(f'kind must be `conv1d` or `gru`, got `{kind}`')
        self.kind = kind
        self.out_dim = out_dim
        if kind == 'gru':
            self.gru = nn.GRU(in_dim, out_dim, batch_first=True)
        else:
            kernel = min(3, history)
            self.net = nn.Sequential(
                nn.Conv1d(in_dim, out_dim, kernel), nn.ReLU(),
                nn.AdaptiveMaxPool1d(1), nn.Flatten())

    def forward(self, history: torch.Tensor) -> torch.Tensor:
        """Return ``[B, out_dim]`` features; ``history`` is oldest first."""
        if self.kind == 'gru':
            _, h = self.gru(history)
            return h[-1]
        return self.net(history.transpose(1, 2))
