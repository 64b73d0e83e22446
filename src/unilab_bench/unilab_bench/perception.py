# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench perception``: voxel down-sampling + statistical outlier removal vs Open3D.

On a 100k-point Velodyne-style scan (``unilab_perception.synthetic``: ground,
25 boxes, range noise, 1 % spurious returns) it times UniLab's
``voxel_downsample`` + ``statistical_outlier_mask`` and Open3D's
``voxel_down_sample`` + ``remove_statistical_outlier`` with the same
parameters, in the same run, and checks that they agree (point counts,
centroids). Without Open3D (``pip install -r requirements-bench.txt``) the
baseline is UniLab's plain numpy reference (np.unique + chunked brute-force
k-NN). It also measures the perception node's frame latency: from a
PointCloud2 entering the node's callback to the observation published (ingest,
validation, stages, pillar encoder, assembly), on a real node in this process.
"""

from __future__ import annotations

import platform

import numpy as np
from unilab_bench.timing import median_ms
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_perception.cloud_ops import (_statistical_rule, statistical_outlier_mask,
                                         voxel_downsample, voxel_downsample_reference)
from unilab_perception.synthetic import lidar_scan


def _sorted_rows(a: np.ndarray) -> np.ndarray:
    return a[np.lexsort(a.T[::-1])]


def _numpy_baseline(xyz, voxel, k, ratio):
    v = voxel_downsample_reference(xyz, voxel).astype(np.float64)
    mean_d = np.empty(v.shape[0])
    for s in range(0, v.shape[0], 512):
        d = np.linalg.norm(v[s:s + 512, None, :] - v[None, :, :], axis=2)
        mean_d[s:s + 512] = np.partition(d, k - 1, axis=1)[:, :k].mean(axis=1)
    return v, v[_statistical_rule(mean_d, ratio)]


def _frame_latency(frames: int, num_points: int, seed: int) -> list[float]:
    import rclpy
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState
    from unilab_perception.messages import make_cloud
    from unilab_perception.perception_node import PerceptionNode

    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=[])
    node = PerceptionNode(context=ctx, parameter_overrides=[
        Parameter('num_envs', value=1), Parameter('joint_names', value=['j0']),
        Parameter('extras_dim', value=1), Parameter('sensors.pointcloud', value=True),
        Parameter('encoder.device', value='cpu')])
    try:
        scans = [lidar_scan(num_points, seed=seed + i) for i in range(4)]
        for i in range(frames + 3):
            stamp = (i + 1) * 100_000_000
            js = JointState()
            js.header.stamp.sec, js.header.stamp.nanosec = divmod(stamp, 10**9)
            js.name, js.position, js.velocity = ['env0/j0'], [0.0], [0.0]
            node._on_joint_state(node.js_input.from_standard(js))
            node._on_task_state(read_batch(make_batch(
                'task_state', i, {'extras': np.zeros((1, 1))}, stamp_ns=stamp)))
            node._on_cloud(make_cloud(scans[i % 4], stamp, 'env0/lidar'))
        assert node.counters['published'] == frames + 3, node.counters
        return node.diagnostics['frame_latency_ms'][3:]  # first frames compile / warm up
    finally:
        node.destroy_node()
        ctx.try_shutdown()


def _gpu_path(xyz, voxel, k, ratio, repeats, u_vox, u_kept) -> dict:
    """Time the torch stages on CUDA (the GPU path), checked against the CPU path's output."""
    import torch
    if not torch.cuda.is_available():
        return {'gpu_voxel_outlier_ms': None,
                'gpu_note': 'no CUDA device: the torch stages (cloud_ops_torch) are the GPU '
                            'path; on a CPU the numba k-d tree path above serves'}
    from unilab_perception.cloud_ops_torch import (statistical_outlier_mask_torch,
                                                   voxel_downsample_torch)
    dev = torch.device('cuda')

    def gpu():
        p = torch.from_numpy(xyz).to(dev, non_blocking=True)
        v = voxel_downsample_torch(p, voxel)
        kept = v[statistical_outlier_mask_torch(v, k, ratio)]
        torch.cuda.synchronize()
        return v, kept

    v, kept = gpu()
    return {'gpu_voxel_outlier_ms': round(median_ms(gpu, repeats), 2),
            'gpu_device': torch.cuda.get_device_name(0),
            'gpu_voxels': int(v.shape[0]), 'gpu_kept': int(kept.shape[0]),
            'gpu_agrees_with_cpu': bool(
                v.shape[0] == u_vox.shape[0] and kept.shape[0] == u_kept.shape[0]
                and np.array_equal(kept.cpu().numpy(), u_kept))}


def bench_perception(args) -> dict:
    """Time voxel + statistical outlier removal vs Open3D, and the node's frame latency."""
    from unilab_perception.synthetic import lidar_scan
    num_points = args.steps or 100_000
    voxel, k, ratio = 0.1, 20, 2.0
    repeats = max(3, args.repeats)
    scan = lidar_scan(num_points, seed=args.seed)
    xyz = np.stack([scan['x'], scan['y'], scan['z']], axis=1).astype(np.float64)

    def unilab():
        v = voxel_downsample(xyz, voxel)
        return v, np.compress(statistical_outlier_mask(v, k, ratio), v, axis=0)

    out = {'benchmark': 'perception', 'points': int(xyz.shape[0]), 'voxel_size': voxel,
           'sor_k': k, 'sor_std_ratio': ratio, 'repeats': repeats}
    u_vox, u_kept = unilab()
    out['unilab_voxel_outlier_ms'] = round(median_ms(unilab, repeats), 2)
    out['unilab_voxels'], out['unilab_kept'] = int(u_vox.shape[0]), int(u_kept.shape[0])
    try:
        import open3d as o3d
    except ImportError as exc:
        out['open3d_voxel_outlier_ms'] = None
        out['baseline'] = 'numpy reference'
        out['open3d_note'] = (f'open3d not importable ({exc}); pip install -r '
                              'requirements-bench.txt (open3d-cpu needs libusb-1.0 on Linux)')
        b_vox, b_kept = _numpy_baseline(xyz, voxel, k, ratio)
        out['numpy_reference_voxel_outlier_ms'] = round(
            median_ms(lambda: _numpy_baseline(xyz, voxel, k, ratio), 1), 2)
    else:
        pc = o3d.geometry.PointCloud()
        pc.points = o3d.utility.Vector3dVector(xyz)

        def open3d():
            d = pc.voxel_down_sample(voxel)
            kept, _ = d.remove_statistical_outlier(k, ratio)
            return np.asarray(d.points), np.asarray(kept.points)

        b_vox, b_kept = open3d()
        out['baseline'] = f'open3d {o3d.__version__}'
        out['open3d_voxel_outlier_ms'] = round(median_ms(open3d, repeats), 2)
        out['ratio_unilab_vs_open3d'] = round(
            out['unilab_voxel_outlier_ms'] / out['open3d_voxel_outlier_ms'], 3)
    out['baseline_voxels'], out['baseline_kept'] = int(b_vox.shape[0]), int(b_kept.shape[0])
    out['voxel_count_rel_diff'] = abs(u_vox.shape[0] - b_vox.shape[0]) / b_vox.shape[0]
    out['kept_count_rel_diff'] = abs(u_kept.shape[0] - b_kept.shape[0]) / b_kept.shape[0]
    if u_vox.shape == b_vox.shape:
        out['centroid_max_abs_diff_m'] = float(
            np.abs(_sorted_rows(u_vox) - _sorted_rows(b_vox)).max())
    out['agree'] = bool(out['voxel_count_rel_diff'] <= 0.01 and out['kept_count_rel_diff'] <= 0.01
                        and out.get('centroid_max_abs_diff_m', 1.0) <= 1e-6)
    out.update(_gpu_path(xyz, voxel, k, ratio, repeats, u_vox, u_kept))
    lat = _frame_latency(max(10, repeats), num_points, args.seed)
    out['frames'] = len(lat)
    out['frame_latency_p50_ms'] = round(float(np.percentile(lat, 50)), 2)
    out['frame_latency_p99_ms'] = round(float(np.percentile(lat, 99)), 2)
    out['frame_stages'] = 'ingest+validate, roi, voxel 0.1, statistical outlier, pillar encoder'
    out['machine'] = f'{platform.machine()} {platform.python_version()}'
    return out
