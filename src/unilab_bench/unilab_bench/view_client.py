# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``bench deploy --view``: the clients a person watching would connect to ``unilab view``.

A view with nobody looking sends nothing: viser serialises scene updates per connected
client, the Foxglove server per subscribed channel. So the bench connects what a browser
and Foxglove would: a WebSocket client speaking viser's subprotocol (``viser-v<version>``;
it gets every scene and panel update the page would) and, with ``--foxglove-port``, a
client of the Foxglove server subscribed to every channel it advertises but the graph's
TensorBatch topics (schema ``unilab/TensorBatch``: watching one makes its publisher build
a standard message per step, a cost of its own; ``--foxglove-tensors`` takes them too).
Both only drain what arrives; on SIGINT the counts go to ``--stats`` as JSON (the bench
reports them, so a figure "with the view" is one where the view was drawing). This process is the
stand-in for a browser on the same machine; a real one usually runs on the operator's.
"""

from __future__ import annotations

import argparse
from importlib.metadata import version
import json
import signal
import threading
import time

from unilab_view.tensor_channels import SCHEMA as TENSOR_SCHEMA
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

#: the Foxglove sdk server's subprotocol
FOXGLOVE_SUBPROTOCOL = 'foxglove.sdk.v1'
#: seconds between tries while the view starts (imports, discovery)
RETRY_S = 0.5


class Drain(threading.Thread):
    """Connect to ``url`` (retrying until the server is up) and count what arrives."""

    def __init__(self, url: str, subprotocol: str, subscribe_all: bool, stop: threading.Event,
                 skip_schemas: frozenset = frozenset()):
        super().__init__(daemon=True)
        self.url, self.subprotocol, self.subscribe_all, self.stop = (
            url, subprotocol, subscribe_all, stop)
        self.skip_schemas = skip_schemas
        self.messages = 0
        self.bytes = 0
        self.connected_s = None

    def run(self) -> None:
        t0 = time.monotonic()
        while not self.stop.is_set():
            try:
                with connect(self.url, subprotocols=[self.subprotocol],
                             max_size=None, open_timeout=5) as ws:
                    self.connected_s = time.monotonic() - t0
                    self._drain(ws)
            except (OSError, ConnectionClosed, TimeoutError):
                self.stop.wait(RETRY_S)

    def _drain(self, ws) -> None:
        subscribed = set()
        while not self.stop.is_set():
            try:
                msg = ws.recv(timeout=RETRY_S)
            except TimeoutError:
                continue
            self.messages += 1
            self.bytes += len(msg)
            if self.subscribe_all and isinstance(msg, str):
                data = json.loads(msg)
                if data.get('op') == 'advertise':
                    new = [c['id'] for c in data['channels'] if c['id'] not in subscribed
                           and c.get('schemaName') not in self.skip_schemas]
                    subscribed.update(new)
                    ws.send(json.dumps({'op': 'subscribe', 'subscriptions': [
                        {'id': c, 'channelId': c} for c in new]}))

    def stats(self) -> dict:
        return {'messages': self.messages, 'bytes': self.bytes,
                'connected_after_s': self.connected_s}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog='unilab_bench.view_client')
    parser.add_argument('--viser-port', type=int, required=True)
    parser.add_argument('--foxglove-port', type=int, default=None)
    parser.add_argument('--foxglove-tensors', action='store_true',
                        help='also subscribe the TensorBatch channels')
    parser.add_argument('--stats', required=True, help='JSON file written on SIGINT')
    opts = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    drains = {'viser': Drain(f'ws://127.0.0.1:{opts.viser_port}',
                             f'viser-v{version("viser")}', False, stop)}
    if opts.foxglove_port is not None:
        skip = frozenset() if opts.foxglove_tensors else frozenset({TENSOR_SCHEMA})
        drains['foxglove'] = Drain(f'ws://127.0.0.1:{opts.foxglove_port}',
                                   FOXGLOVE_SUBPROTOCOL, True, stop, skip)
    for d in drains.values():
        d.start()
    stop.wait()
    for d in drains.values():
        d.join(timeout=2 * RETRY_S + 5)
    with open(opts.stats, 'w') as f:
        json.dump({name: d.stats() for name, d in drains.items()}, f)


if __name__ == '__main__':
    main()
