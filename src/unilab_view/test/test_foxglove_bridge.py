# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A WebSocket client on the Foxglove bridge decodes a joint state and a frame transform."""

import json
import math
import struct
import threading
import time

import pytest
from test_model import URDF
from unilab_view.foxglove_bridge import FoxgloveBridge
from unilab_view.model import RobotModel
from websockets.sync.client import connect

SUBPROTOCOL = 'foxglove.sdk.v1'  # what the sdk's server accepts
MESSAGE_DATA = 0x01  # binary opcode: subscription id (u32), log time (u64), payload


def _advertised(ws, topics, timeout_s=10.0):
    channels, deadline = {}, time.monotonic() + timeout_s
    while not topics <= set(channels) and time.monotonic() < deadline:
        msg = ws.recv(timeout=timeout_s)
        if isinstance(msg, str):
            data = json.loads(msg)
            if data.get('op') == 'advertise':
                channels.update({c['topic']: c for c in data['channels']})
    return channels


def test_client_decodes_joint_states_and_frames():
    bridge = FoxgloveBridge(port=0)
    model = RobotModel(URDF)
    model.set_joints(['yaw', 'pitch'], [math.pi / 2, 0.25])
    stop = threading.Event()

    def publish():  # a view at screen rate
        while not stop.is_set():
            bridge.joint_states('', model.joint_names, model.q, 1_500_000_000)
            bridge.frames('', model, 1_500_000_000)
            time.sleep(0.05)
    thread = threading.Thread(target=publish, daemon=True)
    thread.start()
    try:
        with connect(f'ws://127.0.0.1:{bridge.port}', subprotocols=[SUBPROTOCOL]) as ws:
            channels = _advertised(ws, {'/joint_states', '/tf'})
            assert channels['/tf']['schemaName'] == 'foxglove.FrameTransforms'
            assert channels['/joint_states']['encoding'] == 'json'
            subs = {1: '/joint_states', 2: '/tf'}
            ws.send(json.dumps({'op': 'subscribe', 'subscriptions': [
                {'id': k, 'channelId': channels[t]['id']} for k, t in subs.items()]}))
            got, deadline = {}, time.monotonic() + 10
            while len(got) < 2 and time.monotonic() < deadline:
                msg = ws.recv(timeout=10)
                if isinstance(msg, bytes) and msg[0] == MESSAGE_DATA:
                    sub, stamp = struct.unpack_from('<IQ', msg, 1)
                    got[subs[sub]] = (stamp, json.loads(msg[13:]))
    finally:
        stop.set()
        thread.join()
        bridge.close()
    stamp, joints = got['/joint_states']
    assert stamp == 1_500_000_000
    assert joints == {'name': ['yaw', 'pitch'], 'position': [math.pi / 2, 0.25]}
    edges = {(t['parent_frame_id'], t['child_frame_id']): t for t in got['/tf'][1]['transforms']}
    assert set(edges) == {('base_link', 'link1'), ('link1', 'link2'), ('link2', 'tool')}
    # The yaw joint: 0.1 up, a quarter turn about z (quaternion (0, 0, sin 45°, cos 45°)).
    yaw = edges['base_link', 'link1']
    assert yaw['translation'] == {'x': 0.0, 'y': 0.0, 'z': 0.1}
    h = math.sqrt(0.5)
    assert [yaw['rotation'][k] for k in 'xyzw'] == pytest.approx([0.0, 0.0, h, h])
    assert edges['link2', 'tool']['translation'] == {'x': 0.3, 'y': 0.0, 'z': 0.0}
