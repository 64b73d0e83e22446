# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Live capture, the ROS-free part: frames with their stamp, frame id and IMU rate.

A camera driver's ``sensor_msgs/Image`` (or ``CompressedImage``) becomes one rgb8 frame
[H, W, 3]; the IMU sample nearest to the frame's stamp (within a tolerance) gives the
rate the camera turned at, rotated into the camera's frame by a fixed extrinsic
(``imu_to_camera``, a unit quaternion x, y, z, w; identity by default). Frames travel
as tensors (``frame_tensors``) on the zero-copy transport; the labeller keeps at most
``capacity`` waiting frames and counts what it drops (``FrameQueue``).
"""

from __future__ import annotations

import collections
import threading
from typing import NamedTuple

import numpy as np

#: tensors of one frame on the transport
IMAGE, GYRO, GYRO_VALID, FRAME_ID = 'image', 'gyro_cam', 'gyro_valid', 'frame_id'
#: longest frame id carried (bytes of UTF-8; longer ids are refused by name)
MAX_FRAME_ID = 256


class Frame(NamedTuple):
    """One captured frame: rgb8 image, stamp (ns), frame id, camera-frame rate or None."""

    image: np.ndarray
    stamp_ns: int
    frame_id: str
    gyro_cam: np.ndarray | None


def quat_matrix(q) -> np.ndarray:
    """Return the rotation matrix of a unit quaternion (x, y, z, w); ValueError otherwise."""
    q = np.asarray(q, np.float64).reshape(-1)
    if q.shape != (4,) or not np.all(np.isfinite(q)):
        raise ValueError(f'--imu-to-camera {q.tolist()}: expected 4 finite numbers x,y,z,w')
    n = float(np.linalg.norm(q))
    if abs(n - 1.0) > 1e-3:
        raise ValueError(f'--imu-to-camera: quaternion norm {n:.4g}, expected 1')
    x, y, z, w = q / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


class ImuRates:
    """The last ``capacity`` IMU rates by stamp; the nearest one to a frame, in its frame."""

    def __init__(self, capacity: int = 512, tolerance_ns: int = 20_000_000,
                 imu_to_camera=(0.0, 0.0, 0.0, 1.0)):
        if capacity < 1 or tolerance_ns < 0:
            raise ValueError('ImuRates: capacity >= 1 and tolerance_ns >= 0')
        self.stamps = np.zeros(capacity, np.int64)
        self.rates = np.zeros((capacity, 3), np.float64)
        self.count = 0
        self.latest_ns: int | None = None  # the newest stamp seen
        self.tolerance_ns = int(tolerance_ns)
        self.rotation = quat_matrix(imu_to_camera)
        self._lock = threading.Lock()

    def add(self, stamp_ns: int, gyro) -> None:
        """Keep one IMU angular velocity (rad/s, the IMU's frame) at ``stamp_ns``."""
        with self._lock:
            i = self.count % len(self.stamps)
            self.stamps[i], self.rates[i] = int(stamp_ns), gyro
            self.count += 1
            self.latest_ns = max(int(stamp_ns), self.latest_ns or int(stamp_ns))

    def at(self, stamp_ns: int) -> np.ndarray | None:
        """Return the camera-frame rate nearest to ``stamp_ns`` (None: none within tolerance)."""
        with self._lock:
            n = min(self.count, len(self.stamps))
            if n == 0:
                return None
            gap = np.abs(self.stamps[:n] - int(stamp_ns))
            i = int(np.argmin(gap))
            if gap[i] > self.tolerance_ns:
                return None
            return self.rotation @ self.rates[i]


def frame_tensors(frame: Frame) -> dict[str, np.ndarray]:
    """Return the tensors of one frame for the transport (frame id as UTF-8 bytes)."""
    fid = frame.frame_id.encode()
    if len(fid) > MAX_FRAME_ID:
        raise ValueError(f'frame_id `{frame.frame_id[:40]}...`: longer than {MAX_FRAME_ID} '
                         'bytes')
    valid = frame.gyro_cam is not None
    gyro = np.asarray(frame.gyro_cam if valid else np.zeros(3), np.float32)
    return {IMAGE: frame.image, GYRO: gyro, GYRO_VALID: np.array([valid], np.uint8),
            FRAME_ID: np.frombuffer(fid, np.uint8) if fid else np.zeros(0, np.uint8)}


def frame_from_tensors(tensors: dict, stamp_ns: int) -> Frame:
    """Return the Frame of transport tensors; ValueError names what is wrong."""
    for k in (IMAGE, GYRO, GYRO_VALID, FRAME_ID):
        if k not in tensors:
            raise ValueError(f'frame: no `{k}` tensor')
    image = _bytes_of(tensors[IMAGE], 'image')
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f'frame: `image` is {image.shape}, expected [H, W, 3]')
    gyro = np.asarray(tensors[GYRO], np.float64)
    valid = bool(_bytes_of(tensors[GYRO_VALID], 'gyro_valid').reshape(-1)[:1].any())
    if valid and (gyro.shape != (3,) or not np.all(np.isfinite(gyro))):
        raise ValueError('frame: `gyro_cam` is not 3 finite rates')
    fid = bytes(_bytes_of(tensors[FRAME_ID], 'frame_id')).decode(errors='replace')
    return Frame(np.array(image), int(stamp_ns), fid, gyro if valid else None)


def _bytes_of(x, name: str) -> np.ndarray:
    """Return ``x`` as uint8; a serialised copy (float32 on the wire) must hold bytes."""
    a = np.asarray(x)
    if a.dtype == np.uint8:
        return a
    with np.errstate(invalid='ignore'):
        ok = a.size == 0 or (np.all(np.isfinite(a)) and a.min() >= 0 and a.max() <= 255
                             and np.all(a == np.round(a)))
    if not ok:
        raise ValueError(f'frame: `{name}` is {a.dtype} with values that are not bytes')
    return a.astype(np.uint8)


def decode_compressed(data: bytes, fmt: str) -> np.ndarray:
    """Return rgb8 [H, W, 3] of a ``sensor_msgs/CompressedImage`` (jpeg / png)."""
    import io

    from PIL import Image, UnidentifiedImageError
    try:
        with Image.open(io.BytesIO(bytes(data))) as im:
            return np.asarray(im.convert('RGB'), np.uint8)
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError,
            Image.DecompressionBombError) as exc:  # any bytes a sender may put there
        raise ValueError(f'compressed image (format `{fmt}`) does not decode: {exc}') from None


class FrameQueue:
    """At most ``capacity`` frames waiting for the labeller; the oldest is dropped, counted."""

    def __init__(self, capacity: int = 8):
        if capacity < 1:
            raise ValueError(f'--queue {capacity}: must be >= 1')
        self._items: collections.deque = collections.deque()
        self.capacity = int(capacity)
        self.dropped = 0
        self.received = 0
        self._cond = threading.Condition()

    def put(self, frame: Frame) -> None:
        """Queue one frame (dropping the oldest when full)."""
        with self._cond:
            self.received += 1
            if len(self._items) >= self.capacity:
                self._items.popleft()
                self.dropped += 1
            self._items.append(frame)
            self._cond.notify()

    def get(self, timeout_s: float) -> Frame | None:
        """Return the oldest waiting frame (None after ``timeout_s`` without one)."""
        with self._cond:
            if not self._items:
                self._cond.wait(timeout_s)
            return self._items.popleft() if self._items else None

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)
