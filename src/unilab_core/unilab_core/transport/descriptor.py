# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The descriptor that travels on the ROS topic instead of the payload, and the payload layout.

A payload is a set of named arrays packed one after another in a slot, each
starting on a 64-byte boundary (cache line; also what torch and numpy want
for aligned SIMD loads). The descriptor names the segment, slot and message
index, and per tensor its dtype, shape and byte offset, so the receiver can
build views without any copy. Everything a descriptor says is checked
against the segment before a view is built: a bad descriptor raises
``DescriptorError`` with a ``kind`` that the subscriber counts.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

ALIGN = 64
#: dtypes a descriptor may name (numpy names; torch tensors map onto these).
DTYPES = ('float32', 'float64', 'float16', 'int8', 'int16', 'int32', 'int64', 'uint8',
          'uint16', 'uint32', 'uint64', 'bool')
ITEMSIZE = {name: np.dtype(name).itemsize for name in DTYPES}


class DescriptorError(ValueError):
    """A descriptor cannot be honoured; ``kind`` says why (counted in diagnostics)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """Where one named array lives inside a payload."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    offset: int

    @property
    def nbytes(self) -> int:
        """Return the size of the array in bytes."""
        return math.prod(self.shape) * ITEMSIZE[self.dtype]


@dataclasses.dataclass
class Descriptor:
    """ROS-free mirror of ``unilab_interfaces/TensorDescriptor``."""

    kind: str
    seq: int
    segment: str
    slot: int
    slot_seq: int
    payload_bytes: int
    tensors: list[TensorSpec]
    version: int = 0
    stamp_ns: int = 0
    device: str = 'cpu'
    cuda_ipc_handle: bytes = b''
    writer_pid: int = 0
    boot_id: bytes = b''
    publish_ns: int = 0
    #: the writer's ``shm.host_identity()``: a reader elsewhere does not map the segment
    host_id: str = ''


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


_LAYOUTS: dict = {}


def layout_shapes(shapes: dict[str, tuple]) -> tuple[list[TensorSpec], int]:
    """Return the specs and total payload bytes for ``{name: (shape, dtype)}`` (C order)."""
    # Writers publish the same shapes message after message: remember the last layouts.
    key = tuple((name, tuple(shape), dtype) for name, (shape, dtype) in shapes.items())
    try:
        got = _LAYOUTS.get(key)
    except TypeError:  # an unhashable dtype spelling: compute it every time
        got, key = None, None
    if got is not None:
        return got
    got = _layout(shapes)
    if key is not None:
        if len(_LAYOUTS) > 256:
            _LAYOUTS.clear()
        _LAYOUTS[key] = got
    return got


def _layout(shapes: dict[str, tuple]) -> tuple[list[TensorSpec], int]:
    specs, off = [], 0
    for name, (shape, dtype) in shapes.items():
        dt = np.dtype(dtype).name
        if dt not in DTYPES:
            raise ValueError(f'tensor `{name}`: dtype {dt} is not transportable ({DTYPES})')
        off = _align(off)
        spec = TensorSpec(name, dt, tuple(int(s) for s in shape), off)
        specs.append(spec)
        off += spec.nbytes
    return specs, off


def unpack(view: np.ndarray, specs: list[TensorSpec], payload_bytes: int,
           capacity: int) -> dict[str, np.ndarray]:
    """Return read-only array views of ``view`` described by ``specs``; check every bound."""
    if payload_bytes > capacity:
        raise DescriptorError('bad_size', f'descriptor claims {payload_bytes} B, the slot holds '
                              f'at most {capacity} B')
    if view.nbytes < payload_bytes:
        raise DescriptorError('bad_size', f'descriptor claims {payload_bytes} B, the slot has '
                              f'{view.nbytes} B written')
    out = {}
    for spec in specs:
        if spec.dtype not in DTYPES:
            raise DescriptorError('bad_layout', f'tensor `{spec.name}`: unknown dtype '
                                  f'`{spec.dtype}`')
        if any(s < 0 for s in spec.shape) or spec.offset < 0:
            raise DescriptorError('bad_layout', f'tensor `{spec.name}`: negative shape/offset')
        end = spec.offset + spec.nbytes
        if end > payload_bytes:
            raise DescriptorError('bad_size', f'tensor `{spec.name}` {spec.dtype}{spec.shape} '
                                  f'at offset {spec.offset} ends at byte {end}, payload is '
                                  f'{payload_bytes} B')
        itemsize = ITEMSIZE[spec.dtype]
        if spec.offset % itemsize:
            raise DescriptorError('bad_layout', f'tensor `{spec.name}`: offset {spec.offset} '
                                  f'not aligned to {itemsize}')
        arr = view[spec.offset:end].view(spec.dtype).reshape(spec.shape)
        arr.flags.writeable = False
        out[spec.name] = arr
    return out
