# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Zero-copy tensor transport (ROS-free core); see docs/transport.md.

Import from the modules themselves (this package re-exports nothing):

- ``shm``: segment naming (scoped by ROS domain and node), mode 0600, owner
  identity, unlink on close / exit / SIGTERM;
- ``ring_layout``: the ring's header, slot and reader-table words, the
  mapping both sides share, owner records, stale-segment reclaim, ``fence``
  and the memory-ordering argument; ``ring_writer``: ``RingWriter``
  (seqlock writer, ``latest`` / ``reliable`` policies, futex wake);
  ``ring_reader``: ``RingReader`` and ``Message`` (pins, cursors, futex wait);
- ``futex``: shared futex wait / wake through ctypes; ``waiter``:
  ``RingWaiter``, a thread that sleeps on a ring and calls a plain callable;
  ``pacing``: ``ArrivalClock`` for waking ahead of periodic messages;
- ``descriptor``: ``Descriptor``, ``TensorSpec`` and the payload layout;
  ``channel``: named tensors over a host ring (``TensorWriter``,
  ``TensorReader``); ``cuda``: device slots shared through CUDA IPC;
  ``received``: ``Received``, what both readers hand out;
- ``inproc``: the in-process hand-off; ``stress``: helper processes for the
  reliability tests.
"""
