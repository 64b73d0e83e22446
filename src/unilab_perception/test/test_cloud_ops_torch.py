# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The torch (GPU-path) voxel grid and outlier removal against the CPU path and by hand."""

import numpy as np
import pytest
import torch
from unilab_perception import cloud_ops as co
from unilab_perception.cloud_ops_torch import (knn_mean_distance_torch, roi_mask_torch,
                                               statistical_outlier_mask_torch,
                                               voxel_downsample_torch)
from unilab_perception.synthetic import lidar_scan

DEVICES = ['cpu'] + (['cuda'] if torch.cuda.is_available() else [])


@pytest.mark.parametrize('device', DEVICES)
def test_voxel_hand_computed_same_rows_and_order_as_the_cpu_path(device):
    p = np.array([[1.0, 0.2, 0, 4.0], [0, 0, 0, 10.0], [1, 0, 0, 1.0], [0.1, 0, 0, 20.0]],
                 np.float32)
    out, inv = voxel_downsample_torch(torch.from_numpy(p).to(device), 0.5, return_inverse=True)
    # first seen: the voxel at x=1 (row 0), then the one at x=0
    np.testing.assert_allclose(out.cpu().numpy(), [[1.0, 0.1, 0, 2.5], [0.05, 0, 0, 15.0]],
                               rtol=1e-6)
    np.testing.assert_array_equal(inv.cpu().numpy(), [0, 1, 0, 1])
    ref, ref_inv = co.voxel_downsample(p, 0.5, return_inverse=True)
    np.testing.assert_array_equal(out.cpu().numpy(), ref)
    np.testing.assert_array_equal(inv.cpu().numpy(), ref_inv)


@pytest.mark.parametrize('device', DEVICES)
def test_scan_through_both_paths_gives_the_same_cloud(device):
    scan = lidar_scan(20000, seed=3)
    pts = np.stack([scan['x'], scan['y'], scan['z'], scan['intensity']], axis=1)
    cpu = co.voxel_downsample(pts.astype(np.float32), 0.2)
    gpu = voxel_downsample_torch(torch.from_numpy(pts.astype(np.float32)).to(device), 0.2)
    np.testing.assert_array_equal(gpu.cpu().numpy(), cpu)  # same rows, same order
    mean_cpu = co.knn_mean_distance(cpu[:, :3].astype(np.float64), 10)
    mean_gpu = knn_mean_distance_torch(gpu, 10, chunk=700).cpu().numpy()
    np.testing.assert_allclose(mean_gpu, mean_cpu, rtol=1e-12)
    np.testing.assert_array_equal(
        statistical_outlier_mask_torch(gpu, 10, 2.0).cpu().numpy(),
        co.statistical_outlier_mask(cpu[:, :3].astype(np.float64), 10, 2.0))


@pytest.mark.parametrize('device', DEVICES)
def test_roi_mask_keeps_lo_drops_hi_like_the_cpu_path(device):
    p = np.array([[0, 0, 0], [1, 0, 0], [0.999, 0.5, -1], [-0.001, 0, 0], [0.5, 2, 0]],
                 np.float32)
    lo, hi = [0.0, -1.0, -1.0], [1.0, 1.0, 1.0]
    m = roi_mask_torch(torch.from_numpy(p).to(device), lo, hi).cpu().numpy()
    assert m.tolist() == [True, False, True, False, False]
    np.testing.assert_array_equal(m, co.roi_mask(p, lo, hi))
    with pytest.raises(ValueError, match='3-vectors lo, hi'):
        roi_mask_torch(torch.from_numpy(p), [0.0, 0.0], hi)


def test_statistical_hand_computed_and_edge_cases():
    # k=2: mean distances 0.5 x 4 and 48.5; threshold (ratio 1) 31.57 (see test_cloud_ops)
    p = torch.tensor([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [100, 0, 0]],
                     dtype=torch.float64)
    np.testing.assert_allclose(knn_mean_distance_torch(p, 2).numpy(), [0.5] * 4 + [48.5])
    assert statistical_outlier_mask_torch(p, 2, 1.0).tolist() == [True] * 4 + [False]
    assert statistical_outlier_mask_torch(p[:1], 2, 1.0).tolist() == [True]
    assert knn_mean_distance_torch(p[:0], 3).shape == (0,)
    assert voxel_downsample_torch(p[:0], 0.1).shape == (0, 3)


def test_bad_arguments_name_the_problem():
    p = torch.zeros((4, 3))
    with pytest.raises(ValueError, match='voxel_size must be > 0'):
        voxel_downsample_torch(p, 0.0)
    with pytest.raises(ValueError, match=r'points \[P, C >= 3\], got \(4, 2\)'):
        voxel_downsample_torch(torch.zeros((4, 2)), 0.1)
    with pytest.raises(ValueError, match='k must be >= 1'):
        knn_mean_distance_torch(p, 0)
    with pytest.raises(ValueError, match='too large'):
        voxel_downsample_torch(torch.tensor([[0.0, 0, 0], [1e12, 1e12, 1e12]]), 1e-6)


@pytest.mark.parametrize('stages', [['roi', 'voxel', 'statistical_outlier'],
                                    ['voxel', 'roi', 'radius_outlier', 'statistical_outlier']])
def test_pipeline_torch_stages_give_the_cpu_features(stages):
    from unilab_perception.ingest import read_cloud
    from unilab_perception.messages import make_cloud
    from unilab_perception.params import BevSection, EncoderSection, PointCloudSection
    from unilab_perception.pipeline import CloudPipeline
    cloud_cfg = PointCloudSection(stages=stages, roi_min=[-8, -8, -2], roi_max=[8, 8, 2])
    enc = EncoderSection(device='cpu')
    numba_path = CloudPipeline(cloud_cfg, BevSection(), enc)
    torch_path = CloudPipeline(cloud_cfg, BevSection(), enc, stage_backend='torch')
    assert numba_path.stage_backend == 'numba'  # a CPU device picks the numba kernels
    clouds = [make_cloud(lidar_scan(15000, seed=s), 0, 'env0/lidar') for s in (1, 2)]
    a = [numba_path.process(read_cloud(c)) for c in clouds]
    b = [torch_path.process(read_cloud(c)) for c in clouds]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y.cpu().numpy() if torch.is_tensor(y) else y)
    np.testing.assert_allclose(torch_path.encode(b), numba_path.encode(a), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="stage_backend must be 'torch' or 'numba'"):
        CloudPipeline(cloud_cfg, BevSection(), enc, stage_backend='cupy')
