# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Write frames as ``sensor_msgs/Image`` (rgb8) into a bag, as ``unilab record`` would.

Used to turn rendered frames into the input ``factory label`` reads (tests, docs figures)
without running the bridge; the bytes are rosbags' own CDR, exact as on the wire.
"""

from __future__ import annotations

import numpy as np

from unilab_bag.storage import BagWriter
from unilab_bag.types import typestore

IMAGE_TYPE = 'sensor_msgs/msg/Image'


def image_bytes(image: np.ndarray, stamp_ns: int, frame_id: str,
                encoding: str = 'rgb8') -> bytes:
    """Serialize one [H, W, 3] uint8 image as sensor_msgs/Image CDR bytes."""
    store = typestore()
    image_cls = store.types[IMAGE_TYPE]
    header_cls = store.types['std_msgs/msg/Header']
    time_cls = store.types['builtin_interfaces/msg/Time']
    sec, nsec = divmod(int(stamp_ns), 1_000_000_000)
    h, w, c = image.shape
    msg = image_cls(header=header_cls(stamp=time_cls(sec=sec, nanosec=nsec),
                                      frame_id=frame_id),
                    height=h, width=w, encoding=encoding, is_bigendian=0, step=w * c,
                    data=np.ascontiguousarray(image, np.uint8).ravel())
    return bytes(store.serialize_cdr(msg, IMAGE_TYPE))


def write_image_bag(path, frames, topic: str = '/camera/image_raw', period_ns: int = 50_000_000,
                    storage: str = 'mcap', frame_id: str = 'env0/camera'):
    """Write frames [H, W, 3] uint8 to a new bag at ``period_ns`` spacing; return path."""
    w = BagWriter(path, storage)
    w.add_topic(topic, IMAGE_TYPE)
    for n, image in enumerate(frames):
        stamp = (n + 1) * period_ns
        w.write(topic, stamp, image_bytes(image, stamp, frame_id))
    w.close()
    return path
