# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""TensorPublisher / TensorSubscription on real rclpy: in-process, cross-process, interop."""

import json
import os
import select
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
from rclpy.node import Node
from unilab_core.ros.runtime import detach_and_shutdown
from unilab_core.ros.transport_node import descriptor_topic, TensorPublisher, TensorSubscription
from unilab_core.testing import isolate_ros_domain, spin_until
from unilab_interfaces.msg import TensorBatch, TensorDescriptor

# Before any rclpy.init (the domain is read there): a private ROS domain for this process.
isolate_ros_domain()


@pytest.fixture
def ros():
    """Yield (publisher node, subscriber node, executor) on a fresh context."""
    from rclpy.experimental import EventsExecutor
    rclpy.init()
    a, b = Node('tx_pub'), Node('tx_sub')
    ex = EventsExecutor()
    ex.add_node(a)
    ex.add_node(b)
    yield a, b, ex
    detach_and_shutdown(ex, [a, b])
    a.destroy_node()
    b.destroy_node()
    rclpy.try_shutdown()


def test_detach_and_shutdown_leaves_no_node_pointing_at_the_dead_executor():
    from rclpy.experimental import EventsExecutor
    rclpy.init()
    try:
        a = Node('detach_a')
        ex = EventsExecutor()
        ex.add_node(a)
        a.create_subscription(TensorBatch, '/t/detach', lambda m: None, 10)
        assert a.executor is ex
        ex.remove_node(a)
        assert a.executor is ex  # what remove_node alone leaves behind
        ex.add_node(a)
        detach_and_shutdown(ex, [a])
        assert a.executor is None and list(ex.get_nodes()) == []
        a.destroy_node()  # reaches no executor
        detach_and_shutdown(EventsExecutor(), [a])  # a destroyed node: nothing to detach
    finally:
        rclpy.try_shutdown()


def test_inproc_same_object_no_serialisation_then_interop(ros):
    a, b, ex = ros
    pub = TensorPublisher(a, '/t/obs', 1 << 16)
    got = []
    sub = TensorSubscription(b, '/t/obs', got.append)
    obs = np.arange(12, dtype=np.float32).reshape(3, 4)
    pub.publish('observation', 7, {'obs': obs}, version=2)
    assert spin_until(ex, lambda: got, 5.0)
    assert got[0].tensors['obs'] is obs and not obs.flags.writeable
    assert got[0].seq == 7 and got[0].version == 2
    # the in-process reader is not remote: no ring write, no descriptor, nothing serialised
    assert pub.stats['descriptors'] == 0 and pub.stats['serialised'] == 0
    assert pub.writer is None
    # a plain ROS subscriber of the standard topic gets a TensorBatch
    plain = []
    b.create_subscription(TensorBatch, '/t/obs', plain.append, 10)
    assert spin_until(ex, lambda: pub.std_pub.get_subscription_count() > 0, 5.0)
    pub.publish('observation', 8, {'obs': obs + 1})
    assert spin_until(ex, lambda: plain, 5.0)
    assert plain[0].seq == 8 and list(plain[0].tensors[0].shape) == [3, 4]
    assert np.allclose(np.frombuffer(plain[0].tensors[0].data, np.float32), (obs + 1).ravel())
    sub.close()
    pub.close()


def test_bad_descriptor_logged_counted_dropped_and_node_keeps_running(ros):
    a, b, ex = ros
    got = []
    sub = TensorSubscription(b, '/t/bad', got.append)
    raw = a.create_publisher(TensorDescriptor, descriptor_topic('/t/bad'), 10)
    assert spin_until(ex, lambda: raw.get_subscription_count() > 0, 5.0)
    bad = TensorDescriptor(segment='unilab_d0_nobody_here', slot=0, slot_seq=0,
                           payload_bytes=4, names=['x'], dtypes=['float32'], ndims=[1],
                           offsets=[0], shape=[1], device='cpu', writer_pid=1)
    raw.publish(bad)
    inconsistent = TensorDescriptor(segment='unilab_d0_x', names=['x'], dtypes=[], device='cpu',
                                    writer_pid=1)
    raw.publish(inconsistent)
    assert spin_until(ex, lambda: sub.stats['error_bad_layout'] and
                      sub.stats['error_unknown_segment'], 5.0)
    status = sub.diagnostic_status()
    assert 'unknown_segment' in status.message or 'bad_layout' in status.message
    assert got == []
    # still delivering afterwards
    pub = TensorPublisher(a, '/t/bad', 1024)
    pub.publish('k', 1, {'x': np.ones(3, np.float32)})
    assert spin_until(ex, lambda: got, 5.0)
    sub.close()


CHILD = r'''
import json
import sys
import rclpy
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from unilab_core.ros.transport_node import TensorSubscription
OPTIONS = json.loads(sys.argv[1])
rclpy.init()
node = Node('tx_child')
ex = EventsExecutor()
ex.add_node(node)
seen = []
def cb(batch):
    x = batch.tensors['x']
    print(f'got {batch.seq} {float(x.sum())} {x.flags.writeable}', flush=True)
    seen.append(batch.seq)
sub = TensorSubscription(node, '/t/x', cb, policy='reliable', depth=8, qos=16, **OPTIONS)
print('ready', flush=True)
while rclpy.ok() and len(seen) < 6:
    ex.spin_once(timeout_sec=0.1)
print('counters', json.dumps(sub.counters()), flush=True)
sub.close()
'''


@pytest.mark.parametrize('options', [{}, {'deliver': 'thread', 'prewake_us': 50000.0}],
                         ids=['default', 'thread_prewake'])
def test_cross_process_through_shared_memory(ros, options):
    a, b, ex = ros
    child = subprocess.Popen([sys.executable, '-c', CHILD, json.dumps(options)],
                             stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    try:
        assert child.stdout.readline().startswith('ready')
        pub = TensorPublisher(a, '/t/x', 1 << 16, policy='reliable', slots=8, qos=16)
        assert spin_until(ex, lambda: pub.remote_readers() > 0, 20.0)
        lines, seq, counters = [], 0, None
        deadline = time.monotonic() + 20
        while counters is None and time.monotonic() < deadline:
            if len(lines) < 6:
                seq += 1
                pub.publish('k', seq, {'x': np.full(1000, seq, np.float32)})
            ex.spin_once(timeout_sec=0.05)
            while select.select([child.stdout], [], [], 0.05)[0]:
                line = child.stdout.readline()
                if line.startswith('got'):
                    lines.append(line.split())
                elif line.startswith('counters'):
                    counters = json.loads(line.split(' ', 1)[1])
                    break
        assert len(lines) == 6
        # reliable: every message, in order, each intact and read-only
        assert [int(s) for _, s, _, _ in lines] == list(range(1, 7))
        for _, s, total, writeable in lines:
            assert float(total) == 1000.0 * int(s) and writeable == 'False'
        # The first message arrives by descriptor (discovery: the reader maps the segment);
        # then the reader's thread sleeps on the ring's futex and reads the ring directly,
        # and the publisher stops sending descriptors the reader no longer needs.
        assert counters['shm'] >= 1 and counters['shm_wake'] >= 1
        assert counters['shm'] + counters['shm_wake'] == 6
        assert counters['wake_threads'] == 1
        if options.get('prewake_us'):
            # Messages come about every 0.05-0.1 s: once the period is known, the wake
            # thread polls ahead of the next one and catches it without a futex wake-up.
            assert counters['prewake_polled'] >= 1
        assert pub.stats['descriptors_skipped'] >= 1 and pub.stats['serialised'] == 0
        assert pub.writer.ring.wakes >= 1
        segment = pub.writer.name
        assert os.path.exists('/dev/shm/' + segment)
        pub.close()
        assert not os.path.exists('/dev/shm/' + segment)
    finally:
        child.kill()
        child.wait(10)
