# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A reader that cannot share memory with the writer gets every message serialised.

Two ways to be such a reader: another host identity on this machine
(``UNILAB_TRANSPORT_HOST_ID``, the identity override kept for tests), and two
"hosts" on one machine - writer and reader each in network, mount and IPC
namespaces of their own with their own ``/dev/shm``, joined by a veth pair
that DDS discovers across (needs root; skipped with the reason otherwise).
"""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import rclpy
from rclpy.node import Node
from unilab_core import two_hosts
from unilab_core.ros.runtime import detach_and_shutdown
from unilab_core.ros.tensor_topic import TensorPublisher
from unilab_core.testing import isolate_ros_domain, spin_until
from unilab_core.transport import shm

isolate_ros_domain()

N = 24          # messages of the reliable topic
ELEMS = 25_000  # float32: 100 kB a message, beyond one UDP datagram (DDS fragments it)

READER = r'''
import json, os, sys, time
import rclpy
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from unilab_core.ros.tensor_topic import TensorSubscription
n = int(sys.argv[1])
sys.stdin.readline()  # the network (if any) is set up
rclpy.init()
node = Node('hosts_reader')
ex = EventsExecutor()
ex.add_node(node)
seen = []
def cb(batch):
    x = batch.tensors['x']
    seen.append([batch.seq, float(x[0]), float(x[-1]), int(x.size)])
sub = TensorSubscription(node, '/t/hosts', cb, policy='reliable', depth=n, qos=n)
print('ready', flush=True)
deadline = time.monotonic() + 60
while len(seen) < n and time.monotonic() < deadline:
    ex.spin_once(timeout_sec=0.1)
print('result', json.dumps({'seen': seen, 'counters': sub.counters(),
                            'segments': sorted(os.listdir('/dev/shm'))}), flush=True)
sub.close()
'''

WRITER = r'''
import json, sys, time
import numpy as np
import rclpy
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from unilab_core.ros.tensor_topic import TensorPublisher
from unilab_core.testing import spin_until
n, elems = int(sys.argv[1]), int(sys.argv[2])
sys.stdin.readline()
rclpy.init()
node = Node('hosts_writer')
ex = EventsExecutor()
ex.add_node(node)
pub = TensorPublisher(node, '/t/hosts', elems * 4 + 4096, policy='reliable', slots=8, qos=n)
ok = spin_until(ex, lambda: pub.remote_readers() > 0, 60.0)
for seq in range(1, n + 1):
    pub.publish('k', seq, {'x': np.arange(elems, dtype=np.float32) + seq})
    ex.spin_once(timeout_sec=0.02)
spin_until(ex, lambda: False, 3.0)  # let reliable DDS deliver and the reader report
print('result', json.dumps({'matched': ok, 'stats': dict(pub.stats)}), flush=True)
'''


def _env(**extra) -> dict:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), **extra)


def _check_reader(got: dict, n: int = N) -> None:
    """Every message, in order, intact, all as serialised messages, no segment opened."""
    assert [s for s, _, _, _ in got['seen']] == list(range(1, n + 1))
    for seq, first, last, size in got['seen']:
        assert (first, last, size) == (seq, ELEMS - 1 + seq, ELEMS)
    c = got['counters']
    assert c['standard'] == n and c.get('shm', 0) == 0 and c.get('shm_wake', 0) == 0
    assert c['foreign_host'] >= 1  # the writer's descriptors were seen and left alone
    assert not any(k.startswith('error_') for k in c)


@pytest.fixture
def ros():
    from rclpy.experimental import EventsExecutor
    rclpy.init()
    node = Node('hosts_writer')
    ex = EventsExecutor()
    ex.add_node(node)
    yield node, ex
    detach_and_shutdown(ex, [node])
    node.destroy_node()
    rclpy.try_shutdown()


def test_host_identity_names_boot_shm_and_pid_namespace(monkeypatch):
    monkeypatch.delenv(shm.HOST_ID_ENV, raising=False)
    me = shm.host_identity()
    st = os.stat('/dev/shm')
    boot = open('/proc/sys/kernel/random/boot_id').read().strip()
    assert me.startswith(boot + '/') and f'shm{st.st_dev:x}.{st.st_ino}' in me
    assert f'pid{os.stat("/proc/self/ns/pid").st_ino}' in me
    monkeypatch.setenv(shm.HOST_ID_ENV, 'elsewhere')
    assert shm.host_identity() == 'elsewhere'


def test_reader_with_another_host_identity_gets_every_message_serialised(ros):
    node, ex = ros
    reader = subprocess.Popen(
        [sys.executable, '-c', READER, str(N)], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=_env(**{shm.HOST_ID_ENV: 'another-host/shm0.0/pid0'}))
    try:
        reader.stdin.write('go\n')
        reader.stdin.flush()
        assert reader.stdout.readline().startswith('ready')
        pub = TensorPublisher(node, '/t/hosts', ELEMS * 4 + 4096, policy='reliable', slots=8,
                              qos=N)
        assert spin_until(ex, lambda: pub.remote_readers() > 0, 20.0)
        for seq in range(1, N + 1):
            pub.publish('k', seq, {'x': np.arange(ELEMS, dtype=np.float32) + seq})
            ex.spin_once(timeout_sec=0.01)
        got = two_hosts.result(reader)
        _check_reader(got)
        # The writer: its ring was written (descriptors still serve readers on this host)
        # but nobody mapped it; every message also went out serialised, and counted so.
        assert pub.stats['serialised_unmapped'] == N and pub.stats['serialised'] == 0
        assert pub.stats['unmapped_readers'] == 1
        assert pub.writer.mapped_reader_count() == 0
        pub.close()
    finally:
        reader.kill()
        reader.wait(10)


def test_reader_on_another_host_in_namespaces_gets_every_message_serialised():
    why = two_hosts.unavailable()
    if why:
        pytest.skip(f'two hosts on one machine: {why}')
    tmp = tempfile.mkdtemp(prefix='unilab_hosts_')
    addr = two_hosts.addresses(('writer', 'reader'))
    env = {'writer': two_hosts.host_env(tmp, 'writer', addr['reader']),
           'reader': two_hosts.host_env(tmp, 'reader', addr['writer'])}
    writer = two_hosts.start([sys.executable, '-c', WRITER, str(N), str(ELEMS)],
                             env['writer'])
    reader = two_hosts.start([sys.executable, '-c', READER, str(N)], env['reader'])
    veth = ''
    try:
        veth = two_hosts.link({'writer': writer, 'reader': reader}, addr)
        for proc in (reader, writer):
            proc.stdin.write('go\n')
            proc.stdin.flush()
        assert reader.stdout.readline().startswith('ready')
        got = two_hosts.result(reader)
        wrote = two_hosts.result(writer)
        assert wrote['matched']
        _check_reader(got)
        # The reader's own /dev/shm never saw the writer's segment.
        assert not [s for s in got['segments'] if s.startswith(shm.PREFIX)]
        st = wrote['stats']
        assert st['serialised_unmapped'] == N and st['unmapped_readers'] == 1
        assert st.get('serialised', 0) == 0
    finally:
        for proc in (writer, reader):
            two_hosts.stop(proc)
        if veth:
            two_hosts.unlink(veth)
        shutil.rmtree(tmp, ignore_errors=True)
