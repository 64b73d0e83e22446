# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Record from a live graph and read back; truncated, killed and unknown-type bags."""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import rclpy
from rclpy.serialization import deserialize_message
from rosbags.rosbag2 import Writer
from sensor_msgs.msg import JointState
from unilab_bag.recorder_node import RecorderNode
from unilab_bag.storage import BagError, BagReader, recover_bag
from unilab_bag.testing import tensor_batch_bytes, write_bag
from unilab_bag.types import BagTypeError
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_record_then_read_back_with_rosbags_and_rclpy(tmp_path, storage):
    out = tmp_path / 'bag'
    rclpy.init()
    try:
        rec = RecorderNode(out, ['/unilab/observation', '/joint_states'], storage)
        src = rclpy.create_node('source')
        obs_pub = src.create_publisher(TensorBatch, '/unilab/observation', 10)
        js_pub = src.create_publisher(JointState, '/joint_states', 10)
        ex = rclpy.executors.SingleThreadedExecutor()
        ex.add_node(rec)
        ex.add_node(src)
        assert spin_until(ex, lambda: obs_pub.get_subscription_count() > 0
                          and js_pub.get_subscription_count() > 0)
        sent = []
        for seq in range(5):
            obs = np.arange(6, dtype=np.float32).reshape(2, 3) + seq
            obs_pub.publish(make_batch('observation', seq, {'obs': obs}, stamp_ns=seq * 10))
            js = JointState(name=['env0/a', 'env0/b'], position=[0.5 * seq, 1.0])
            js_pub.publish(js)
            sent.append(obs)
        assert spin_until(ex, lambda: rec.counters['messages'] == 10)
        rec.close()
        ex.shutdown()
        src.destroy_node()
        rec.destroy_node()
    finally:
        rclpy.try_shutdown()
    assert (out / 'metadata.yaml').is_file()
    with BagReader(out) as r:
        assert r.storage == storage
        assert r.topics == {'/unilab/observation': ('unilab_interfaces/msg/TensorBatch', 5),
                            '/joint_states': ('sensor_msgs/msg/JointState', 5)}
        conn = next(c for c in r._reader.connections if c.topic == '/unilab/observation')
        assert 'MSG: unilab_interfaces/Tensor' in conn.msgdef.data  # self-describing
        got = [m for m in r.messages(['/unilab/observation'])]
        for seq, (m, obs) in enumerate(zip(got, sent)):
            via_rosbags = r.deserialize(m)
            assert via_rosbags.seq == seq
            np.testing.assert_array_equal(via_rosbags.tensors[0].data, obs.ravel())
            via_rclpy = read_batch(deserialize_message(m.raw, TensorBatch))
            np.testing.assert_array_equal(via_rclpy.tensors['obs'], obs)
        js = [r.deserialize(m) for m in r.messages(['/joint_states'])]
        assert [list(j.position) for j in js] == [[0.5 * s, 1.0] for s in range(5)]


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_truncated_file_error_names_the_file(tmp_path, storage):
    bag = write_bag(tmp_path / 'bag', [
        ('/unilab/action', 'unilab_interfaces/msg/TensorBatch', i,
         tensor_batch_bytes('action', i, {'action': np.ones((4, 6))})) for i in range(50)],
        storage)
    f = next(p for p in bag.iterdir() if p.suffix in ('.mcap', '.db3'))
    f.write_bytes(f.read_bytes()[:f.stat().st_size // 2])
    with pytest.raises(BagError, match=f.name):
        with BagReader(bag) as r:
            list(r.messages())


def test_missing_metadata_points_to_recover(tmp_path):
    (tmp_path / 'bag').mkdir()
    with pytest.raises(BagError, match='unilab bag recover'):
        BagReader(tmp_path / 'bag')


def test_unknown_type_error_names_the_topic(tmp_path):
    w = Writer(tmp_path / 'bag', version=9)
    w.open()
    c = w.add_connection('/acme/widget', 'acme_msgs/msg/Widget', msgdef='',
                         rihs01='RIHS01_' + '0' * 64)
    w.write(c, 1, b'\x00\x01\x00\x00')
    w.close()
    with BagReader(tmp_path / 'bag') as r:
        assert r.unknown == {'/acme/widget': 'acme_msgs/msg/Widget'}
        with pytest.raises(BagTypeError, match='/acme/widget'):
            r.deserialize(next(r.messages()))


KILLED_WRITER = textwrap.dedent('''
    import sys, time
    sys.path[:0] = {paths!r}
    from unilab_bag.testing import tensor_batch_bytes
    from unilab_bag.storage import BagWriter
    w = BagWriter(sys.argv[1], sys.argv[2])
    w.add_topic('/unilab/action', 'unilab_interfaces/msg/TensorBatch')
    for i in range(40):
        w.write('/unilab/action', i, tensor_batch_bytes('action', i, {{'a': [float(i)]}}))
        if i == 29:
            w.flush()  # 30 messages durable, 10 more only in memory
    print('ready', flush=True)
    time.sleep(60)
''')


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_sigkill_keeps_everything_up_to_the_last_flush(tmp_path, storage):
    script = KILLED_WRITER.format(paths=[os.path.dirname(__file__)] + sys.path)
    proc = subprocess.Popen([sys.executable, '-c', script, str(tmp_path / 'bag'), storage],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == 'ready'
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    counts, _ = recover_bag(tmp_path / 'bag', tmp_path / 'fixed')
    assert counts == {'/unilab/action': 30}
    with BagReader(tmp_path / 'fixed') as r:
        seqs = [r.deserialize(m).seq for m in r.messages()]
    assert seqs == list(range(30))
