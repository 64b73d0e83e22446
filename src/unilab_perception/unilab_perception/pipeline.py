# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Point-cloud and image paths from a decoded message to per-env features (no ROS).

``CloudPipeline.process`` runs the configured CPU stages on one cloud and
returns ``[P, 4]`` (x, y, z, intensity); ``encode`` runs the pillar encoder
(or builds the BEV height map, ``bev.output: height_map``) on one cloud per
env in a single batch on the configured device.
``ImagePipeline`` does the same for images: undistortion and ROI crop on the
CPU, then one batched CNN pass.
"""

from __future__ import annotations

import numpy as np
import torch

from unilab_perception import cloud_ops
from unilab_perception.cloud_ops_torch import (roi_mask_torch, statistical_outlier_mask_torch,
                                               voxel_downsample_torch)
from unilab_perception.encoders import (BevGrid, ImageEncoder, pillar_height_map, PillarEncoder,
                                        resolve_device)
from unilab_perception.image_ops import crop, UndistortMap
from unilab_perception.ingest import check_values, cloud_field, cloud_points, InvalidMessage
from unilab_perception.params import (BevSection, EncoderSection, ImageSection,
                                      PointCloudSection)


class CloudPipeline:
    """
    Configured stages + batched pillar encoder.

    On a CUDA device (``encoder.device``, the one switch) the voxel grid, ROI
    crop and statistical outlier removal run as torch ops on the GPU
    (``cloud_ops_torch``) and the cloud stays there for the pillar scatter;
    everywhere else they are the numba kernels of ``cloud_ops``. Radius
    outlier removal and de-skew always run on the CPU. ``stage_backend``
    (``'torch'`` / ``'numba'``) overrides the choice (tests run the torch
    path on the CPU).
    """

    def __init__(self, cloud: PointCloudSection, bev: BevSection, encoder: EncoderSection,
                 stage_backend: str | None = None):
        self.cfg = cloud
        self.device = resolve_device(encoder.device)
        if stage_backend is None:
            stage_backend = 'torch' if self.device.type == 'cuda' else 'numba'
        if stage_backend not in ('torch', 'numba'):
            raise ValueError(f"stage_backend must be 'torch' or 'numba', got `{stage_backend}`")
        self.stage_backend = stage_backend
        torch.manual_seed(encoder.seed)
        grid = BevGrid(tuple(bev.x_range), tuple(bev.y_range), bev.pillar_size)
        self.grid = grid
        self.output = bev.output
        if bev.output == 'height_map':  # the policy learns on the grid: no encoder here
            self.encoder = None
            self.feature_dim = 2 * grid.shape[0] * grid.shape[1]
        else:
            self.encoder = PillarEncoder(grid, 4, bev.channels, bev.feature_dim).to(self.device)
            self.encoder.eval()
            self.feature_dim = bev.feature_dim

    def _dev(self, pts):
        return pts if torch.is_tensor(pts) else torch.from_numpy(pts).to(self.device)

    @staticmethod
    def _host(pts):
        return pts.cpu().numpy() if torch.is_tensor(pts) else pts

    def process(self, cloud: np.ndarray, point_rotation=None):
        """
        Return the cloud after the stages as ``[P, 4]`` float32 (x, y, z, intensity).

        A numpy array, or with the torch stage backend a tensor on the device
        once a torch stage ran (``encode`` takes either).

        ``point_rotation(times) -> (quats [P, 4], reference quat [4])`` supplies
        the IMU rotation for the ``deskew`` stage (``times``: the points' ``time``
        field, s); without it ``deskew`` is skipped.

        Raises InvalidMessage for an unusable cloud, including one a stage
        cannot process (e.g. a voxel grid too large for int64 keys).
        """
        try:
            return self._stages(cloud, point_rotation)
        except (ValueError, OverflowError, MemoryError) as exc:
            if isinstance(exc, InvalidMessage):
                raise
            raise InvalidMessage('stage', f'{type(exc).__name__}: {exc}') from None

    def _stages(self, cloud: np.ndarray, point_rotation):
        c = self.cfg
        # One [P, 4] array through every stage: the voxel means average the
        # intensity with the coordinates, and each mask filters both at once.
        pts, keep = cloud_points(cloud, 'intensity', c.nonfinite)
        gpu = self.stage_backend == 'torch'
        for stage in c.stages:
            if stage == 'deskew':
                if point_rotation is not None:
                    times = check_values(cloud_field(cloud, 'time', keep, default=0.0),
                                         'time', 'nonfinite_time')
                    quats, ref = point_rotation(times.astype(np.float64))
                    pts = self._host(pts)  # our own array either way: written in place
                    pts[:, :3] = check_values(cloud_ops.deskew(pts[:, :3], quats, ref),
                                              'de-skewed points', 'nonfinite_deskew')
                continue
            if stage == 'voxel':
                if pts.shape[0]:
                    pts = (voxel_downsample_torch(self._dev(pts), c.voxel_size) if gpu
                           else cloud_ops.voxel_downsample(pts, c.voxel_size))
                continue
            if gpu and stage in ('roi', 'statistical_outlier'):
                pts = self._dev(pts)
                if stage == 'roi':
                    m = roi_mask_torch(pts[:, :3], c.roi_min, c.roi_max)
                else:
                    m = statistical_outlier_mask_torch(pts[:, :3], c.sor_k, c.sor_std_ratio)
                pts = pts[m]
                continue
            pts = self._host(pts)
            if stage == 'roi':
                m = cloud_ops.roi_mask(pts[:, :3], c.roi_min, c.roi_max)
            elif stage == 'statistical_outlier':
                m = cloud_ops.statistical_outlier_mask(pts[:, :3], c.sor_k, c.sor_std_ratio)
            else:
                m = cloud_ops.radius_outlier_mask(pts[:, :3], c.radius, c.radius_min_neighbors)
            pts = np.compress(m, pts, axis=0)  # 10x a boolean row index here
        return pts

    def encode(self, clouds: list) -> np.ndarray:
        """
        Return ``[len(clouds), feature_dim]`` float32 (one batch, one device).

        The pillar encoder's features, or with ``bev.output: height_map`` the
        flattened ``[2, H, W]`` grid of :func:`pillar_height_map`.
        """
        sizes = [c.shape[0] for c in clouds]
        if any(torch.is_tensor(c) for c in clouds):
            pts = torch.cat([self._dev(c) for c in clouds], dim=0).to(self.device)
        else:
            pts = torch.from_numpy(np.concatenate(clouds, axis=0)).to(self.device)
        batch = torch.repeat_interleave(torch.arange(len(clouds)),
                                        torch.tensor(sizes)).to(self.device)
        with torch.inference_mode():
            if self.output == 'height_map':
                feats = pillar_height_map(pts, batch, len(clouds), self.grid).flatten(1)
            else:
                feats = self.encoder(pts, batch, len(clouds))
        return feats.cpu().numpy().astype(np.float32)


class ImagePipeline:
    """Configured image stages (undistortion, ROI crop, scaling to 0..1) + batched CNN."""

    def __init__(self, image: ImageSection, encoder: EncoderSection):
        self.cfg = image
        self.device = resolve_device(encoder.device)
        torch.manual_seed(encoder.seed)
        self.encoder = ImageEncoder(image.channels, image.feature_dim).to(self.device)
        self.encoder.eval()
        self.feature_dim = image.feature_dim
        self.undistort = None
        if image.camera_k:  # the map folds in the ROI: only kept pixels are computed
            k = np.asarray(image.camera_k, np.float64).reshape(3, 3)
            self.undistort = UndistortMap((image.width, image.height), k,
                                          image.camera_d or None,
                                          roi=tuple(image.roi) if image.roi else None)

    def process(self, image: np.ndarray) -> np.ndarray:
        """
        Return one image ``[H, W, C]`` as ``[C, h, w]`` float32 in 0..1 after the stages.

        Raises InvalidMessage when its size or channel count is not the configured one.
        Integer images are scaled by their type's maximum, float images are taken as is.
        """
        c = self.cfg
        h, w, ch = image.shape
        if (w, h) != (c.width, c.height):
            raise InvalidMessage('size', f'image is {w}x{h}, image.width x image.height is '
                                 f'{c.width}x{c.height}')
        if ch != c.channels:
            raise InvalidMessage('channels', f'image has {ch} channels, image.channels is '
                                 f'{c.channels}')
        scale = (np.float32(1.0 / np.iinfo(image.dtype).max)
                 if np.issubdtype(image.dtype, np.integer) else np.float32(1.0))
        if self.undistort is not None:
            image = self.undistort(image)
        elif c.roi:
            image = crop(image, *c.roi)
        with np.errstate(over='ignore', invalid='ignore'):
            out = image.astype(np.float32) * scale
        check_values(out, 'pixels')
        return np.ascontiguousarray(out.transpose(2, 0, 1))

    def encode(self, images: list[np.ndarray]) -> np.ndarray:
        """Return ``[len(images), feature_dim]`` float32 features (one batch, one device)."""
        batch = torch.from_numpy(np.stack(images)).to(self.device)
        with torch.inference_mode():
            feats = self.encoder(batch)
        return feats.cpu().numpy().astype(np.float32)
