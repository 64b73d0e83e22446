# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Zero-copy tensor transport (ROS-free core); see docs/transport.md.

``ring_layout``, ``ring_writer``, ``ring_reader``: shared-memory ring with
seqlock slots and ``latest`` / ``reliable`` policies; ``shm``: segment
naming, mode 0600, stale reclaim, unlink on exit; ``descriptor`` and
``channel``: named tensors over a ring; ``inproc``: the in-process
hand-off; ``cuda``: device slots shared through CUDA IPC.
"""

from unilab_core.transport.channel import TensorReader, TensorWriter
from unilab_core.transport.descriptor import Descriptor, DescriptorError, TensorSpec
from unilab_core.transport.inproc import InprocRegistry, InprocSubscriber, REGISTRY
from unilab_core.transport.received import Received
from unilab_core.transport.ring_layout import (reclaim_stale, RingFullError, SegmentBusyError,
                                               StaleSlotError, TransportError)
from unilab_core.transport.ring_reader import RingReader
from unilab_core.transport.ring_writer import RingWriter

__all__ = [
    'Descriptor', 'DescriptorError', 'InprocRegistry', 'InprocSubscriber', 'REGISTRY',
    'Received', 'reclaim_stale', 'RingFullError', 'RingReader', 'RingWriter',
    'SegmentBusyError', 'StaleSlotError', 'TensorReader', 'TensorSpec', 'TensorWriter',
    'TransportError',
]
