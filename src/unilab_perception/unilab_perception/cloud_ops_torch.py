# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Voxel grid and statistical outlier removal as torch ops (the GPU path of the cloud stages).

Same rules as ``cloud_ops`` (Open3D's), on tensors of any device, so a cloud
stays on the GPU from the voxel grid to the pillar scatter:

* ``voxel_downsample_torch``: voxel index ``floor((p - (min(p) - v/2)) / v)``,
  one centroid per occupied voxel (further columns such as intensity averaged
  with x, y, z; sums in float64), voxels in first-seen order like
  ``cloud_ops.voxel_downsample``, so both paths give the same rows in the
  same order;
* ``knn_mean_distance_torch``: exact k nearest neighbours. On CUDA with
  cupy installed: ``cupyx.scipy.spatial.KDTree`` (an exact k-d tree on the
  GPU; the tensor goes to cupy and back through DLPack, no copy); otherwise
  brute force in query chunks (``torch.cdist`` without the matrix-product
  shortcut, which loses digits, then ``topk``), O(P^2) work. The CPU path
  proper is the numba k-d tree of ``cloud_ops``;
* ``roi_mask_torch``: ``lo <= p < hi`` on every axis, like ``cloud_ops.roi_mask``;
* ``statistical_outlier_mask_torch``: keep a point when its mean distance
  is above 0 and below ``mean + std_ratio * std`` (sample std).

``CloudPipeline`` uses these when its stage device is CUDA (the perception
node's ``encoder.device``: the one device switch) and ``cloud_ops`` otherwise.
"""

from __future__ import annotations

import torch

#: queries per ``cdist`` block (a [chunk, P] float64 distance block: 1024 x 20k = 160 MB)
KNN_CHUNK = 1024


def voxel_downsample_torch(points: torch.Tensor, voxel_size: float,
                           return_inverse: bool = False):
    """Return voxel centroids ``[M, C]`` (input dtype and device); see the module docstring."""
    if voxel_size <= 0:
        raise ValueError(f'voxel_size must be > 0, got {voxel_size}')
    if points.ndim != 2 or points.shape[1] < 3:
        raise ValueError(f'voxel_downsample takes points [P, C >= 3], got {tuple(points.shape)}')
    n = points.shape[0]
    if n == 0:
        empty = points.new_zeros((0, points.shape[1]))
        return (empty, torch.zeros(0, dtype=torch.long, device=points.device)) \
            if return_inverse else empty
    xyz = points[:, :3].double()
    origin = xyz.min(dim=0).values - 0.5 * voxel_size
    extent = torch.floor((xyz.max(dim=0).values - origin) / voxel_size) + 1.0
    if float(extent.prod()) >= 2.0 ** 62:
        raise ValueError(f'voxel grid {extent.long().tolist()} too large for voxel_size '
                         f'{voxel_size}')
    idx = torch.floor((xyz - origin) / voxel_size).long()
    dims = extent.long()
    keys = (idx[:, 0] * dims[1] + idx[:, 1]) * dims[2] + idx[:, 2]
    _, sorted_inverse = torch.unique(keys, return_inverse=True)
    groups = int(sorted_inverse.max()) + 1
    # Renumber the voxels in first-seen order (what the CPU path's hash table gives).
    first = torch.full((groups,), n, dtype=torch.long, device=points.device)
    first.scatter_reduce_(0, sorted_inverse, torch.arange(n, device=points.device), 'amin')
    rank = torch.empty_like(first)
    rank[torch.argsort(first)] = torch.arange(groups, device=points.device)
    inverse = rank[sorted_inverse]
    sums = torch.zeros((groups, points.shape[1]), dtype=torch.float64, device=points.device)
    sums.index_add_(0, inverse, points.double())
    counts = torch.bincount(inverse, minlength=groups)
    out = (sums / counts[:, None]).to(points.dtype)
    return (out, inverse) if return_inverse else out


def roi_mask_torch(points: torch.Tensor, lo, hi) -> torch.Tensor:
    """Return the mask of points ``[P, 3]`` with ``lo <= p < hi`` on every axis (bool)."""
    if points.ndim != 2 or points.shape[1] != 3 or len(lo) != 3 or len(hi) != 3:
        raise ValueError(f'roi_mask takes points [P, 3] and 3-vectors lo, hi; got points '
                         f'{tuple(points.shape)}, lo {list(lo)}, hi {list(hi)}')
    lo_t = torch.as_tensor(lo, dtype=points.dtype, device=points.device)
    hi_t = torch.as_tensor(hi, dtype=points.dtype, device=points.device)
    return ((points >= lo_t) & (points < hi_t)).all(dim=1)


def knn_mean_distance_torch(points: torch.Tensor, k: int,
                            chunk: int = KNN_CHUNK) -> torch.Tensor:
    """Return each point's mean distance to its ``k`` nearest points, itself included (float64)."""
    if k < 1:
        raise ValueError(f'k must be >= 1, got {k}')
    n = points.shape[0]
    if n == 0:
        return torch.zeros(0, dtype=torch.float64, device=points.device)
    k = min(k, n)
    xyz = points[:, :3].double().contiguous()
    if xyz.is_cuda and _cupyx_kdtree() is not None:
        return _knn_mean_kdtree(xyz, k)
    out = torch.empty(n, dtype=torch.float64, device=points.device)
    for s in range(0, n, chunk):
        d = torch.cdist(xyz[s:s + chunk], xyz, compute_mode='donot_use_mm_for_euclid_dist')
        out[s:s + chunk] = d.topk(k, dim=1, largest=False).values.mean(dim=1)
    return out


def _cupyx_kdtree():
    """Return ``cupyx.scipy.spatial.KDTree``, or None where cupy is not installed."""
    try:
        from cupyx.scipy.spatial import KDTree
    except ImportError:
        return None
    return KDTree


def _knn_mean_kdtree(xyz: torch.Tensor, k: int) -> torch.Tensor:
    """Exact k-NN mean distance with cupyx's GPU k-d tree (``xyz`` float64 on CUDA)."""
    import cupy
    pts = cupy.from_dlpack(xyz)
    dist, _ = _cupyx_kdtree()(pts).query(pts, k=k)  # itself included, at distance 0
    dist = dist.reshape(xyz.shape[0], k)
    return torch.from_dlpack(dist.mean(axis=1))


def statistical_outlier_mask_torch(points: torch.Tensor, k: int,
                                   std_ratio: float) -> torch.Tensor:
    """Return the inlier mask by Open3D's statistical rule (bool, on the points' device)."""
    if points.shape[0] < 2:
        return torch.ones(points.shape[0], dtype=torch.bool, device=points.device)
    mean_d = knn_mean_distance_torch(points, k)
    threshold = mean_d.mean() + std_ratio * mean_d.std(unbiased=True)
    return (mean_d > 0) & (mean_d < threshold)
