# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A rotating recorder: every closed bag is complete, the disk budget holds, deletions counted."""

import pytest
from unilab_bag.rotating import bag_bytes, RotatingBagWriter
from unilab_bag.storage import BagReader


def test_rotates_into_complete_bags_and_keeps_the_budget(tmp_path):
    w = RotatingBagWriter(tmp_path / 'rec', rotate_bytes=4000, keep_bytes=12000)
    w.add_topic('/joint_states', 'sensor_msgs/msg/JointState')
    payload = bytes(1000)
    for i in range(40):
        w.write('/joint_states', 1_000_000 * (i + 1), payload)
    closed = w.closed_bags()
    assert w.counts['/joint_states'] == 40
    assert w.deleted > 0, 'a 40 kB stream with a 12 kB budget must have deleted bags'
    assert sum(bag_bytes(b) for b in closed) <= 12000 + 4000
    # the closed bags are the newest ones, each readable on its own, in time order
    stamps = []
    for bag in closed:
        r = BagReader(bag)
        stamps += [m.timestamp for m in r.messages()]
        r.close()
    assert stamps == sorted(stamps)
    # what survives is the newest run of messages, without gaps, up to the last closed one
    assert len(stamps) >= 4
    assert stamps == list(range(stamps[0], stamps[-1] + 1, 1_000_000))
    assert stamps[-1] == 40_000_000
    w.close()
    # a restarted recorder continues numbering after the last bag, never overwriting
    w2 = RotatingBagWriter(tmp_path / 'rec', rotate_bytes=4000, keep_bytes=12000)
    assert w2.index == w.index + 1
    w2.close()


def test_refuses_a_budget_smaller_than_one_bag(tmp_path):
    with pytest.raises(ValueError, match='rotate_bytes'):
        RotatingBagWriter(tmp_path / 'rec', rotate_bytes=100, keep_bytes=10)
