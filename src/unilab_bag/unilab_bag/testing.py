# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Hand-made bags for the bag tests: exact CDR bytes from rosbags' own serializer."""

import numpy as np
from unilab_bag.storage import BagWriter
from unilab_bag.types import typestore

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


def rollout_bag(path, storage='mcap', chunks=24, obs_dim=3, act_dim=2, k=4, n=4,
                flush_every=4, seed=0):
    """
    Write rollout chunks (and their originals) to a bag, flushed every few chunks.

    Returns ``(path, [(topic, timestamp, raw), ...])``. Each flush closes an
    MCAP chunk (as the recorder's once-per-second flush does) or commits.
    """
    rng = np.random.default_rng(seed)
    w = BagWriter(path, storage)
    w.add_topic('/unilab/rollout', TB)
    w.add_topic('/unilab/action', TB)
    sent = []
    for seq in range(chunks):
        term = (rng.random((k, n)) < 0.1).astype(np.float32)
        chunk = tensor_batch_bytes('rollout', seq, {
            'obs': rng.normal(size=(k, n, obs_dim)), 'actions': rng.normal(size=(k, n, act_dim)),
            'rewards': rng.normal(size=(k, n)), 'terminated': term, 'truncated': np.zeros((k, n)),
            'episode_return': np.where(term > 0, 1.0, np.nan),
            'episode_length': np.where(term > 0, 5.0, 0.0),
            'next_obs': rng.normal(size=(n, obs_dim))})
        action = tensor_batch_bytes('action', seq, {'action': rng.normal(size=(n, act_dim))})
        for topic, raw in (('/unilab/rollout', chunk), ('/unilab/action', action)):
            ts = 1_000_000 * (2 * seq + len(sent) % 2 + 1)
            w.write(topic, ts, raw)
            sent.append((topic, ts, raw))
        if (seq + 1) % flush_every == 0:
            w.flush()
    w.close()
    return path, sent


def storage_file(bag):
    """Return the bag's one .mcap / .db3 file."""
    return next(p for p in bag.iterdir() if p.suffix in ('.mcap', '.db3'))
