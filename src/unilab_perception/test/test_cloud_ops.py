# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Point-cloud stages on hand-computed clouds and against brute-force references."""

import numpy as np
import pytest
from unilab_perception import cloud_ops as co


def test_roi_mask_half_open_box():
    p = np.array([[0, 0, 0], [1, 0, 0], [0.999, 0.5, -1], [-0.1, 0, 0]], np.float32)
    np.testing.assert_array_equal(co.roi_mask(p, [0, 0, -1], [1, 1, 1]),
                                  [True, False, True, False])


def test_voxel_centroids_hand_computed():
    # origin = min - v/2 = -0.25 on x: x=0 and x=0.1 share voxel 0, x=1 is voxel 2.
    p = np.array([[0, 0, 0], [0.1, 0, 0], [1, 0, 0], [1.0, 0.2, 0]], np.float64)
    out, inv = co.voxel_downsample(p, 0.5, return_inverse=True)
    np.testing.assert_allclose(out, [[0.05, 0, 0], [1.0, 0.1, 0]])
    np.testing.assert_array_equal(inv, [0, 0, 1, 1])
    # Columns after x, y, z (intensity) are averaged per voxel; the voxels stay the same.
    p4 = np.concatenate([p, [[10.0], [20.0], [1.0], [4.0]]], axis=1).astype(np.float32)
    np.testing.assert_allclose(co.voxel_downsample(p4, 0.5),
                               [[0.05, 0, 0, 15.0], [1.0, 0.1, 0, 2.5]], rtol=1e-6)


def test_voxel_matches_unique_reference():
    rng = np.random.default_rng(0)
    p = rng.uniform(-3, 3, (5000, 3)).astype(np.float32)
    fast = co.voxel_downsample(p, 0.4)
    ref = co.voxel_downsample_reference(p, 0.4)
    assert fast.shape == ref.shape
    np.testing.assert_allclose(fast[np.lexsort(fast.T)], ref[np.lexsort(ref.T)], atol=1e-6)


def test_statistical_outliers_hand_computed():
    # k=2 (self + nearest): mean distances 0.5, 0.5, 0.5, 0.5, 48.5.
    # mean 10.1, sample std sqrt(1843.2 / 4) = 21.47, threshold (ratio 1) 31.57.
    p = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0], [100, 0, 0]], np.float64)
    np.testing.assert_allclose(co.knn_mean_distance(p, 2), [0.5, 0.5, 0.5, 0.5, 48.5])
    np.testing.assert_array_equal(co.statistical_outlier_mask(p, 2, 1.0),
                                  [True, True, True, True, False])


def test_knn_exact_against_brute_force_on_uneven_cloud():
    rng = np.random.default_rng(1)
    dense = rng.normal(0, 0.2, (600, 3))
    sparse = rng.uniform(-20, 20, (30, 3))
    p = np.concatenate([dense, sparse])
    np.testing.assert_allclose(co.knn_mean_distance(p, 8), co.knn_mean_distance_reference(p, 8),
                               rtol=1e-12)
    np.testing.assert_array_equal(co.statistical_outlier_mask(p, 8, 2.0),
                                  co.statistical_outlier_mask_reference(p, 8, 2.0))


def test_radius_outliers_hand_computed():
    p = np.array([[0, 0, 0], [0.5, 0, 0], [1.0, 0, 0], [5.0, 0, 0]], np.float64)
    np.testing.assert_array_equal(co.radius_outlier_mask(p, 0.6, 1), [True, True, True, False])
    np.testing.assert_array_equal(co.radius_outlier_mask(p, 0.6, 2),
                                  [False, True, False, False])


def test_radius_against_brute_force():
    rng = np.random.default_rng(2)
    p = rng.uniform(0, 2, (800, 3))
    d = np.linalg.norm(p[:, None] - p[None], axis=2)
    expected = (d <= 0.2).sum(axis=1) - 1 >= 3
    np.testing.assert_array_equal(co.radius_outlier_mask(p, 0.2, 3), expected)


def _yaw(angle):
    return np.stack([np.zeros_like(angle), np.zeros_like(angle), np.sin(angle / 2),
                     np.cos(angle / 2)], axis=-1)


def test_slerp_midpoint_and_quat_rotate():
    q = co.slerp(_yaw(np.array([0.0])), _yaw(np.array([np.pi / 2])), np.array([0.5]))
    np.testing.assert_allclose(q, _yaw(np.array([np.pi / 4])), atol=1e-12)
    np.testing.assert_allclose(co.quat_rotate(_yaw(np.array(np.pi / 2)), np.array([1.0, 0, 0])),
                               [0, 1, 0], atol=1e-12)


def test_deskew_constant_yaw_rate():
    # Sensor yaws at w = 1 rad/s; a fixed world point (1, 0, 0) is seen at time t as
    # R(t)^-1 p = (cos t, -sin t, 0). De-skewed to t_ref = 0 every copy is (1, 0, 0).
    w = 1.0
    t = np.array([0.0, 0.05, 0.1])
    seen = np.stack([np.cos(w * t), -np.sin(w * t), np.zeros(3)], axis=1)
    stamps = np.array([0.0, 0.1])
    quats = _yaw(w * stamps)
    rot = co.interpolate_orientation(stamps, quats, t)
    out = co.deskew(seen, rot, quats[0])
    np.testing.assert_allclose(out, np.tile([1.0, 0, 0], (3, 1)), atol=1e-12)
    # The same from the gyro rate alone.
    out2 = co.deskew(seen, co.gyro_quaternions([0, 0, w], t), [0, 0, 0, 1.0])
    np.testing.assert_allclose(out2, out, atol=1e-12)


def test_invalid_arguments():
    p = np.zeros((3, 3))
    with pytest.raises(ValueError, match='voxel_size'):
        co.voxel_downsample(p, 0.0)
    with pytest.raises(ValueError, match='radius'):
        co.radius_outlier_mask(p, -1.0, 1)
    assert co.voxel_downsample(np.zeros((0, 3)), 0.1).shape == (0, 3)
    with pytest.raises(ValueError, match=r'points \[P, C >= 3\]'):
        co.voxel_downsample(np.zeros((4, 2)), 0.1)
    with pytest.raises(ValueError, match='roi_mask takes points'):
        co.roi_mask(p, [0, 0], [1, 1])
