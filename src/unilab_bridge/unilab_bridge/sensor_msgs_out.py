# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The ROS edge of the sensors: numpy readings -> sensor_msgs Imu, PointCloud2 and Image."""

import array

import numpy as np
from sensor_msgs.msg import Image, Imu, PointCloud2, PointField
from unilab_bridge.sensors import POINT_DTYPE

_NUMPY_TO_POINTFIELD = {'<f4': PointField.FLOAT32, '<u2': PointField.UINT16}


def pointcloud_fields():
    """Return the PointField list of POINT_DTYPE (x, y, z, intensity, ring, time)."""
    fields = []
    for name in POINT_DTYPE.names:
        dt, offset = POINT_DTYPE.fields[name][:2]
        fields.append(PointField(name=name, offset=offset,
                                 datatype=_NUMPY_TO_POINTFIELD[dt.str], count=1))
    return fields


_FIELDS = pointcloud_fields()


def _bytes(a: np.ndarray) -> array.array:
    # rclpy checks a uint8[] value element by element unless it is an array('B').
    out = array.array('B')
    out.frombytes(np.ascontiguousarray(a).tobytes())
    return out


def make_pointcloud(stamp, frame_id: str, points: np.ndarray) -> PointCloud2:
    """Build an unorganised PointCloud2 (height 1) from a POINT_DTYPE array."""
    msg = PointCloud2()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.height = 1
    msg.width = int(len(points))
    msg.fields = _FIELDS
    msg.is_bigendian = False
    msg.point_step = POINT_DTYPE.itemsize
    msg.row_step = msg.point_step * msg.width
    msg.is_dense = True  # rays without a return are left out, so there is no NaN point
    msg.data = _bytes(points)
    return msg


def make_imu(stamp, frame_id: str, gyro, accel, quat=None, gyro_var=0.0,
             accel_var=0.0) -> Imu:
    """
    Build an Imu message; ``quat`` is (w, x, y, z) or None.

    Per REP-145 a covariance of all zeros means "unknown", and ``orientation_covariance[0]``
    = -1 means no orientation estimate is provided.
    """
    msg = Imu()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = (
        float(v) for v in gyro)
    msg.linear_acceleration.x, msg.linear_acceleration.y, msg.linear_acceleration.z = (
        float(v) for v in accel)
    if quat is None:
        msg.orientation_covariance[0] = -1.0
    else:
        q = msg.orientation
        q.w, q.x, q.y, q.z = (float(v) for v in quat)
    msg.angular_velocity_covariance[0::4] = [float(gyro_var)] * 3
    msg.linear_acceleration_covariance[0::4] = [float(accel_var)] * 3
    return msg


def make_image(stamp, frame_id: str, rgb: np.ndarray) -> Image:
    """Build an rgb8 Image from an [H, W, 3] uint8 array."""
    msg = Image()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.height, msg.width = int(rgb.shape[0]), int(rgb.shape[1])
    msg.encoding = 'rgb8'
    msg.is_bigendian = 0
    msg.step = 3 * msg.width
    msg.data = _bytes(rgb)
    return msg
