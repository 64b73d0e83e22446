# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Hand-made bags for the bag tests: exact CDR bytes from rosbags' own serializer."""

import numpy as np
from unilab.bag.storage import BagWriter
from unilab.bag.types import typestore

TB = 'unilab_interfaces/msg/TensorBatch'


def tensor_batch_bytes(kind: str, seq: int, tensors: dict, version: int = 0,
                       stamp_ns: int = 0) -> bytes:
    """Serialize a TensorBatch with rosbags (exact bytes, as on the wire)."""
    store = typestore()
    tensor_cls = store.types['unilab_interfaces/msg/Tensor']
    batch_cls = store.types[TB]
    ts = [tensor_cls(name=n, shape=np.asarray(np.shape(a), np.uint32),
                     data=np.asarray(a, np.float32).ravel()) for n, a in tensors.items()]
    sec, nsec = divmod(stamp_ns, 1_000_000_000)
    msg = batch_cls(stamp_sec=sec, stamp_nanosec=nsec, seq=seq, version=version, kind=kind,
                    tensors=ts)
    return bytes(store.serialize_cdr(msg, TB))


def write_bag(path, messages, storage='mcap'):
    """Write ``(topic, msgtype, timestamp_ns, raw)`` tuples to a new bag."""
    w = BagWriter(path, storage)
    for topic, msgtype, ts, raw in messages:
        w.add_topic(topic, msgtype)
        w.write(topic, ts, raw)
    w.close()
    return path
