# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""LatestSlot and OutputRing: the hand-over between callbacks and the loop."""

import numpy as np
import pytest

from unilab_safety.slots import LatestSlot, OutputRing


def test_latest_slot_returns_each_item_once_and_counts_overwrites():
    s = LatestSlot()
    assert s.take() is None
    s.put('a')
    assert s.take() == 'a'
    assert s.take() is None
    s.put('b')
    s.put('c')  # 'b' is overwritten before the reader looked
    assert s.take() == 'c'
    assert (s.puts, s.taken, s.superseded) == (3, 2, 1)


def test_output_ring_is_fifo_and_copies():
    r = OutputRing(4, 2, 3)
    cmd = np.ones((2, 3))
    r.push('command', 7, 1, 140, cmd, t_ns=5)
    cmd[:] = 2.0  # the ring holds its own copy
    r.push('fallback', 7, 1, 140, cmd)
    e = r.pop()
    assert (e.kind, e.seq, e.version, e.stamp_ns, e.t_ns) == ('command', 7, 1, 140, 5)
    np.testing.assert_array_equal(e.command, np.ones((2, 3)))
    e.command[:] = 9.0  # the reader's copy is its own too
    assert r.pop().kind == 'fallback'
    assert r.pop() is None
    assert r.overruns == 0


def test_output_ring_drops_the_oldest_when_lapped():
    r = OutputRing(4, 1, 1)
    for i in range(6):
        r.push('command', i, 0, 0, np.full((1, 1), float(i)))
    seqs = []
    while (e := r.pop()) is not None:
        seqs.append(e.seq)
        assert e.command[0, 0] == e.seq
    assert seqs == [2, 3, 4, 5]
    assert r.overruns == 2


def test_output_ring_capacity_must_be_a_power_of_two():
    with pytest.raises(ValueError):
        OutputRing(3, 1, 1)
