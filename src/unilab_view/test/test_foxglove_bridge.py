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


def _client_got(bridge, publish, topics):
    """Return ``{topic: (log time, JSON)}``: the first message of each, ``publish`` at 20 Hz."""
    stop = threading.Event()

    def loop():  # a view at screen rate
        while not stop.is_set():
            publish()
            time.sleep(0.05)
    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        with connect(f'ws://127.0.0.1:{bridge.port}', subprotocols=[SUBPROTOCOL]) as ws:
            channels = _advertised(ws, set(topics))
            subs = dict(enumerate(topics, start=1))
            ws.send(json.dumps({'op': 'subscribe', 'subscriptions': [
                {'id': k, 'channelId': channels[t]['id']} for k, t in subs.items()]}))
            got, deadline = {}, time.monotonic() + 10
            while len(got) < len(topics) and time.monotonic() < deadline:
                msg = ws.recv(timeout=10)
                if isinstance(msg, bytes) and msg[0] == MESSAGE_DATA:
                    sub, stamp = struct.unpack_from('<IQ', msg, 1)
                    got[subs[sub]] = (stamp, json.loads(msg[13:]))
    finally:
        stop.set()
        thread.join()
    return got, channels


def test_client_decodes_joint_states_and_frames():
    bridge = FoxgloveBridge(port=0)
    model = RobotModel(URDF)
    model.set_joints(['yaw', 'pitch'], [math.pi / 2, 0.25])

    def publish():
        bridge.joint_states('', model.joint_names, model.q, 1_500_000_000)
        bridge.frames('', model, 1_500_000_000)
    try:
        got, channels = _client_got(bridge, publish, ['/joint_states', '/tf'])
    finally:
        bridge.close()
    assert channels['/tf']['schemaName'] == 'foxglove.FrameTransforms'
    assert channels['/joint_states']['encoding'] == 'json'
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


def test_the_workspace_box_is_its_twelve_edges_in_the_robots_frame():
    bridge = FoxgloveBridge(port=0)
    box = (0.25, -0.4, 0.1, 0.65, 0.4, 0.5)
    try:
        got, channels = _client_got(
            bridge, lambda: bridge.workspace('/robot1', 'base_link', box, 7),
            ['/robot1/workspace'])
    finally:
        bridge.close()
    assert channels['/robot1/workspace']['schemaName'] == 'foxglove.SceneUpdate'
    (entity,) = got['/robot1/workspace'][1]['entities']
    assert entity['frame_id'] == 'robot1/base_link' and entity['lifetime'] == {'sec': 0, 'nsec': 0}
    (lines,) = entity['lines']
    points = [tuple(p[k] for k in 'xyz') for p in lines['points']]
    edges = set(zip(points[::2], points[1::2]))
    assert lines['type'] == 2 and len(points) == 24 and len(edges) == 12  # a line list
    sides = sorted(math.dist(a, b) for a, b in edges)
    assert sides == pytest.approx([0.4] * 8 + [0.8] * 4)
    assert {p for e in edges for p in e} == {(x, y, z) for x in (0.25, 0.65)
                                             for y in (-0.4, 0.4) for z in (0.1, 0.5)}
