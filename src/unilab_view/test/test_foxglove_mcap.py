# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The live Foxglove path and its MCAP recording carry the same channels and messages.

A real view node with ``--foxglove`` and ``--mcap`` beside a talker (a URDF, joint
states, a TensorBatch topic); a WebSocket client watches every channel. Once the view
stops, the MCAP file is in place (no temporary left), holds every channel the client
was offered, and every message the client received, byte for byte at the same log time.
"""

import json
import struct
import time

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from test_foxglove_bridge import MESSAGE_DATA, SUBPROTOCOL
from test_model import URDF
from test_tensor_channels import live_view
from unilab_core.ros.qos import DESCRIPTION_QOS
from unilab_core.ros.tensor_msg import make_batch
from unilab_core.testing import isolate_ros_domain
from unilab_interfaces.msg import TensorBatch
from websockets.sync.client import connect

isolate_ros_domain()  # before rclpy.init: this test's topics stay its own

NS = '/view_mcap'
WAIT_S = 20.0
#: what the client must have received from each channel before the view stops
ENOUGH = 5


def _mcap_messages(path):
    from mcap.reader import make_reader
    with open(path, 'rb') as f:
        reader = make_reader(f)
        channels = {c.id: c.topic for c in reader.get_summary().channels.values()}
        out = {}
        for _schema, channel, message in reader.iter_messages():
            out.setdefault(channel.topic, []).append((message.log_time, message.data))
    return set(channels.values()), out


def test_the_recording_holds_what_the_live_client_got(tmp_path):
    out = tmp_path / 'view.mcap'

    def talk(talker):
        talker.create_publisher(String, f'{NS}/robot_description', DESCRIPTION_QOS).publish(
            String(data=URDF))
        js = talker.create_publisher(JointState, f'{NS}/joint_states', 10)
        action = talker.create_publisher(TensorBatch, f'{NS}/action', 10)

        def step(k):
            js.publish(JointState(name=['yaw', 'pitch'], position=[0.01 * k, 0.2]))
            action.publish(make_batch('action', k, {'action': np.full((2, 3), k, np.float32)},
                                      stamp_ns=1_000_000_000 + k))
        return step
    got, offered = {}, {}
    with live_view(NS, talk, mcap=str(out), workspace=(0.2, -0.3, 0.0, 0.6, 0.3, 0.4)) as node:
        with connect(f'ws://127.0.0.1:{node.bridge.port}', subprotocols=[SUBPROTOCOL]) as ws:
            deadline = time.monotonic() + WAIT_S
            wanted = {f'{NS}/joint_states', '/tf', f'{NS}/action', f'{NS}/workspace'}
            subs = {}
            while not (wanted <= set(got) and all(len(got[t]) >= ENOUGH for t in wanted)):
                assert time.monotonic() < deadline, f'the client got only {sorted(got)}'
                msg = ws.recv(timeout=WAIT_S)
                if isinstance(msg, str):
                    data = json.loads(msg)
                    if data.get('op') == 'advertise':
                        new = {c['id']: c['topic'] for c in data['channels']}
                        offered.update({t: i for i, t in new.items()})
                        ws.send(json.dumps({'op': 'subscribe', 'subscriptions': [
                            {'id': i, 'channelId': i} for i in new]}))
                        subs.update(new)
                elif msg[0] == MESSAGE_DATA:
                    sub, stamp = struct.unpack_from('<IQ', msg, 1)
                    got.setdefault(subs[sub], []).append((stamp, msg[13:]))
    assert out.is_file() and [p.name for p in tmp_path.iterdir()] == ['view.mcap']
    channels, recorded = _mcap_messages(out)
    # Every channel the client was offered, the TensorBatch topic's among them.
    assert set(offered) <= channels
    assert f'{NS}/action' in channels and '/tf' in channels
    # Every message the client received is in the file, at the same log time, same bytes.
    for topic, messages in got.items():
        assert set(messages) <= set(recorded[topic]), topic
    joints = json.loads(recorded[f'{NS}/joint_states'][-1][1])
    assert joints['name'] == ['yaw', 'pitch']
    tensors = json.loads(recorded[f'{NS}/action'][-1][1])['tensors']['action']
    assert tensors['shape'] == [2, 3] and len(tensors['data']) == 2
