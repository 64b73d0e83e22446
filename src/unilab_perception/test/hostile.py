# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Hostile sensor and task-state messages for the fuzz tests (unit and node level).

Builders take plain parameters (so hypothesis strategies and a seeded numpy
generator drive the same code) and return real ``sensor_msgs`` messages or
task-state tensor dicts.
"""

import array

from builtin_interfaces.msg import Time
import numpy as np
from sensor_msgs.msg import Imu, JointState, PointCloud2, PointField
from unilab_perception.ingest import cloud_dtype, InvalidMessage

F32_MAX = float(np.finfo(np.float32).max)

#: Values that have broken validators: NaN/Inf, float32 max and just beyond it
#: (finite in float64, Inf in float32), far beyond, the 1e18 bound and beyond
#: it, denormals, signed zero, and ordinary values.
HOSTILE_FLOATS = [0.0, -0.0, 1.0, -2.5, 0.25, np.nan, np.inf, -np.inf, F32_MAX, -F32_MAX,
                  3.5e38, 1e39, -1e39, 1e300, -1e300, 1e18, -1e18, 1.0000001e18, 1e19, 5e-324,
                  1e-45, 7.0, -9.81]

FIELD_NAMES = ['x', 'y', 'z', 'intensity', 'time', 'ring', '', 'x ']
#: sensor_msgs/PointField datatypes 1-8 plus unknown ones.
DATATYPES = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 255]


def stamp(ns: int) -> Time:
    """Return a builtin_interfaces/Time for integer nanoseconds."""
    return Time(sec=ns // 10**9, nanosec=ns % 10**9)


def cloud_msg(fields, point_step, width, height, row_step, data: bytes, bigendian=False,
              stamp_ns=0, frame_id='env0/lidar') -> PointCloud2:
    """Return a PointCloud2 with exactly these (possibly inconsistent) parts."""
    msg = PointCloud2()
    msg.header.stamp = stamp(stamp_ns)
    msg.header.frame_id = frame_id
    msg.fields = [PointField(name=n, offset=o, datatype=d, count=c) for n, o, d, c in fields]
    msg.point_step, msg.width, msg.height, msg.row_step = point_step, width, height, row_step
    msg.is_bigendian = bool(bigendian)
    msg.data = array.array('B', data)
    return msg


def fill_points(fields, point_step, count, values, bigendian, rng) -> bytes:
    """
    Return ``count`` points of this layout: each field cycles through ``values``.

    A layout numpy cannot hold gets random bytes (the validator must refuse it).
    """
    try:
        dtype = cloud_dtype([PointField(name=n, offset=o, datatype=d, count=c)
                             for n, o, d, c in fields], point_step, bigendian)
    except InvalidMessage:
        return rng.integers(0, 256, count * max(point_step, 0), dtype=np.uint8).tobytes()
    pts = np.zeros(count, dtype)
    vals = np.asarray(values, np.float64)
    for k, name in enumerate(dtype.names):
        col = pts[name]
        v = np.resize(np.roll(vals, k), col.size).reshape(col.shape)
        with np.errstate(all='ignore'):
            if np.issubdtype(col.dtype, np.integer):
                info = np.iinfo(col.dtype)
                v = np.nan_to_num(v, nan=0.0, posinf=info.max, neginf=info.min)
                v = np.clip(v, info.min, info.max)
            pts[name] = v.astype(col.dtype)
    return pts.tobytes()


def velodyne_fields(dtype_code=7):
    """Return the x, y, z, intensity, time layout (float32 or float64) and its point_step."""
    size = 4 if dtype_code == 7 else 8
    names = ('x', 'y', 'z', 'intensity', 'time')
    fields = [(n, i * size, dtype_code, 1) for i, n in enumerate(names)]
    return fields, 5 * size


def imu_msg(gyro, acc, quat=(0.0, 0.0, 0.0, 1.0), cov=0.0, stamp_ns=0,
            frame_id='env0/imu') -> Imu:
    """Return an Imu; ``cov`` fills every covariance entry (``-1``: no orientation)."""
    msg = Imu()
    msg.header.stamp = stamp(stamp_ns)
    msg.header.frame_id = frame_id
    msg.orientation.x, msg.orientation.y, msg.orientation.z, msg.orientation.w = map(float, quat)
    msg.angular_velocity.x, msg.angular_velocity.y, msg.angular_velocity.z = map(float, gyro)
    (msg.linear_acceleration.x, msg.linear_acceleration.y,
     msg.linear_acceleration.z) = map(float, acc)
    for c in (msg.orientation_covariance, msg.angular_velocity_covariance,
              msg.linear_acceleration_covariance):
        c[:] = np.full(9, cov)
    return msg


def joint_state_msg(names, position, velocity, stamp_ns=0) -> JointState:
    """Return a JointState with these names and values."""
    msg = JointState()
    msg.header.stamp = stamp(stamp_ns)
    msg.name = list(names)
    msg.position = array.array('d', [float(v) for v in position])
    msg.velocity = array.array('d', [float(v) for v in velocity])
    return msg


def task_tensors(n, extras_dim, extras=None, reward=None, terminated=None, truncated=None,
                 episode_return=None, episode_length=None) -> dict:
    """Return a consistent task state, with any tensor replaced by the one given."""
    term = np.zeros(n, np.float32) if terminated is None else terminated
    trunc = np.zeros(n, np.float32) if truncated is None else truncated
    t = {
        'extras': np.ones((n, extras_dim), np.float32) if extras is None else extras,
        'reward': np.zeros(n, np.float32) if reward is None else reward,
        'terminated': term, 'truncated': trunc,
        'episode_return': np.full(n, np.nan, np.float32) if episode_return is None
        else episode_return,
        'episode_length': np.zeros(n, np.float32) if episode_length is None
        else episode_length,
    }
    return t


def random_cloud(rng, stamp_ns, frame_id) -> PointCloud2:
    """Return a PointCloud2 with random fields, geometry, length and hostile values."""
    fields = [(str(rng.choice(FIELD_NAMES)), int(rng.integers(0, 40)),
               int(rng.choice(DATATYPES)), int(rng.choice([0, 1, 1, 2])))
              for _ in range(int(rng.integers(0, 5)))]
    if rng.random() < 0.6:
        fields = velodyne_fields(int(rng.choice([7, 8])))[0] + fields
    point_step = int(rng.integers(1, 56))
    width, height = int(rng.integers(0, 30)), int(rng.integers(1, 3))
    values = list(rng.choice(np.array(HOSTILE_FLOATS, dtype=object), int(rng.integers(1, 9))))
    big = bool(rng.random() < 0.3)
    data = fill_points(fields, point_step, width, values, big, rng) * height
    cut = int(rng.choice([0, 0, 0, 0, -1, 3]))
    data = data[:len(data) + cut] if cut < 0 else data + bytes(cut)
    return cloud_msg(fields, point_step, width, height, width * point_step, data, big,
                     stamp_ns, frame_id)


def random_imu(rng, stamp_ns, frame_id) -> Imu:
    """Return an Imu whose readings, orientation and covariances are drawn from HOSTILE_FLOATS."""
    pick = lambda k: [float(v) for v in rng.choice(np.array(HOSTILE_FLOATS), k)]  # noqa: E731
    quat = pick(4) if rng.random() < 0.5 else (0.0, 0.0, 0.0, 1.0)
    return imu_msg(pick(3), pick(3), quat, float(rng.choice([0.0, -1.0, np.nan, 1e300])),
                   stamp_ns, frame_id)
