# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Convert between numpy arrays and ``unilab_interfaces/TensorBatch``.

Reading is zero-copy: ``np.frombuffer`` views the message's ``array('f')``.
Writing copies once into an ``array('f')`` (rclpy's setter accepts it without
a per-element type check, which a numpy array or list would trigger).
"""

from __future__ import annotations

import array
from typing import NamedTuple

import numpy as np
from unilab_interfaces.msg import Tensor, TensorBatch


class Batch(NamedTuple):
    """A decoded TensorBatch."""

    kind: str
    seq: int
    version: int
    stamp_ns: int
    tensors: dict[str, np.ndarray]


def make_batch(kind: str, seq: int, tensors: dict[str, np.ndarray], version: int = 0,
               stamp_ns: int = 0) -> TensorBatch:
    """Build a TensorBatch message from named arrays (cast to float32)."""
    msg = TensorBatch()
    msg.kind = kind
    msg.seq = int(seq)
    msg.version = int(version)
    msg.stamp_sec, msg.stamp_nanosec = divmod(int(stamp_ns), 1_000_000_000)
    out = []
    for name, arr in tensors.items():
        if hasattr(arr, 'detach'):  # a torch tensor, possibly on a GPU: a host copy
            arr = arr.detach().cpu().numpy()
        a = np.ascontiguousarray(arr, dtype=np.float32)
        t = Tensor()
        t.name = name
        t.shape = array.array('I', a.shape)
        buf = array.array('f')
        buf.frombytes(a.tobytes())
        t.data = buf
        out.append(t)
    msg.tensors = out
    return msg


class TensorMessageError(ValueError):
    """A TensorBatch is malformed (shape does not match data)."""


def read_batch(msg: TensorBatch) -> Batch:
    """Decode a TensorBatch into named read-only arrays; raise on bad shapes."""
    tensors = {}
    for t in msg.tensors:
        shape = tuple(int(s) for s in t.shape)
        data = np.frombuffer(t.data, dtype=np.float32) if len(t.data) else np.zeros(0, np.float32)
        if int(np.prod(shape)) != data.size:
            raise TensorMessageError(
                f'tensor `{t.name}` of `{msg.kind}`: shape {shape} needs '
                f'{int(np.prod(shape))} values, message has {data.size}')
        tensors[t.name] = data.reshape(shape)
    stamp_ns = msg.stamp_sec * 1_000_000_000 + msg.stamp_nanosec
    return Batch(msg.kind, int(msg.seq), int(msg.version), stamp_ns, tensors)
