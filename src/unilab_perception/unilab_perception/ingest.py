# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Sensor messages -> numpy arrays, with validation (no ROS import).

The functions read the attributes drivers fill in (``fields``, ``point_step``,
``row_step``, ``data``, ``encoding``, ...) from any object that has them, so
they take real ``sensor_msgs`` messages at the node edge and plain stand-ins
in tests. Every conversion is a numpy view or one vectorised copy: a
PointCloud2 becomes a structured array whose dtype is built from the message's
own field names, offsets and datatypes (REP 118 / sensor_msgs/PointField), so
any driver layout and any ``point_step`` (padding included) is read as is.

A message that cannot be used raises :class:`InvalidMessage` with a short
``kind`` (for counters and rate-limited logging) and a reason naming what is
wrong.

Values are checked in the precision they are used in: every field that
reaches the policy or the trainer becomes float32, so a float64 reading of
1e300 (finite in float64) is Inf there and is rejected; and it must stay
within :data:`MAX_MAGNITUDE`, the largest value whose statistics the policy's
float32 normaliser can hold. Fields that never reach them (covariances) are
not checked.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

# sensor_msgs/PointField datatype constants -> numpy scalar types.
POINTFIELD_DTYPES = {
    1: np.int8, 2: np.uint8, 3: np.int16, 4: np.uint16,
    5: np.int32, 6: np.uint32, 7: np.float32, 8: np.float64,
}
NUMPY_TO_POINTFIELD = {np.dtype(v).str[1:]: k for k, v in POINTFIELD_DTYPES.items()}

#: Largest magnitude of a value that may reach the policy or the trainer. They
#: hold observations in float32, and the policy's running normaliser keeps their
#: variance in float32 too: a value beyond sqrt(3.4e38) ~ 1.8e19 overflows it
#: (the normaliser, and every update after, would turn NaN). 1e18 leaves room for
#: the spread of a batch ((2e18)^2 = 4e36). No reading in SI units comes near it.
MAX_MAGNITUDE = 1e18

# sensor_msgs/image_encodings.hpp: encoding -> (numpy scalar type, channels).
IMAGE_ENCODINGS = {
    'rgb8': (np.uint8, 3), 'bgr8': (np.uint8, 3), 'rgba8': (np.uint8, 4),
    'bgra8': (np.uint8, 4), 'mono8': (np.uint8, 1), 'mono16': (np.uint16, 1),
    'rgb16': (np.uint16, 3), 'bgr16': (np.uint16, 3), 'rgba16': (np.uint16, 4),
    'bgra16': (np.uint16, 4),
    'bayer_rggb8': (np.uint8, 1), 'bayer_bggr8': (np.uint8, 1),
    'bayer_gbrg8': (np.uint8, 1), 'bayer_grbg8': (np.uint8, 1),
}
for _bits, _t in ((8, 'U'), (8, 'S'), (16, 'U'), (16, 'S'), (32, 'S'), (32, 'F'), (64, 'F')):
    _np = {'U': 'uint', 'S': 'int', 'F': 'float'}[_t] + str(_bits)
    for _c in (1, 2, 3, 4):
        IMAGE_ENCODINGS[f'{_bits}{_t}C{_c}'] = (np.dtype(_np).type, _c)


class InvalidMessage(ValueError):
    """A sensor message is unusable; ``kind`` groups the reason for counters and logs."""

    def __init__(self, kind: str, reason: str):
        super().__init__(f'{kind}: {reason}')
        self.kind = kind
        self.reason = reason


def usable(values) -> np.ndarray:
    """
    Return the float32 values and a bool mask of those that are usable.

    Usable: finite in float32 (the cast is done here: a float64 1e300 is Inf)
    and within +-MAX_MAGNITUDE.
    """
    with np.errstate(over='ignore', invalid='ignore'):
        out = np.asarray(values, dtype=np.float32)
    return out, np.abs(out) <= MAX_MAGNITUDE  # False for NaN as well


def check_values(values, name: str, kind: str = 'nonfinite') -> np.ndarray:
    """
    Return ``values`` as float32; raise InvalidMessage if any is not usable.

    The reason names the field, how many values are bad and the first one.
    """
    out, ok = usable(values)
    if not ok.all():
        bad = np.flatnonzero(~ok.reshape(-1))
        raise InvalidMessage(kind, f'`{name}` has {bad.size} value(s) that are NaN, Inf or '
                             f'beyond +-{MAX_MAGNITUDE:g} in float32 (first: index {int(bad[0])}, '
                             f'{out.reshape(-1)[bad[0]]!r})')
    return out


def stamp_ns(header) -> int:
    """Return a std_msgs/Header stamp as integer nanoseconds."""
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


def _buffer(data) -> np.ndarray:
    """View a message's ``data`` (array('B'), bytes, list) as uint8 without copying if possible."""
    if isinstance(data, np.ndarray):
        return data.view(np.uint8).reshape(-1)
    try:
        return np.frombuffer(data, dtype=np.uint8)
    except TypeError:
        return np.asarray(data, dtype=np.uint8)


# --------------------------------------------------------------------------
# PointCloud2
# --------------------------------------------------------------------------
def cloud_dtype(fields, point_step: int, is_bigendian: bool = False) -> np.dtype:
    """
    Build the structured dtype of one point from PointField descriptors.

    Raises InvalidMessage on unknown datatypes, fields that overrun
    ``point_step``, duplicate names or a zero ``point_step``.
    """
    if point_step <= 0:
        raise InvalidMessage('point_step', f'point_step is {point_step}')
    order = '>' if is_bigendian else '<'
    names, formats, offsets = [], [], []
    for f in fields:
        if f.datatype not in POINTFIELD_DTYPES:
            raise InvalidMessage('unknown_datatype',
                                 f'field `{f.name}` has unknown datatype {f.datatype}')
        base = np.dtype(POINTFIELD_DTYPES[f.datatype]).newbyteorder(order)
        count = max(int(f.count), 1)
        end = int(f.offset) + base.itemsize * count
        if end > point_step:
            raise InvalidMessage(
                'field_overflow', f'field `{f.name}` ends at byte {end} > point_step '
                f'{point_step}')
        if f.name in names:
            raise InvalidMessage('duplicate_field', f'field `{f.name}` appears twice')
        names.append(f.name)
        formats.append(base if count == 1 else (base, (count,)))
        offsets.append(int(f.offset))
    try:
        return np.dtype({'names': names, 'formats': formats, 'offsets': offsets,
                         'itemsize': int(point_step)})
    except (ValueError, TypeError) as exc:  # e.g. a name numpy refuses
        raise InvalidMessage('fields', f'fields {names} do not form a point layout: '
                             f'{exc}') from None


def read_cloud(msg) -> np.ndarray:
    """
    Return a PointCloud2 as a structured array [height * width] (a view when rows are packed).

    Checks the geometry against the data: ``row_step >= width * point_step``
    and ``len(data) == row_step * height``; an empty cloud is invalid.
    """
    dtype = cloud_dtype(msg.fields, int(msg.point_step), bool(msg.is_bigendian))
    width, height = int(msg.width), int(msg.height)
    row_step, point_step = int(msg.row_step), int(msg.point_step)
    if width * height == 0:
        raise InvalidMessage('empty', f'cloud has width {width} x height {height} points')
    if row_step < width * point_step:
        raise InvalidMessage('row_step', f'row_step {row_step} < width {width} * point_step '
                             f'{point_step}')
    raw = _buffer(msg.data)
    if raw.size != row_step * height:
        raise InvalidMessage('data_length', f'data has {raw.size} bytes, row_step {row_step} '
                             f'* height {height} = {row_step * height}')
    if row_step == width * point_step:
        return raw.view(dtype)
    # Padded rows: drop each row's tail in one strided copy, then view.
    rows = raw.reshape(height, row_step)[:, :width * point_step]
    return np.ascontiguousarray(rows).reshape(-1).view(dtype)


def _point_columns(cloud: np.ndarray, names) -> list[np.ndarray]:
    """Return the named fields as 1-D columns; a multi-count x/y/z/extra is invalid."""
    have = cloud.dtype.names or ()
    missing = [a for a in 'xyz' if a not in have]
    if missing:
        raise InvalidMessage('missing_xyz', f'cloud has no field(s) {missing}; has {list(have)}')
    cols = []
    for a in names:
        c = cloud[a]
        if c.ndim != 1:
            raise InvalidMessage('field_count', f'field `{a}` has count {c.shape[1]}, '
                                 'expected 1')
        cols.append(c)
    return cols


def _bad_points(n: int, kept: int, nonfinite: str) -> None:
    if kept < n and nonfinite == 'drop':
        raise InvalidMessage('nonfinite_points', f'{n - kept} of {n} points are NaN/Inf or '
                             f'beyond +-{MAX_MAGNITUDE:g}')
    if kept == 0:
        raise InvalidMessage('empty', f'all {n} points are NaN/Inf or beyond '
                             f'+-{MAX_MAGNITUDE:g}')


def cloud_xyz(cloud: np.ndarray, nonfinite: str = 'filter') -> tuple[np.ndarray, np.ndarray]:
    """
    Return ``(xyz [P, 3] float32, keep [height*width] bool)`` from a structured cloud.

    Points with a NaN/Inf coordinate in float32 (a lidar's "no return") or one
    beyond +-MAX_MAGNITUDE are removed when ``nonfinite='filter'``; with
    ``'drop'`` any such point invalidates the message. A cloud with no usable
    point left is invalid (``empty``).
    """
    cols = _point_columns(cloud, 'xyz')
    xyz = np.empty((cloud.shape[0], 3), np.float32)
    keep = np.ones(cloud.shape[0], np.bool_)
    # Per column: ``isfinite(xyz).all(axis=1)`` is a strided reduction, 20x slower.
    for i, c in enumerate(cols):
        xyz[:, i], ok = usable(c)
        keep &= ok
    kept = int(np.count_nonzero(keep))
    _bad_points(keep.size, kept, nonfinite)
    return (xyz[keep] if kept < keep.size else xyz), keep


def cloud_points(cloud: np.ndarray, extra: str | None = 'intensity',
                 nonfinite: str = 'filter', default: float = 0.0
                 ) -> tuple[np.ndarray, np.ndarray]:
    """
    Return ``(points [P, 4] float32, keep [height*width] bool)``: x, y, z and ``extra``.

    The same rules as :func:`cloud_xyz`, applied to the ``extra`` column as
    well (it reaches the encoder): a point whose intensity is NaN/Inf in
    float32 is filtered like one without a return. A cloud without the
    ``extra`` field gets ``default`` in that column. One pass over the
    message's bytes for native-order fields (the usual case): gathering the
    strided fields into ``[P, 4]`` column by column and then filtering rows
    with a boolean index costs ~8x more for a 100k-point scan.
    """
    names = cloud.dtype.names or ()
    n = cloud.shape[0]
    cols = _point_columns(cloud, ['x', 'y', 'z'] + ([extra] if extra in names else []))
    if len(cols) == 3:
        cols.append(np.full(n, default, np.float32))
    native = all(c.dtype.isnative for c in cols)
    if not native:  # big-endian fields: numpy, one column at a time
        out = np.empty((n, 4), np.float32)
        keep = np.ones(n, np.bool_)
        for i, c in enumerate(cols):
            out[:, i], ok = usable(c)
            keep &= ok
        kept = int(np.count_nonzero(keep))
        _bad_points(n, kept, nonfinite)
        return (out[keep] if kept < n else out), keep
    out = np.empty((n, 4), np.float32)
    keep = np.empty(n, np.bool_)
    kept = _gather_usable(cols[0], cols[1], cols[2], cols[3], out, keep, MAX_MAGNITUDE)
    _bad_points(n, kept, nonfinite)
    return out[:kept], keep


@numba.njit(cache=True)
def _gather_usable(x, y, z, w, out, keep, limit):
    """
    Copy the rows whose four values are usable in float32 into ``out``; return how many.

    Each value is converted to float32 first (a float64 1e300 becomes Inf),
    then compared with ``limit`` (False for NaN). ``keep`` marks the rows kept.
    """
    kept = 0
    for i in range(x.shape[0]):
        a, b, c, d = np.float32(x[i]), np.float32(y[i]), np.float32(z[i]), np.float32(w[i])
        ok = abs(a) <= limit and abs(b) <= limit and abs(c) <= limit and abs(d) <= limit
        keep[i] = ok
        if ok:
            out[kept, 0] = a
            out[kept, 1] = b
            out[kept, 2] = c
            out[kept, 3] = d
            kept += 1
    return kept


def cloud_field(cloud: np.ndarray, name: str, keep: np.ndarray | None = None,
                default: float | None = None) -> np.ndarray:
    """Return one field as float32 (rows ``keep`` only); ``default`` fills a missing field."""
    if name not in (cloud.dtype.names or ()):
        if default is None:
            raise InvalidMessage('missing_field', f'cloud has no field `{name}`')
        n = cloud.shape[0] if keep is None else int(np.count_nonzero(keep))
        return np.full(n, default, np.float32)
    with np.errstate(over='ignore', invalid='ignore'):
        out = cloud[name].astype(np.float32)
    return out if keep is None else out[keep]


class CloudParts(NamedTuple):
    """What a PointCloud2 needs besides its header: field descriptors and bytes."""

    fields: list[tuple[str, int, int, int]]  # (name, offset, datatype, count)
    point_step: int
    data: bytes


def cloud_parts(points: np.ndarray) -> CloudParts:
    """Describe a structured array as PointCloud2 fields + data (the inverse of read_cloud)."""
    fields = []
    for name in points.dtype.names:
        ftype, offset = points.dtype.fields[name][:2]
        base, count = (ftype.base, int(np.prod(ftype.shape))) if ftype.shape else (ftype, 1)
        key = base.str[1:]
        if key not in NUMPY_TO_POINTFIELD:
            raise ValueError(f'field `{name}`: dtype {base} has no PointField datatype')
        fields.append((name, int(offset), NUMPY_TO_POINTFIELD[key], count))
    return CloudParts(fields, points.dtype.itemsize, np.ascontiguousarray(points).tobytes())


# --------------------------------------------------------------------------
# Image
# --------------------------------------------------------------------------
def read_image(msg) -> np.ndarray:
    """
    Return an Image as [H, W, C] (a view when rows are packed and the byte order is native).

    Raises InvalidMessage for unknown encodings, empty images, a ``step``
    shorter than one row and a data length that is not ``step * height``.
    """
    enc = str(msg.encoding)
    if enc not in IMAGE_ENCODINGS:
        raise InvalidMessage('unknown_encoding', f'image encoding `{enc}` is not supported')
    scalar, channels = IMAGE_ENCODINGS[enc]
    dtype = np.dtype(scalar).newbyteorder('>' if msg.is_bigendian else '<')
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    if h * w == 0:
        raise InvalidMessage('empty', f'image is {w} x {h}')
    row = w * channels * dtype.itemsize
    if step < row:
        raise InvalidMessage('step', f'step {step} < width {w} * {channels} channels * '
                             f'{dtype.itemsize} bytes')
    raw = _buffer(msg.data)
    if raw.size != step * h:
        raise InvalidMessage('data_length', f'data has {raw.size} bytes, step {step} * height '
                             f'{h} = {step * h}')
    rows = raw.reshape(h, step)[:, :row]
    if step != row:
        rows = np.ascontiguousarray(rows)
    img = rows.view(dtype).reshape(h, w, channels)
    return img if dtype.isnative else img.astype(dtype.newbyteorder('='))


# --------------------------------------------------------------------------
# Imu
# --------------------------------------------------------------------------
class ImuSample(NamedTuple):
    """One IMU reading: stamp, orientation quaternion (x, y, z, w), rates, accelerations."""

    stamp_ns: int
    orientation: np.ndarray | None  # [4] (x, y, z, w); None when the driver gives none
    angular_velocity: np.ndarray  # [3] rad/s
    linear_acceleration: np.ndarray  # [3] m/s^2


def read_imu(msg, norm_tol: float = 1e-3) -> ImuSample:
    """
    Return an Imu as arrays; check values as they are used and the quaternion is unit.

    Angular velocity and linear acceleration reach the observation in float32:
    they must be usable there (:func:`check_values`; 1e39 m/s^2 is Inf in
    float32). The orientation is used in float64 (de-skew) and must be finite
    there. sensor_msgs/Imu says ``orientation_covariance[0] == -1`` means "no
    orientation estimate"; then orientation is ignored (None). Covariances are
    not used and not checked.
    """
    o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
    gyro = np.array([w.x, w.y, w.z], np.float64)
    acc = np.array([a.x, a.y, a.z], np.float64)
    check_values(gyro, 'angular_velocity', 'nonfinite_imu')
    check_values(acc, 'linear_acceleration', 'nonfinite_imu')
    quat = None
    if float(msg.orientation_covariance[0]) != -1.0:
        quat = np.array([o.x, o.y, o.z, o.w], np.float64)
        if not np.all(np.isfinite(quat)):
            raise InvalidMessage('nonfinite_imu', 'Imu `orientation` contains NaN or Inf')
        with np.errstate(over='ignore'):
            norm = float(np.linalg.norm(quat))
        if abs(norm - 1.0) > norm_tol:
            raise InvalidMessage('orientation_norm', f'Imu orientation has norm {norm:.4g}, '
                                 'expected 1')
    return ImuSample(stamp_ns(msg.header), quat, gyro, acc)


# --------------------------------------------------------------------------
# Task state (TensorBatch from the bridge or a robot's task layer)
# --------------------------------------------------------------------------
#: Step outcome fields that travel with the observation to the policy and the trainer.
OUTCOME = ('reward', 'terminated', 'truncated', 'episode_return', 'episode_length')


def check_task_state(tensors: dict, num_envs: int, extras_dim: int) -> None:
    """
    Check every task-state tensor that reaches the policy or the trainer; raise InvalidMessage.

    - ``extras`` ``[N, E]``: usable in float32 (:func:`check_values`);
    - ``reward``, ``terminated``, ``truncated`` come together (the policy closes
      a rollout step with all three): ``[N]``, reward usable, the flags 0 or 1;
    - ``episode_return`` ``[N]``: usable where the episode ended this step and
      NaN elsewhere (a number there would count as a finished episode);
    - ``episode_length`` ``[N]``: whole numbers >= 0.
    The ``kind`` names the field: ``extras``, ``reward``, ``flags``,
    ``episode_return``, ``episode_length`` (``shape`` for a wrong shape).
    """
    if 'extras' not in tensors:
        raise InvalidMessage('missing', f'task state has no `extras` (has {sorted(tensors)})')
    for name, shape in (('extras', (num_envs, extras_dim)),
                        *((k, (num_envs,)) for k in OUTCOME)):
        if name in tensors and tuple(np.shape(tensors[name])) != shape:
            raise InvalidMessage('shape', f'`{name}` has shape {tuple(np.shape(tensors[name]))}, '
                                 f'expected {shape}')
    check_values(tensors['extras'], 'extras', 'extras')
    step = [k for k in ('reward', 'terminated', 'truncated') if k in tensors]
    if step and len(step) < 3:
        raise InvalidMessage('missing', f'task state has {step} but not all of reward, '
                             'terminated, truncated')
    if not step:
        return
    check_values(tensors['reward'], 'reward', 'reward')
    done = np.zeros(num_envs, np.bool_)
    for k in ('terminated', 'truncated'):
        flag = np.asarray(tensors[k])
        if not np.all((flag == 0) | (flag == 1)):
            raise InvalidMessage('flags', f'`{k}` holds values other than 0 and 1')
        done |= flag == 1
    if 'episode_return' in tensors:
        ret = np.asarray(tensors['episode_return'])
        check_values(ret[done], 'episode_return (ended episodes)', 'episode_return')
        if not np.all(np.isnan(ret[~done])):
            raise InvalidMessage('episode_return', '`episode_return` is a number for an env '
                                 'whose episode did not end (NaN expected)')
    if 'episode_length' in tensors:
        length = check_values(tensors['episode_length'], 'episode_length', 'episode_length')
        if not np.all((length >= 0) & (length == np.floor(length))):
            raise InvalidMessage('episode_length', '`episode_length` holds negative or '
                                 'fractional values')
