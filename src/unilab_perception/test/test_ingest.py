# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Message -> array conversions against messages packed byte by byte with struct."""

import array
import struct

import numpy as np
import pytest
from sensor_msgs.msg import Image, Imu, PointCloud2, PointField
from unilab_perception.ingest import (
    cloud_field, cloud_parts, cloud_points, cloud_xyz, InvalidMessage, read_cloud, read_image,
    read_imu)
from unilab_perception.messages import make_cloud
from unilab_perception.synthetic import VELODYNE_DTYPE

# Velodyne layout as velodyne_pointcloud publishes it: 4 floats, a pad to 16,
# ring (uint16) at 20... here with explicit padding to exercise offsets.
POINTS = [(1.0, 2.0, 3.0, 10.0, 5, 0.01), (-1.5, 0.25, 0.5, 200.0, 31, 0.09)]


def _velodyne_msg(points=POINTS, point_step=32, row_pad=0, endian='<'):
    fields = [PointField(name='x', offset=0, datatype=7, count=1),
              PointField(name='y', offset=4, datatype=7, count=1),
              PointField(name='z', offset=8, datatype=7, count=1),
              PointField(name='intensity', offset=16, datatype=7, count=1),
              PointField(name='ring', offset=20, datatype=4, count=1),
              PointField(name='time', offset=24, datatype=7, count=1)]
    data = b''
    for x, y, z, i, r, t in points:
        p = bytearray(point_step)
        struct.pack_into(endian + 'fff', p, 0, x, y, z)
        struct.pack_into(endian + 'f', p, 16, i)
        struct.pack_into(endian + 'H', p, 20, r)
        struct.pack_into(endian + 'f', p, 24, t)
        data += bytes(p)
    msg = PointCloud2()
    msg.height, msg.width = 1, len(points)
    msg.fields = fields
    msg.is_bigendian = endian == '>'
    msg.point_step = point_step
    msg.row_step = point_step * len(points) + row_pad
    msg.data = array.array('B', data + bytes(row_pad))
    return msg


@pytest.mark.parametrize('point_step,row_pad,endian', [(28, 0, '<'), (32, 0, '<'),
                                                       (32, 8, '<'), (32, 0, '>')])
def test_read_velodyne_cloud_any_layout(point_step, row_pad, endian):
    cloud = read_cloud(_velodyne_msg(point_step=point_step, row_pad=row_pad, endian=endian))
    assert cloud.shape == (2,)
    np.testing.assert_array_equal(cloud['ring'], [5, 31])
    np.testing.assert_allclose(cloud['time'], [0.01, 0.09], rtol=1e-6)
    xyz, keep = cloud_xyz(cloud)
    np.testing.assert_array_equal(xyz, [[1, 2, 3], [-1.5, 0.25, 0.5]])
    np.testing.assert_array_equal(cloud_field(cloud, 'intensity'), [10, 200])
    assert keep.all()


def test_count_gt_one_and_round_trip():
    dtype = np.dtype([('x', '<f4'), ('y', '<f4'), ('z', '<f4'), ('rgb', 'u1', (3,)),
                      ('d', '<f8')])
    pts = np.zeros(3, dtype)
    pts['x'] = [1, 2, 3]
    pts['rgb'] = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    pts['d'] = [0.5, 1.5, 2.5]
    back = read_cloud(make_cloud(pts, 5))
    assert back.dtype.names == dtype.names
    for n in dtype.names:
        np.testing.assert_array_equal(back[n], pts[n])
    parts = cloud_parts(pts)
    assert ('rgb', 12, 2, 3) in parts.fields and parts.point_step == dtype.itemsize


def test_round_trip_velodyne_struct():
    pts = np.zeros(4, VELODYNE_DTYPE)
    pts['x'] = np.arange(4)
    pts['ring'] = [0, 1, 2, 65535]
    back = read_cloud(make_cloud(pts, 10**9, 'env1/lidar'))
    np.testing.assert_array_equal(back['ring'], pts['ring'])
    np.testing.assert_array_equal(back['x'], pts['x'])


def _mutate(**kw):
    msg = _velodyne_msg()
    for k, v in kw.items():
        setattr(msg, k, v)
    return msg


@pytest.mark.parametrize('msg,kind', [
    (_mutate(point_step=20), 'field_overflow'),
    (_mutate(point_step=0), 'point_step'),
    (_mutate(row_step=40), 'row_step'),
    (_mutate(data=array.array('B', bytes(63))), 'data_length'),
    (_mutate(width=0, row_step=0, data=array.array('B')), 'empty'),
    (_mutate(fields=[PointField(name='x', offset=0, datatype=9, count=1)]), 'unknown_datatype'),
])
def test_malformed_clouds(msg, kind):
    with pytest.raises(InvalidMessage) as info:
        read_cloud(msg)
    assert info.value.kind == kind


def test_missing_xyz_and_nonfinite_points():
    msg = _mutate(fields=_velodyne_msg().fields[1:])
    with pytest.raises(InvalidMessage, match='missing_xyz'):
        cloud_xyz(read_cloud(msg))
    pts = [(np.nan, 0, 0, 1, 0, 0), (1.0, np.inf, 0, 2, 0, 0), (1.0, 2.0, 3.0, 3, 0, 0)]
    cloud = read_cloud(_velodyne_msg(pts))
    xyz, keep = cloud_xyz(cloud, 'filter')
    np.testing.assert_array_equal(xyz, [[1, 2, 3]])
    np.testing.assert_array_equal(keep, [False, False, True])
    np.testing.assert_array_equal(cloud_field(cloud, 'intensity', keep), [3])
    with pytest.raises(InvalidMessage, match='nonfinite_points'):
        cloud_xyz(cloud, 'drop')
    with pytest.raises(InvalidMessage, match='empty'):
        cloud_xyz(read_cloud(_velodyne_msg(pts[:2])))


@pytest.mark.parametrize('endian', ['<', '>'])  # '>': the numpy fallback path
def test_cloud_points_equals_xyz_plus_field(endian):
    pts = [(np.nan, 0, 0, 1, 0, 0), (1.0, 2.0, 3.0, 3, 0, 0), (1.0, np.inf, 0, 2, 0, 0),
           (-4.0, 5.5, 0.25, 7, 0, 0)]
    cloud = read_cloud(_velodyne_msg(pts, endian=endian))
    out, keep = cloud_points(cloud, 'intensity')
    xyz, keep_ref = cloud_xyz(cloud)
    assert out.dtype == np.float32 and out.shape == (2, 4)
    np.testing.assert_array_equal(keep, keep_ref)
    np.testing.assert_array_equal(out[:, :3], xyz)
    np.testing.assert_array_equal(out[:, 3], cloud_field(cloud, 'intensity', keep))
    # A missing extra field is filled with the default; the rules of cloud_xyz hold.
    out, _ = cloud_points(cloud, 'reflectivity', default=-1.0)
    np.testing.assert_array_equal(out[:, 3], [-1.0, -1.0])
    with pytest.raises(InvalidMessage, match='nonfinite_points'):
        cloud_points(cloud, nonfinite='drop')
    with pytest.raises(InvalidMessage, match='empty'):
        cloud_points(read_cloud(_velodyne_msg([pts[0], pts[2]], endian=endian)))
    with pytest.raises(InvalidMessage, match='missing_xyz'):
        cloud_points(read_cloud(_mutate(fields=_velodyne_msg().fields[1:])))


def _image(encoding, w, h, step, data, big=False):
    msg = Image()
    msg.encoding, msg.width, msg.height, msg.step = encoding, w, h, step
    msg.is_bigendian = big
    msg.data = array.array('B', data)
    return msg


def test_read_rgb8_with_row_padding():
    # 2 x 2 rgb8, step 8 (2 pad bytes per row).
    data = bytes([1, 2, 3, 4, 5, 6, 0, 0, 7, 8, 9, 10, 11, 12, 0, 0])
    img = read_image(_image('rgb8', 2, 2, 8, data))
    assert img.shape == (2, 2, 3)
    np.testing.assert_array_equal(img[1, 0], [7, 8, 9])
    np.testing.assert_array_equal(img[0, 1], [4, 5, 6])


def test_read_mono16_big_endian_and_float():
    img = read_image(_image('mono16', 2, 1, 4, struct.pack('>HH', 258, 65535), big=True))
    np.testing.assert_array_equal(img[..., 0], [[258, 65535]])
    depth = read_image(_image('32FC1', 1, 1, 4, struct.pack('<f', 1.25)))
    assert depth.dtype == np.float32 and depth[0, 0, 0] == 1.25


@pytest.mark.parametrize('msg,kind', [
    (_image('yuv_weird', 1, 1, 3, bytes(3)), 'unknown_encoding'),
    (_image('rgb8', 2, 1, 5, bytes(5)), 'step'),
    (_image('rgb8', 1, 2, 3, bytes(5)), 'data_length'),
    (_image('mono8', 0, 0, 0, b''), 'empty'),
])
def test_malformed_images(msg, kind):
    with pytest.raises(InvalidMessage) as info:
        read_image(msg)
    assert info.value.kind == kind


def _imu(q=(0.0, 0.0, 0.0, 1.0), gyro=(0.1, 0.2, 0.3), cov0=0.0):
    msg = Imu()
    msg.header.stamp.sec, msg.header.stamp.nanosec = 2, 500
    msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = q
    msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = gyro
    msg.linear_acceleration.z = 9.81
    msg.orientation_covariance[0] = cov0
    return msg


def test_read_imu():
    s = read_imu(_imu())
    assert s.stamp_ns == 2 * 10**9 + 500
    np.testing.assert_array_equal(s.orientation, [0, 0, 0, 1])
    np.testing.assert_array_equal(s.angular_velocity, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(s.linear_acceleration, [0, 0, 9.81])
    # covariance[0] == -1: the driver has no orientation estimate (sensor_msgs/Imu).
    assert read_imu(_imu(q=(0.0, 0.0, 0.0, 0.0), cov0=-1.0)).orientation is None


@pytest.mark.parametrize('kw,kind', [
    (dict(gyro=(np.nan, 0.0, 0.0)), 'nonfinite_imu'),
    (dict(q=(0.0, 0.0, 0.0, 0.5)), 'orientation_norm'),
])
def test_malformed_imu(kw, kind):
    with pytest.raises(InvalidMessage) as info:
        read_imu(_imu(**kw))
    assert info.value.kind == kind
