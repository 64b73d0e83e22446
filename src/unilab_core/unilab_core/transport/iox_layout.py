# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The iceoryx2 backend's wire format: service names and the tensor user header (ROS-free).

One iceoryx2 publish-subscribe service per (ROS domain, topic) carries the
payload as a byte slice (``iox2.Slice[c_uint8]``, tensors at 64-byte offsets
as in ``descriptor.layout_shapes``) and, in the sample's *user header*, the
message: kind, seq, version, stamps, a message index and per tensor its
name, dtype code, shape and offset (``TensorHeader``). The header is a
fixed-size C struct so that readers in other languages take the same
samples without Python (``c/unilab_tensor_header.h`` is the same layout,
checked by a test). Three more services share the topic's name:

* ``<svc>/data`` (event): the writer notifies ``EVENT_DATA`` after each send;
  readers sleep on it (the library's listener, the GIL released);
* ``<svc>/ctl`` (event): readers notify ``EVENT_CONNECTED`` after they
  subscribe (a latched writer then hands them its history) and
  ``EVENT_ACK`` after releasing a message of a ``reliable`` topic;
* ``<svc>/ack`` (publish-subscribe of ``Ack``): each reader of a
  ``reliable`` topic publishes the index of the next message it needs; the
  writer never runs more than its window ahead of the slowest live reader.

Names: ``unilab/d<domain>/<topic>`` (the topic's own slashes kept), so two
graphs in different ROS domains never share a service.
"""

from __future__ import annotations

import ctypes

import numpy as np
from unilab_core.transport.descriptor import DTYPES, TensorSpec

#: ``TensorHeader.magic``: b'ULBT' little-endian, and the header layout version
MAGIC = 0x54424C55
HEADER_VERSION = 1
MAX_TENSORS = 32
MAX_DIMS = 6
NAME_BYTES = 40
KIND_BYTES = 32
#: payload alignment (bytes) requested from the service: tensors start on 64-byte offsets
PAYLOAD_ALIGN = 64
#: dtype codes in the header: index into ``descriptor.DTYPES`` (the C header lists them)
DTYPE_CODES = {name: i for i, name in enumerate(DTYPES)}
#: service-name prefix; a descriptor naming an iceoryx2 service starts with it
SERVICE_PREFIX = 'unilab/d'
#: segment field of a descriptor that points at an iceoryx2 service (not a ring)
DESCRIPTOR_PREFIX = 'iox2:'
EVENT_DATA = 0
EVENT_CONNECTED = 1
EVENT_ACK = 2
EVENT_ID_MAX = 7
#: ``Ack.next_index`` of a reader that just subscribed and has read nothing yet
ACK_REGISTER = 2 ** 64 - 1
#: ``Ack.next_index`` of a reader that unsubscribes (the writer forgets it at once)
ACK_GONE = 2 ** 64 - 2


class TensorEntry(ctypes.Structure):
    """Where one named tensor lives in the payload (C: ``unilab_tensor_entry``)."""

    _fields_ = [('name', ctypes.c_char * NAME_BYTES), ('dtype', ctypes.c_uint8),
                ('ndim', ctypes.c_uint8), ('_pad', ctypes.c_uint8 * 6),
                ('offset', ctypes.c_uint64), ('shape', ctypes.c_uint64 * MAX_DIMS)]


class TensorHeader(ctypes.Structure):
    """The user header of every sample (C: ``unilab_tensor_header``)."""

    _fields_ = [('magic', ctypes.c_uint32), ('version', ctypes.c_uint32),
                ('index', ctypes.c_uint64), ('seq', ctypes.c_uint64),
                ('msg_version', ctypes.c_uint64), ('stamp_ns', ctypes.c_uint64),
                ('publish_ns', ctypes.c_uint64), ('payload_bytes', ctypes.c_uint64),
                ('n_tensors', ctypes.c_uint32), ('_pad', ctypes.c_uint32),
                ('kind', ctypes.c_char * KIND_BYTES),
                ('tensors', TensorEntry * MAX_TENSORS)]

    @staticmethod
    def type_name() -> str:
        """Return the type name iceoryx2 matches between participants (any language)."""
        return 'unilab_tensor_header'


class Ack(ctypes.Structure):
    """A reliable reader's progress: the next message index it needs (C: ``unilab_ack``)."""

    _fields_ = [('reader', ctypes.c_uint64), ('next_index', ctypes.c_uint64)]

    @staticmethod
    def type_name() -> str:
        """Return the type name iceoryx2 matches between participants."""
        return 'unilab_ack'


def service_name(domain: int, topic: str) -> str:
    """Return the iceoryx2 service of ``topic`` in ROS ``domain``."""
    return f'{SERVICE_PREFIX}{int(domain)}/{topic.strip("/")}'


def check_layout(kind: str, specs: list[TensorSpec]) -> None:
    """Raise ValueError naming what does not fit the fixed header (tensors, dims, names)."""
    if len(specs) > MAX_TENSORS:
        raise ValueError(f'{len(specs)} tensors in one message; the iceoryx2 backend carries '
                         f'at most {MAX_TENSORS}')
    if len(kind.encode()) >= KIND_BYTES:
        raise ValueError(f'message kind `{kind}` is longer than {KIND_BYTES - 1} bytes')
    for s in specs:
        if len(s.name.encode()) >= NAME_BYTES:
            raise ValueError(f'tensor name `{s.name}` is longer than {NAME_BYTES - 1} bytes')
        if len(s.shape) > MAX_DIMS:
            raise ValueError(f'tensor `{s.name}` has {len(s.shape)} dimensions; at most '
                             f'{MAX_DIMS}')


#: bytes of the header that depend only on the layout (kind, tensors): from ``n_tensors`` on
LAYOUT_OFFSET = TensorHeader.n_tensors.offset


def layout_bytes(kind: str, specs: list[TensorSpec]) -> bytes:
    """Return the layout part of a header (``n_tensors`` .. the used tensor entries)."""
    check_layout(kind, specs)
    h = TensorHeader()
    h.kind = kind.encode()
    h.n_tensors = len(specs)
    for e, s in zip(h.tensors, specs):
        e.name = s.name.encode()
        e.dtype = DTYPE_CODES[s.dtype]
        e.ndim = len(s.shape)
        e.offset = s.offset
        e.shape[:len(s.shape)] = s.shape
    end = TensorHeader.tensors.offset + len(specs) * ctypes.sizeof(TensorEntry)
    return ctypes.string_at(ctypes.addressof(h) + LAYOUT_OFFSET, end - LAYOUT_OFFSET)


def write_header(address: int, layout: bytes, nbytes: int, index: int, seq: int, version: int,
                 stamp_ns: int, publish_ns: int) -> None:
    """Fill the header at ``address``: the scalar fields, then the cached ``layout_bytes``."""
    h = TensorHeader.from_address(address)
    h.magic, h.version = MAGIC, HEADER_VERSION
    h.index, h.payload_bytes = index, nbytes
    h.seq = seq & 0xFFFFFFFFFFFFFFFF
    h.msg_version = version & 0xFFFFFFFFFFFFFFFF
    h.stamp_ns, h.publish_ns = stamp_ns, publish_ns
    ctypes.memmove(address + LAYOUT_OFFSET, layout, len(layout))


class LayoutError(ValueError):
    """A sample's header is not a UniLab tensor header or names an impossible layout."""


def header_layout_bytes(address: int) -> bytes:
    """Return the layout part of the header at ``address`` (a cache key for ``read_header``)."""
    n = min(int(ctypes.c_uint32.from_address(address + LAYOUT_OFFSET).value), MAX_TENSORS)
    end = TensorHeader.tensors.offset + n * ctypes.sizeof(TensorEntry)
    return ctypes.string_at(address + LAYOUT_OFFSET, end - LAYOUT_OFFSET)


def check_magic(h: TensorHeader) -> None:
    """Raise LayoutError unless ``h`` is a UniLab tensor header of this version."""
    if h.magic != MAGIC or h.version != HEADER_VERSION:
        raise LayoutError(f'not a UniLab tensor header (magic {h.magic:#x}, version '
                          f'{h.version})')


def read_header(h: TensorHeader) -> tuple[str, list[TensorSpec]]:
    """Return ``(kind, specs)`` of a sample header; LayoutError if it is unusable."""
    check_magic(h)
    n = int(h.n_tensors)
    if n > MAX_TENSORS:
        raise LayoutError(f'header names {n} tensors; at most {MAX_TENSORS}')
    specs = []
    for e in h.tensors[:n]:
        if e.dtype >= len(DTYPES) or e.ndim > MAX_DIMS:
            raise LayoutError(f'tensor `{e.name.decode(errors="replace")}`: dtype code '
                              f'{e.dtype}, {e.ndim} dimensions')
        specs.append(TensorSpec(e.name.decode(errors='replace'), DTYPES[e.dtype],
                                tuple(int(x) for x in e.shape[:e.ndim]), int(e.offset)))
    return h.kind.decode(errors='replace'), specs


def byte_view(address: int, nbytes: int) -> np.ndarray:
    """Return a uint8 numpy view of ``nbytes`` at ``address`` (shared memory of a sample)."""
    if nbytes == 0:
        return np.empty(0, np.uint8)
    return np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))
