# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Time alignment on synthetic stamps with known offsets."""

import numpy as np
import pytest
from unilab_perception.timesync import (
    interpolate_quaternion, interpolate_vector, match_nearest, SensorBuffer, used_stamps)

MS = 1_000_000


def test_reorder_within_window_and_drop_outside():
    b = SensorBuffer('imu', window_ns=20 * MS, policy='reorder')
    assert [b.push(s * MS, s) for s in (10, 30, 20, 5, 30)] == [
        'accepted', 'accepted', 'reordered', 'dropped_out_of_order', 'duplicate']
    assert b.stamps == [10 * MS, 20 * MS, 30 * MS]
    assert b.counters['received'] == 5 and b.counters['reordered'] == 1


def test_drop_policy_and_late_messages():
    b = SensorBuffer('cloud', policy='drop', max_latency_ns=50 * MS)
    assert b.push(100 * MS, 'a', arrival_ns=120 * MS) == 'accepted'
    assert b.push(90 * MS, 'b', arrival_ns=121 * MS) == 'dropped_out_of_order'
    assert b.push(110 * MS, 'c', arrival_ns=200 * MS) == 'dropped_late'
    assert b.latency_ms()['max'] == pytest.approx(90.0)
    assert b.latency_ms()['p50'] == pytest.approx(31.0)


def test_capacity_evicts_oldest():
    b = SensorBuffer('x', capacity=2)
    for s in (1, 2, 3):
        b.push(s, s)
    assert b.stamps == [2, 3] and b.counters['evicted'] == 1


def test_match_nearest_with_known_offsets():
    # Joint states at 500 Hz offset by +0.7 ms, IMU at 200 Hz offset by -1.2 ms.
    joints = SensorBuffer('joint')
    imu = SensorBuffer('imu')
    for i in range(50):
        joints.push(i * 2 * MS + 700_000, i)
        imu.push(i * 5 * MS - 1_200_000, i)
    hit = match_nearest(40 * MS, {'joint': joints, 'imu': imu}, slop_ns=2 * MS)
    assert hit['joint'] == (40 * MS + 700_000, 20)
    assert hit['imu'] == (40 * MS - 1_200_000, 8)
    assert match_nearest(40 * MS, {'imu': imu}, slop_ns=1 * MS) is None


def test_interpolate_joint_and_imu_to_cloud_stamp():
    b = SensorBuffer('joint')
    b.push(0, np.array([0.0, 10.0]))
    b.push(10 * MS, np.array([1.0, 20.0]))
    np.testing.assert_allclose(interpolate_vector(b, 2500_000), [0.25, 12.5])
    assert interpolate_vector(b, 11 * MS) is None
    np.testing.assert_allclose(interpolate_vector(b, 11 * MS, slop_ns=2 * MS), [1.0, 20.0])
    q = SensorBuffer('imu')
    q.push(0, np.array([0, 0, 0, 1.0]))
    q.push(10 * MS, np.array([0, 0, np.sin(np.pi / 4), np.cos(np.pi / 4)]))
    # Halfway between 0 and 90 degrees of yaw is 45 degrees.
    np.testing.assert_allclose(interpolate_quaternion(q, 5 * MS),
                               [0, 0, np.sin(np.pi / 8), np.cos(np.pi / 8)], atol=1e-12)


def test_bad_policy():
    with pytest.raises(ValueError, match='policy'):
        SensorBuffer('x', policy='maybe')


def test_a_rejected_message_is_never_silently_replaced_by_a_neighbour():
    b = SensorBuffer('cloud', capacity=4)
    for s in (10, 30):
        b.push(s * MS, s)
    b.reject(20 * MS)  # the frame of stamp 20 was invalid
    hit = b.nearest(20 * MS, 15 * MS)
    assert hit is not None  # a neighbour is within slop ...
    assert b.replaces_rejected(20 * MS, (hit[0],))  # ... but it would stand in for 20
    assert not b.replaces_rejected(30 * MS, (30 * MS,))  # 30's own frame
    # Serving 24 from 30 (6 ms away) skips nothing nearer; from 10 it would skip 20.
    assert not b.replaces_rejected(26 * MS, (30 * MS,))
    assert b.replaces_rejected(14 * MS, (10 * MS, 30 * MS))  # interpolation across 20
    assert used_stamps(b, 14 * MS) == (10 * MS, 30 * MS)
    # A valid re-send of 20 takes its place; a later invalid copy does not evict it.
    assert b.push(20 * MS, 20) == 'reordered'
    assert b.rejected == []
    b.reject(20 * MS)
    assert b.rejected == [] and b.counters['rejected'] == 2
    assert not b.replaces_rejected(20 * MS, (20 * MS,))
    for s in range(100, 110):  # bounded like the buffer
        b.reject(s)
    assert b.rejected == list(range(106, 110))
