# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""TensorPublisher / TensorSubscription on real rclpy: in-process, cross-process, interop."""

import json
import os
import select
import subprocess
import sys
import time
import types

import numpy as np
import pytest
import rclpy
from rclpy.node import Node
from unilab_core.ros.runtime import detach_and_shutdown
from unilab_core.ros.tensor_topic import descriptor_topic, TensorPublisher, TensorSubscription
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


def test_a_plain_reader_matched_before_the_graph_lists_it_gets_every_message(
        ros, monkeypatch):
    """DDS matches a reader before the ROS graph lists it: the reader still gets the messages."""
    from unilab_core.ros.tensor_topic import publisher as publisher_mod
    a, b, ex = ros
    pub = TensorPublisher(a, '/t/lag', 1 << 16)
    aware = TensorSubscription(b, '/t/lag', lambda batch: None)  # a transport-aware reader
    plain = []
    b.create_subscription(TensorBatch, '/t/lag', plain.append, 10)  # e.g. a bag recorder
    assert spin_until(ex, lambda: pub.std_pub.get_subscription_count() == 2
                      and pub.desc_pub.get_subscription_count() == 1, 5.0)
    # The graph has not caught up with the matches yet (as under load): it lists no reader.
    monkeypatch.setattr(a, 'get_subscriptions_info_by_topic', lambda topic: [])
    obs = np.zeros((2, 3), np.float32)
    pub.publish('observation', 1, {'obs': obs})
    assert spin_until(ex, lambda: plain, 5.0), 'the plain reader got nothing'
    assert pub.plain_readers() == 1
    # The graph catches up: asked again after PLAIN_RETRY_S, it agrees, and the count holds.
    monkeypatch.undo()
    time.sleep(publisher_mod.PLAIN_RETRY_S)
    pub.publish('observation', 2, {'obs': obs})
    assert spin_until(ex, lambda: len(plain) == 2, 5.0)
    assert pub.plain_readers() == 1 and pub._plain_retry_at is None
    aware.close()
    pub.close()


@pytest.mark.parametrize('deliver', ['thread', 'inline'])
def test_inproc_deliver_thread_runs_the_callback_inside_publish(ros, deliver):
    import threading
    a, b, ex = ros
    pub = TensorPublisher(a, '/t/inline', 1 << 16)
    got = []
    sub = TensorSubscription(b, '/t/inline', lambda batch: got.append(
        (batch, threading.get_ident())), deliver=deliver)
    queued = []
    later = TensorSubscription(b, '/t/inline', queued.append)  # default: the executor
    obs = np.ones((2, 2), np.float32)
    pub.publish('observation', 1, {'obs': obs})
    # before any spin: the thread subscriber already has the very same array
    assert len(got) == 1 and got[0][0].tensors['obs'] is obs
    assert got[0][1] == threading.get_ident() and queued == []
    assert sub.stats['inproc_inline'] == 1 and sub.stats['inproc'] == 1
    assert spin_until(ex, lambda: queued, 5.0) and queued[0].tensors['obs'] is obs
    sub.close()
    later.close()
    pub.close()


def _subscription_and_raw_descriptors(ros, topic):
    """Return (subscription on b, its deliveries, a raw descriptor publisher on a)."""
    a, b, ex = ros
    got = []
    sub = TensorSubscription(b, topic, got.append)
    raw = a.create_publisher(TensorDescriptor, descriptor_topic(topic), 10)
    assert spin_until(ex, lambda: raw.get_subscription_count() > 0, 5.0)
    return sub, got, raw


def test_bad_descriptor_logged_counted_dropped_and_node_keeps_running(ros):
    a, b, ex = ros
    sub, got, raw = _subscription_and_raw_descriptors(ros, '/t/bad')
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
from unilab_core.ros.tensor_topic import TensorSubscription
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


def _publish_until_child_reports(pub, ex, child, may_publish) -> tuple[list, dict | None]:
    """Publish `k` messages (x = seq) until the CHILD process got six and printed counters."""
    lines, seq, counters = [], 0, None
    deadline = time.monotonic() + 20
    while counters is None and time.monotonic() < deadline:
        if len(lines) < 6 and may_publish(seq):
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
    return lines, counters


# prewake 0.1 s: as long as the publishing period (about 0.1 s, irregular on a loaded
# machine), so once the period is known the thread polls through every arrival.
@pytest.mark.parametrize('options', [{}, {'deliver': 'thread', 'prewake_us': 100000.0},
                                     {'deliver': 'inline'}],
                         ids=['default', 'thread_prewake', 'inline'])
def test_cross_process_through_shared_memory(ros, options):
    a, b, ex = ros
    child = subprocess.Popen([sys.executable, '-c', CHILD, json.dumps(options)],
                             stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    pub = None
    try:
        assert child.stdout.readline().startswith('ready')
        pub = TensorPublisher(a, '/t/x', 1 << 16, policy='reliable', slots=8, qos=16)
        assert spin_until(ex, lambda: pub.remote_readers() > 0, 20.0)
        lines, counters = _publish_until_child_reports(pub, ex, child, lambda seq: True)
        assert len(lines) == 6
        # reliable: every message, in order, each intact; read-only views of the ring, but
        # for a message that arrived serialised while the reader had not mapped it yet
        assert [int(s) for _, s, _, _ in lines] == list(range(1, 7))
        for _, s, total, _ in lines:
            assert float(total) == 1000.0 * int(s)
        # (counters count arrivals; a message that came both ways is delivered once)
        standard = counters.get('standard', 0)
        twice = counters.get('duplicates_dropped', 0)
        assert sum(w == 'True' for _, _, _, w in lines) <= standard
        # The first message arrives by descriptor (discovery: the reader maps the segment;
        # until it has, the publisher also serialises it, see test_tensor_topic_hosts.py);
        # then the reader's thread sleeps on the ring's futex and reads the ring directly,
        # and the publisher stops sending descriptors the reader no longer needs.
        assert counters['shm_wake'] >= 1
        assert counters['shm'] + counters['shm_wake'] + standard - twice == 6
        assert standard <= pub.stats['serialised_unmapped'] < 6
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
        if pub is not None:
            pub.close()  # a failed case must not leave its segment to the next one
        child.kill()
        child.wait(10)


def test_cross_process_through_iceoryx2(ros):
    """The iceoryx2 backend behind the same API: reliable, in order, the library's wake-ups."""
    pytest.importorskip('iceoryx2')
    a, b, ex = ros
    child = subprocess.Popen([sys.executable, '-c', CHILD, json.dumps({})],
                             stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    try:
        assert child.stdout.readline().startswith('ready')
        pub = TensorPublisher(a, '/t/x', 1 << 16, policy='reliable', slots=8, qos=16,
                              backend='iceoryx2')
        assert spin_until(ex, lambda: pub.remote_readers() > 0, 20.0)
        # Until the reader has subscribed to the service, messages go only to the history
        # the service keeps; then publish the six the test counts.
        lines, counters = _publish_until_child_reports(
            pub, ex, child, lambda seq: seq < 6 or pub.writer.reader_count() > 0)
        assert len(lines) == 6
        got = [int(s) for _, s, _, _ in lines]
        assert got == list(range(got[0], got[0] + 6))  # reliable: in order, none missing
        for _, s, total, _ in lines:
            assert float(total) == 1000.0 * int(s)
        # The descriptor only names the service; every payload came through iceoryx2 and
        # the reader slept in the library's listener, but for those that arrived serialised
        # before it had subscribed to the service (writable copies).
        standard = counters.get('standard', 0)
        twice = counters.get('duplicates_dropped', 0)
        assert sum(w == 'True' for _, _, _, w in lines) <= standard
        assert counters['shm_wake'] + standard - twice == 6 and counters.get('shm', 0) == 0
        assert counters['shm_wake'] >= 1
        assert counters['wake_threads'] == 1
        assert pub.writer.name.startswith('iox2:unilab/d')
        assert pub.stats['serialised'] == 0 and pub.writer.stats.discarded == 0
        pub.close()
    finally:
        child.kill()
        child.wait(10)


def _cuda() -> bool:
    from unilab_core.transport.cuda import ipc_available
    return ipc_available()


@pytest.mark.skipif(_cuda(), reason='CUDA and cupy here: the descriptor would be opened')
def test_device_descriptor_without_cuda_is_dropped_with_a_clear_error(ros):
    a, b, ex = ros
    sub, got, raw = _subscription_and_raw_descriptors(ros, '/t/dev')
    raw.publish(TensorDescriptor(segment='unilab_d0_gpu_node_t_dev__cuda', slot=0, slot_seq=0,
                                 payload_bytes=4, names=['x'], dtypes=['float32'], ndims=[1],
                                 offsets=[0], shape=[1], device='cuda:0', writer_pid=1))
    assert spin_until(ex, lambda: sub.stats['error_no_cuda'], 5.0)
    assert 'no_cuda' in sub.diagnostic_status().message and got == []
    pub = TensorPublisher(a, '/t/dev', 1024)  # host messages still arrive
    pub.publish('k', 1, {'x': np.ones(3, np.float32)})
    assert spin_until(ex, lambda: got, 5.0)
    sub.close()


class _DeviceArray:
    """What the publisher sees of a CUDA tensor (``is_cuda``, ``device``, host copy)."""

    is_cuda = True
    device = 'cuda:0'

    def __init__(self, arr):
        self.arr = arr

    def detach(self):
        return self

    def cpu(self):
        return self

    def numpy(self):
        return self.arr


def test_cuda_tensors_go_to_the_device_ring_and_plain_readers_get_a_host_copy(
        ros, monkeypatch):
    # No GPU here: the device ring (transport.cuda.CudaTensorWriter, run where CUDA
    # exists) is replaced by a recorder; what is tested is the routing around it.
    import unilab_core.ros.tensor_topic.publisher as tn
    from unilab_core.transport.descriptor import Descriptor, layout_shapes
    made, writes = [], []

    class Recorder:
        def __init__(self, node, topic, capacity, n_slots, policy, timeout_s, device, domain):
            made.append((node, topic, capacity, n_slots, policy, device))
            self.closed = False
            self.ring = types.SimpleNamespace(wake_reader_count=lambda: 0)

        def write(self, kind, seq, tensors, version=0, stamp_ns=0):
            writes.append((kind, seq, tensors))
            specs, nbytes = layout_shapes({k: (v.arr.shape, str(v.arr.dtype))
                                           for k, v in tensors.items()})
            return Descriptor(kind=kind, seq=seq, segment='unilab_d0_x_t_gpu__cuda', slot=0,
                              slot_seq=len(writes) - 1, payload_bytes=nbytes, tensors=specs,
                              version=version, stamp_ns=stamp_ns, device='cuda:0',
                              writer_pid=os.getpid())

        def close(self):
            self.closed = True

    monkeypatch.setattr(tn, 'DEVICE_WRITER', Recorder)
    a, b, ex = ros
    inproc_got, descs, plain = [], [], []
    TensorSubscription(b, '/t/gpu', inproc_got.append)
    b.create_subscription(TensorDescriptor, descriptor_topic('/t/gpu'), descs.append, 10)
    a.create_subscription(TensorBatch, '/t/gpu', plain.append, 10)  # a node not aware
    pub = TensorPublisher(a, '/t/gpu', 1 << 16, policy='reliable', slots=6, latched=True)
    assert spin_until(ex, lambda: pub.plain_readers() > 0, 5.0)
    x = _DeviceArray(np.arange(6, dtype=np.float32).reshape(2, 3))
    pub.publish('obs', 3, {'x': x})
    assert spin_until(ex, lambda: inproc_got and descs and plain, 5.0)
    assert inproc_got[0].tensors['x'] is x  # in this process: the tensor itself
    assert made == [('cuda_/tx_pub', '/t/gpu', 1 << 16, 6, 'reliable', 'cuda:0')]
    from unilab_core.transport import shm
    long_node, long_topic = '/n' + 'x' * 150, '/t' + 'y' * 150
    assert shm.segment_name(0, tn.DEVICE_SEGMENT_PREFIX + long_node, long_topic) != \
        shm.segment_name(0, long_node, long_topic)  # distinct even when truncated
    assert writes[0][2]['x'] is x and pub.writer is None  # no host ring for device batches
    assert descs[0].device == 'cuda:0' and descs[0].segment == 'unilab_d0_x_t_gpu__cuda'
    assert pub.stats['device'] == 1
    assert np.array_equal(np.frombuffer(plain[0].tensors[0].data, np.float32), x.arr.ravel())
    with pytest.raises(ValueError, match=r"mixes CUDA tensors \['x'\] and host arrays \['y'\]"):
        pub.publish('obs', 4, {'x': x, 'y': np.zeros(2, np.float32)})
    writer = pub.device_writer
    pub.close()
    assert writer.closed and pub.device_writer is None


def test_batch_device():
    import torch
    from unilab_core.ros.tensor_topic.publisher import batch_device
    assert batch_device({'a': np.zeros(2), 'b': torch.zeros(2)}) is None
    assert batch_device({'a': _DeviceArray(np.zeros(2))}) == 'cuda:0'
    other = _DeviceArray(np.zeros(2))
    other.device = 'cuda:1'
    with pytest.raises(ValueError, match='several CUDA devices'):
        batch_device({'a': _DeviceArray(np.zeros(2)), 'b': other})


CUDA_CHILD = r'''
import sys
import rclpy
import torch
from rclpy.node import Node
from unilab_core.ros.tensor_topic import TensorSubscription
rclpy.init()
node = Node('tx_cuda_child')
seen = []
def cb(batch):
    x = batch.tensors['x']
    print(f'got {batch.seq} {x.device.type} {float(x.sum())}', flush=True)
    seen.append(batch.seq)
sub = TensorSubscription(node, '/t/cuda', cb, policy='reliable', depth=4)
print('ready', flush=True)
while rclpy.ok() and len(seen) < 3:
    rclpy.spin_once(node, timeout_sec=0.1)
sub.close()
'''


@pytest.mark.skipif(not _cuda(), reason='needs CUDA and cupy (no GPU on this machine)')
def test_cuda_tensors_cross_process_through_the_ros_wrapper(ros):
    import torch
    a, b, ex = ros
    child = subprocess.Popen([sys.executable, '-c', CUDA_CHILD], stdout=subprocess.PIPE,
                             text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    try:
        assert child.stdout.readline().startswith('ready')
        pub = TensorPublisher(a, '/t/cuda', 1 << 16, policy='reliable', slots=4)
        assert spin_until(ex, lambda: pub.remote_readers() > 0, 20.0)
        lines = []
        deadline = time.monotonic() + 30
        seq = 0
        while len(lines) < 3 and time.monotonic() < deadline:
            if seq < 3:
                seq += 1
                pub.publish('k', seq, {'x': torch.full((1000,), float(seq), device='cuda')})
            ex.spin_once(timeout_sec=0.05)
            while select.select([child.stdout], [], [], 0.05)[0]:
                line = child.stdout.readline()
                if line.startswith('got'):
                    lines.append(line.split())
        assert [(int(s), dev, float(t)) for _, s, dev, t in lines] == [
            (i, 'cuda', 1000.0 * i) for i in (1, 2, 3)]
        assert pub.stats['device'] == 3 and pub.writer is None
        pub.close()
    finally:
        child.kill()
        child.wait(10)
