# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Build sensor_msgs messages from arrays (the node edge; used by publishers, tests, bench)."""

from __future__ import annotations

import array

from builtin_interfaces.msg import Time
import numpy as np
from sensor_msgs.msg import PointCloud2, PointField

from unilab_perception.ingest import cloud_parts


def make_cloud(points: np.ndarray, stamp_ns: int, frame_id: str = 'lidar') -> PointCloud2:
    """Return an unorganised (height 1) PointCloud2 carrying a structured array as is."""
    parts = cloud_parts(points)
    msg = PointCloud2()
    msg.header.stamp = Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
    msg.header.frame_id = frame_id
    msg.height, msg.width = 1, int(points.shape[0])
    msg.fields = [PointField(name=n, offset=o, datatype=d, count=c) for n, o, d, c in parts.fields]
    msg.is_bigendian = False
    msg.point_step = parts.point_step
    msg.row_step = parts.point_step * int(points.shape[0])
    msg.data = array.array('B', parts.data)
    msg.is_dense = bool(np.all([np.isfinite(points[a]).all() for a in 'xyz']))
    return msg
