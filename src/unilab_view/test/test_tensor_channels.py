# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The graph's TensorBatch topics on Foxglove: advertised, decoded as arrays, read while watched.

A real view node (``--foxglove``) beside a talker publishing TensorBatch messages; a
WebSocket client (Foxglove's protocol) sees the topic advertised, subscribes, and decodes
the arrays; the view holds a ROS subscription on the topic only while the client does.
"""

import contextlib
import json
import struct
import threading
import time

import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from test_foxglove_bridge import _advertised, MESSAGE_DATA, SUBPROTOCOL
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_core.testing import isolate_ros_domain
from unilab_interfaces.msg import TensorBatch
from unilab_view.tensor_channels import MAX_VALUES, SCHEMA, tensor_json
from websockets.sync.client import connect

isolate_ros_domain()  # before rclpy.init: this test's topics stay its own

TOPIC = '/view_tensors/action'
WAIT_S = 20.0
ENVS, ACT = 4096, 6  # a batch larger than a message carries


def _wait(what, done):
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f'never: {what}'
        time.sleep(0.02)


def _batch(seq):
    action = np.arange(ENVS * ACT, dtype=np.float32).reshape(ENVS, ACT) + seq
    action[0, 5] = np.nan
    return make_batch('action', seq, {'action': action, 'step': np.array([seq], np.float32)},
                      stamp_ns=2_000_000_000 + seq)


@contextlib.contextmanager
def live_view(ns: str, talk, **view):
    """
    Yield a view node (``ViewNode(ns, **view)``) running its frames beside a talker.

    ``talk(talker_node)`` makes the talker's publishers and returns ``step(k)``, called
    at 100 Hz with a view frame after each; everything stops on exit.
    """
    from unilab_view.view_node import ViewNode
    rclpy.init()
    node = ViewNode([ns], port=0, host='127.0.0.1', foxglove_port=0, **view)
    node.tensors.discover_s = 0.1
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    talker = rclpy.create_node(f'{ns.strip("/")}_talker')
    step = talk(talker)
    stop = threading.Event()

    def frames():
        k = 0
        while not stop.is_set():
            step(k)
            k += 1
            node.frame(executor)
            time.sleep(0.01)
    thread = threading.Thread(target=frames, daemon=True)
    thread.start()
    try:
        yield node
    finally:
        stop.set()
        thread.join()
        executor.shutdown()
        node.close()
        node.destroy_node()
        talker.destroy_node()
        rclpy.try_shutdown()


def test_a_watched_tensor_topic_reaches_a_client_as_arrays_and_only_while_watched():
    pubs = []

    def talk(talker):
        pubs.append(talker.create_publisher(TensorBatch, TOPIC, 10))
        return lambda k: pubs[0].publish(_batch(k))
    with live_view('/view_tensors', talk) as node:
        pub = pubs[0]
        with connect(f'ws://127.0.0.1:{node.bridge.port}', subprotocols=[SUBPROTOCOL]) as ws:
            channels = _advertised(ws, {TOPIC}, timeout_s=WAIT_S)
            assert channels[TOPIC]['schemaName'] == SCHEMA
            assert channels[TOPIC]['encoding'] == 'json'
            # Advertised, not watched: the view does not read the topic.
            time.sleep(0.5)
            assert pub.get_subscription_count() == 0
            ws.send(json.dumps({'op': 'subscribe', 'subscriptions': [
                {'id': 7, 'channelId': channels[TOPIC]['id']}]}))
            _wait('the view subscribed', lambda: pub.get_subscription_count() == 1)
            got, deadline = None, time.monotonic() + WAIT_S
            while got is None and time.monotonic() < deadline:
                msg = ws.recv(timeout=WAIT_S)
                if isinstance(msg, bytes) and msg[0] == MESSAGE_DATA:
                    sub, stamp = struct.unpack_from('<IQ', msg, 1)
                    got = (sub, stamp, json.loads(msg[13:]))
            assert got is not None
            ws.send(json.dumps({'op': 'unsubscribe', 'subscriptionIds': [7]}))
            _wait('the view unsubscribed', lambda: pub.get_subscription_count() == 0)
    sub, stamp, data = got
    seq = data['seq']
    assert sub == 7 and data['kind'] == 'action' and stamp == 2_000_000_000 + seq
    assert data['timestamp'] == {'sec': 2, 'nsec': seq}
    action = data['tensors']['action']
    # The first rows up to MAX_VALUES values; the message says how many of how many.
    rows = MAX_VALUES // ACT
    assert action['shape'] == [ENVS, ACT] and action['rows'] == rows
    expected = np.arange(rows * ACT, dtype=np.float32).reshape(rows, ACT) + seq
    sent = np.array([[np.nan if v is None else v for v in row] for row in action['data']])
    assert action['data'][0][5] is None  # NaN as null: JSON has no NaN
    np.testing.assert_array_equal(sent[0, :5], expected[0, :5])
    np.testing.assert_array_equal(sent[1:], expected[1:])
    assert data['tensors']['step'] == {'shape': [1], 'rows': 1, 'data': [float(seq)]}


def test_small_tensors_are_sent_whole_and_scalars_as_one_value():
    batch = read_batch(make_batch('task_state', 3, {
        'reward': np.array([1.5, -2.0], np.float32),
        'extras': np.ones((2, 3, 4), np.float32), 'weights': np.zeros(5000, np.float32)}))
    data = tensor_json(batch)
    assert data['tensors']['reward'] == {'shape': [2], 'rows': 2, 'data': [1.5, -2.0]}
    assert data['tensors']['extras']['rows'] == 2
    assert np.array(data['tensors']['extras']['data']).shape == (2, 3, 4)
    assert data['tensors']['weights']['rows'] == MAX_VALUES
    assert tensor_json(batch, max_values=1)['tensors']['extras']['rows'] == 1  # at least one
    scalar = batch._replace(tensors={'x': np.float32(2.0) * np.ones((), np.float32)})
    assert tensor_json(scalar)['tensors']['x'] == {'shape': [], 'rows': 1, 'data': [2.0]}
    json.dumps(data, allow_nan=False)  # strict JSON


@pytest.mark.parametrize('bad', [b'\x00\x01\x02'])
def test_a_ragged_message_is_counted_not_sent(bad):
    from unilab_interfaces.msg import Tensor
    from unilab_view.tensor_channels import TensorChannels, Watchers

    class _Bridge:
        def __init__(self):
            self.sent = []

        def advertise(self, topic, schema):
            pass

        def log(self, topic, schema, msg, stamp_ns):
            self.sent.append(msg)

    class _Logger:
        def warning(self, *a, **k):
            pass

    class _Node:
        def get_topic_names_and_types(self):
            return []

        def get_logger(self):
            return _Logger()

    bridge = _Bridge()
    channels = TensorChannels(_Node(), bridge, Watchers(), qos=None)
    msg = TensorBatch(kind='x', tensors=[Tensor(name='t', shape=[1], data=list(bad))])
    channels.latest['/t'] = msg
    channels.update()
    assert bridge.sent == [] and channels.counters == {'sent': 0, 'undecodable': 1}
