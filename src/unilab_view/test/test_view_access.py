# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The view listens on loopback by default; on another address only the token arms.

The second test puts the view and a page on two "hosts" of this machine (network
namespaces joined by a veth pair: ``unilab_core.two_hosts``; needs root, skipped with the
reason otherwise). The page is a WebSocket client speaking viser's protocol, as the browser
does: it reads the panel the view sends, types into its own "Arm token" field and clicks
Arm / Disarm. The view's process also serves ``<ns>/safety/arm`` and ``disarm`` and counts
the calls that reach them.
"""

import json
import shutil
import sys
import tempfile
import threading

import pytest
import rclpy
from unilab_core import two_hosts
from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()  # before rclpy.init: this test's services stay its own

WAIT_S = 90.0
NS = '/armtest'

VIEW = r'''
import json, sys, threading
import rclpy
from rclpy.executors import SingleThreadedExecutor
from std_srvs.srv import Trigger
from unilab_view.view_node import ViewNode
host, ns = sys.argv[1], sys.argv[2]
sys.stdin.readline()  # the network is set up
rclpy.init()
calls = {'arm': 0, 'disarm': 0}
robot = rclpy.create_node('arm_target', namespace=ns)
def served(action):
    def cb(request, response):
        calls[action] += 1
        response.success, response.message = True, action
        return response
    return cb
for action in calls:
    robot.create_service(Trigger, f'safety/{action}', served(action))
view = ViewNode([ns], port=0, host=host, allow_arm=True)
ex = SingleThreadedExecutor()
ex.add_node(view)
ex.add_node(robot)
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
print('ready', json.dumps({'port': view.server.get_port(), 'token': view.access.token}),
      flush=True)
last = None
while not stop.is_set():
    ex.spin_once(timeout_sec=0.05)
    now = dict(calls, refused=view.access.refused)
    if now != last:
        print('counts', json.dumps(now), flush=True)
        last = now
view.close()
print('result', json.dumps(dict(calls, refused=view.access.refused)), flush=True)
'''

CLIENT = r'''
import contextlib, json, sys
from importlib.metadata import version
import msgspec
from viser._messages import GuiUpdateMessage, ViewerCameraMessage
from websockets.sync.client import connect
import zstandard
sys.stdin.readline()  # the network is set up
url, token = sys.stdin.readline().split()

def panel(ws, labels):
    """Read what the server sends until the GUI elements named ``labels`` came; their ids."""
    found = {}
    while not labels <= found.keys():
        raw = ws.recv(timeout=60)
        size, packed = (int.from_bytes(raw[i:i + 8], 'little') for i in (0, 8))
        inner = zstandard.ZstdDecompressor().decompress(raw[16:16 + packed],
                                                        max_output_size=size)
        for m in msgspec.msgpack.decode(inner)['messages']:
            label = (m.get('props') or {}).get('label')
            if m['type'].startswith('Gui') and label in labels:
                found[label] = m['uuid']
    return found

def send(ws, message):
    ws.send(msgspec.msgpack.encode(message.as_serializable_dict()))

pages = contextlib.ExitStack()
tries = ((None, ['Arm']), ('x' * len(token), ['Arm']), (token, ['Arm', 'Disarm']))
with pages:
    for given, clicks in tries:
        ws = pages.enter_context(connect(url, subprotocols=[f'viser-v{version("viser")}'],
                                         max_size=None, open_timeout=60))
        # A page counts as connected (its panel built, its clicks taken) from its first
        # camera report on; a browser sends one as it opens.
        send(ws, ViewerCameraMessage((1.0, 0.0, 0.0, 0.0), (1.0, 1.0, 1.0), 1.0, 0.01, 100.0,
                                     480, 640, (0.0, 0.0, 0.0), (0.0, 0.0, 1.0)))
        ids = panel(ws, {'Arm', 'Disarm', 'Arm token'})
        if given is not None:
            send(ws, GuiUpdateMessage(ids['Arm token'], {'value': given}))
        for label in clicks:
            send(ws, GuiUpdateMessage(ids[label], {'value': True}))
    print('sent', flush=True)
    sys.stdin.readline()  # the view counted: pages leave (a click of a page gone is dropped)
print('result', json.dumps({'pages': len(tries)}), flush=True)
'''


def _lines(proc, timeout: float = WAIT_S):
    """Yield a child's output lines; kill it after ``timeout`` (its output then ends)."""
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            yield line
    finally:
        watchdog.cancel()
    raise AssertionError('output ended (rc %s):\n%s' % (proc.poll(), ''.join(seen)[-3000:]))


def _say(proc, line: str) -> None:
    proc.stdin.write(line + '\n')
    proc.stdin.flush()


def _listeners(port: int) -> set[str]:
    """Return the local addresses (hex, as /proc/net/tcp* writes them) listening on ``port``."""
    found = set()
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            rows = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            address, hex_port = local.split(':')
            if state == '0A' and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


def test_the_page_listens_on_loopback_by_default():
    from unilab_view.view_node import ViewNode
    rclpy.init()
    node = ViewNode(['/listen'], port=0, allow_arm=True)
    try:
        # 127.0.0.1, as the kernel writes it (little-endian hex), and nothing else.
        assert _listeners(node.server.get_port()) == {'0100007F'}
        assert not node.access.needs_token and node.token_fields == {}
    finally:
        node.close()
        node.destroy_node()
        rclpy.try_shutdown()


def test_from_another_machine_only_the_token_arms_and_refusals_are_counted():
    why = two_hosts.unavailable()
    if why:
        pytest.skip(f'a page on another host: {why}')
    tmp = tempfile.mkdtemp(prefix='unilab_view_arm_')
    addr = two_hosts.addresses(('view', 'page'))
    view = two_hosts.start([sys.executable, '-c', VIEW, addr['view'], NS],
                           two_hosts.host_env(tmp, 'view', addr['page']))
    page = two_hosts.start([sys.executable, '-c', CLIENT],
                           two_hosts.host_env(tmp, 'page', addr['view']))
    veth = ''
    try:
        veth = two_hosts.link({'view': view, 'page': page}, addr)
        for proc in (view, page):
            _say(proc, 'go')
        from_view = _lines(view)
        ready = json.loads(next(line for line in from_view if line.startswith('ready '))[6:])
        assert ready['token']  # off loopback: a token
        _say(page, f'ws://{addr["view"]}:{ready["port"]}/ {ready["token"]}')
        assert any(line.startswith('sent') for line in _lines(page))
        # Four clicks, each refused or carried out (a service called): wait for them all.
        counts = next(json.loads(line[7:]) for line in from_view if line.startswith('counts ')
                      and sum(json.loads(line[7:]).values()) >= 4)
        from_view.close()
        # No token and a wrong one: refused, counted, no service called; the token: both.
        want = {'arm': 1, 'disarm': 1, 'refused': 2}
        assert counts == want
        _say(page, 'done')
        assert two_hosts.result(page) == {'pages': 3}
        _say(view, 'stop')
        assert two_hosts.result(view) == want
    finally:
        for proc in (view, page):
            two_hosts.stop(proc)
        if veth:
            two_hosts.unlink(veth)
        shutil.rmtree(tmp, ignore_errors=True)
