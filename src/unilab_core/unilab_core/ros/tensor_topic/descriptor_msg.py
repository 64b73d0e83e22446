# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The descriptor topic of a tensor topic and its message (``unilab_interfaces/TensorDescriptor``).

A descriptor (``transport.descriptor.Descriptor``) names the segment, slot
and message index of a payload in a shared-memory ring, and per tensor its
name, dtype, shape and offset; it travels on ``<topic>/_tensor_desc``
instead of the payload. The ``_tensor_desc`` token starts with an
underscore, so ``ros2 topic list`` hides it by default.
"""

from __future__ import annotations

from unilab_core.transport.descriptor import Descriptor, DescriptorError, TensorSpec
from unilab_core.transport.shm import host_identity
from unilab_interfaces.msg import TensorDescriptor

DESC_SUFFIX = '/_tensor_desc'


def descriptor_topic(topic: str) -> str:
    """Return the descriptor topic of ``topic``."""
    return topic.rstrip('/') + DESC_SUFFIX


def to_msg(d: Descriptor) -> TensorDescriptor:
    """Build the ROS message of a descriptor."""
    m = TensorDescriptor()
    m.stamp_sec, m.stamp_nanosec = divmod(int(d.stamp_ns), 1_000_000_000)
    m.seq, m.version, m.kind = int(d.seq), int(d.version), d.kind
    m.segment, m.slot, m.slot_seq = d.segment, int(d.slot), int(d.slot_seq)
    m.payload_bytes = int(d.payload_bytes)
    m.names = [t.name for t in d.tensors]
    m.dtypes = [t.dtype for t in d.tensors]
    m.ndims = [len(t.shape) for t in d.tensors]
    m.offsets = [int(t.offset) for t in d.tensors]
    m.shape = [int(s) for t in d.tensors for s in t.shape]
    m.device = d.device
    m.cuda_ipc_handle = bytes(d.cuda_ipc_handle)
    m.writer_pid = int(d.writer_pid)
    m.boot_id = bytes(d.boot_id)
    m.publish_ns = int(d.publish_ns)
    # Every descriptor is written by a writer of this process: its identity is ours.
    m.host_id = d.host_id or host_identity()
    return m


def from_msg(m: TensorDescriptor) -> Descriptor:
    """Decode a descriptor message; DescriptorError(kind='bad_layout') if inconsistent."""
    n = len(m.names)
    if not (len(m.dtypes) == len(m.ndims) == len(m.offsets) == n) or \
            sum(m.ndims) != len(m.shape):
        raise DescriptorError('bad_layout', f'descriptor of `{m.segment}`: {n} names, '
                              f'{len(m.dtypes)} dtypes, {len(m.ndims)} ndims, '
                              f'{len(m.offsets)} offsets, {len(m.shape)} dims')
    specs, k = [], 0
    for i in range(n):
        dims = tuple(int(s) for s in m.shape[k:k + m.ndims[i]])
        k += m.ndims[i]
        specs.append(TensorSpec(m.names[i], m.dtypes[i], dims, int(m.offsets[i])))
    return Descriptor(
        kind=m.kind, seq=int(m.seq), segment=m.segment, slot=int(m.slot),
        slot_seq=int(m.slot_seq), payload_bytes=int(m.payload_bytes), tensors=specs,
        version=int(m.version), stamp_ns=m.stamp_sec * 1_000_000_000 + m.stamp_nanosec,
        device=m.device, cuda_ipc_handle=bytes(m.cuda_ipc_handle),
        writer_pid=int(m.writer_pid), boot_id=bytes(m.boot_id), publish_ns=int(m.publish_ns),
        host_id=m.host_id)
