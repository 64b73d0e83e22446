# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Synthetic Velodyne-style scans for tests, the benchmark and the demo publisher (no ROS).

A spinning multi-beam lidar above a ground plane with box obstacles, ray-cast
analytically (plane intersection and the slab test for boxes, Kay & Kajiya
1986), plus range noise and a few spurious returns: the structure of a real
outdoor scan (dense rings near the sensor, sparse far away, vertical walls,
isolated outliers). Fields and types match the velodyne_pointcloud driver:
x, y, z, intensity (float32), ring (uint16), time (float32, seconds from the
start of the sweep).
"""

from __future__ import annotations

import numpy as np

VELODYNE_DTYPE = np.dtype([('x', '<f4'), ('y', '<f4'), ('z', '<f4'), ('intensity', '<f4'),
                           ('ring', '<u2'), ('time', '<f4')])


def make_boxes(rng: np.random.Generator, count: int, extent: float = 15.0) -> np.ndarray:
    """Return ``count`` axis-aligned boxes ``[count, 2, 3]`` (min, max) standing on z = 0."""
    centre = rng.uniform(-extent, extent, (count, 2))
    centre[np.linalg.norm(centre, axis=1) < 3.0] += 4.0  # keep the sensor outside the boxes
    size = rng.uniform([0.4, 0.4, 0.5], [3.0, 3.0, 2.5], (count, 3))
    lo = np.c_[centre - size[:, :2] / 2, np.zeros(count)]
    hi = np.c_[centre + size[:, :2] / 2, size[:, 2]]
    return np.stack([lo, hi], axis=1)


def lidar_scan(num_points: int = 100_000, rings: int = 32, sensor_height: float = 1.8,
               boxes: np.ndarray | None = None, noise: float = 0.01, outliers: float = 0.01,
               sweep_s: float = 0.1, max_range: float = 60.0, seed: int = 0) -> np.ndarray:
    """
    Return one sweep as a structured array with VELODYNE_DTYPE (rays without a hit removed).

    ``num_points`` rays are cast (``rings`` beams from -25 to +15 degrees, as an
    HDL-32E); ``outliers`` is the share of returns replaced by random points.
    """
    rng = np.random.default_rng(seed)
    if boxes is None:
        boxes = make_boxes(rng, 25)
    # About 60 % of an HDL-32E's rays hit something in this scene: cast enough of them,
    # then keep exactly num_points returns (in ring order).
    per_ring = max(int(num_points / 0.55) // rings, 1)
    ring = np.repeat(np.arange(rings), per_ring)
    col = np.tile(np.arange(per_ring), rings)
    azimuth = 2 * np.pi * col / per_ring
    elevation = np.deg2rad(np.linspace(-25.0, 15.0, rings))[ring]
    d = np.stack([np.cos(elevation) * np.cos(azimuth), np.cos(elevation) * np.sin(azimuth),
                  np.sin(elevation)], axis=1)
    origin = np.array([0.0, 0.0, sensor_height])
    # Ground z = 0: t = -h / dz for rays going down.
    t = np.where(d[:, 2] < -1e-6, -sensor_height / np.minimum(d[:, 2], -1e-6), np.inf)
    # Slab test, all rays x all boxes at once: t_near = max_axis(min(t0, t1)).
    with np.errstate(divide='ignore', invalid='ignore'):
        inv = 1.0 / d
        t0 = (boxes[None, :, 0, :] - origin) * inv[:, None, :]
        t1 = (boxes[None, :, 1, :] - origin) * inv[:, None, :]
    t_near = np.nanmax(np.minimum(t0, t1), axis=2)
    t_far = np.nanmin(np.maximum(t0, t1), axis=2)
    hit = (t_near <= t_far) & (t_far > 0)
    t_box = np.where(hit, np.maximum(t_near, 0.0), np.inf).min(axis=1)
    t = np.minimum(t, t_box)
    valid = np.flatnonzero(t < max_range)
    if valid.size > num_points:
        valid = np.sort(rng.choice(valid, num_points, replace=False))
    t = t[valid] + rng.normal(0.0, noise, valid.size)
    xyz = origin + d[valid] * t[:, None]
    xyz[:, 2] -= sensor_height  # points in the sensor frame
    out = np.empty(valid.size, VELODYNE_DTYPE)
    n_out = int(outliers * out.size)
    if n_out:
        idx = rng.choice(out.size, n_out, replace=False)
        xyz[idx] = rng.uniform([-30, -30, -2], [30, 30, 5], (n_out, 3))
    out['x'], out['y'], out['z'] = xyz[:, 0], xyz[:, 1], xyz[:, 2]
    out['intensity'] = rng.uniform(0, 255, out.size)
    out['ring'] = ring[valid]
    out['time'] = (sweep_s * azimuth / (2 * np.pi))[valid]
    return out
