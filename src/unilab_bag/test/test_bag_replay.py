# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Replay: schedule math, and a real player process publishing into this test's graph."""

import os
import subprocess
import sys

import pytest
import rclpy
from rosgraph_msgs.msg import Clock
from unilab_bag.player import parse_remaps, schedule
from unilab_bag.storage import BagMessage
from unilab_bag.testing import TB, tensor_batch_bytes, write_bag
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch

STAMPS_S = [0.0, 0.1, 0.2, 0.5, 0.6]


def test_schedule_keeps_order_scales_time_and_remaps():
    msgs = [BagMessage('/a', TB, int(1e9 + t * 1e9), b'%d' % i) for i, t in enumerate(STAMPS_S)]
    due = list(schedule(msgs, rate=2.0, remap={'/a': '/b'}))
    assert [d.raw for d in due] == [b'0', b'1', b'2', b'3', b'4']
    assert [d.offset_s for d in due] == pytest.approx([t / 2 for t in STAMPS_S])
    assert {d.topic for d in due} == {'/b'}
    assert parse_remaps(['/x:=/y']) == {'/x': '/y'}
    with pytest.raises(ValueError, match='FROM:=TO'):
        parse_remaps(['/x'])
    with pytest.raises(ValueError, match='rate'):
        list(schedule(msgs, rate=0.0))


def test_replay_publishes_in_order_with_relative_timing_and_clock(tmp_path):
    bag = write_bag(tmp_path / 'bag', [
        ('/unilab/observation', TB, int(5e9 + t * 1e9),
         tensor_batch_bytes('observation', i, {'obs': [[float(i)]]}))
        for i, t in enumerate(STAMPS_S)])
    rclpy.init()
    got, clocks = [], []
    node = rclpy.create_node('replay_listener')
    # The player's send times (DDS source timestamps, ns): a listener busy on a loaded
    # machine takes two messages together, and its own clock would show a gap as gone.
    node.create_subscription(TensorBatch, '/replayed', lambda m, info: got.append(
        (info['source_timestamp'] * 1e-9, m.seq)), 50)
    node.create_subscription(Clock, '/clock', lambda m: clocks.append(m.clock.sec), 50)
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, '-m', 'unilab.cli', 'replay', str(bag),
                             '--remap', '/unilab/observation:=/replayed', '--wait', '60'],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        ex = rclpy.executors.SingleThreadedExecutor()
        ex.add_node(node)
        arrived = spin_until(ex, lambda: len(got) == len(STAMPS_S), timeout_s=90)
        if not arrived and proc.poll() is None:
            proc.kill()
        out, _ = proc.communicate(timeout=20)
        assert arrived, f'received {got}; player said:\n{out}'
    finally:
        if proc.poll() is None:
            proc.kill()
        node.destroy_node()
        rclpy.try_shutdown()
    assert proc.returncode == 0, out
    assert [s for _, s in got] == list(range(len(STAMPS_S)))
    gaps = [b[0] - a[0] for a, b in zip(got, got[1:])]
    want = [b - a for a, b in zip(STAMPS_S, STAMPS_S[1:])]
    # Never early (the player sleeps until each message is due); late only by the
    # player's scheduling jitter, loosely bounded so a busy CI machine does not fail it.
    for g, w in zip(gaps, want):
        assert g > 0.8 * w and g < w + 0.25, (gaps, want)
    assert clocks and set(clocks) == {5}  # bag time on /clock (the bag has no /clock)
