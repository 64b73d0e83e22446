# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab factory review``: the review page and its JSON API on a local HTTP server.

Python's ``http.server`` (no new dependency), bound to 127.0.0.1 only. API:

- ``GET /api/queue``: pending samples, lowest confidence first: ``id``, ``confidence``,
  ``width``, ``height``, ``boxes``, ``labels``, ``scores``, ``classes``;
- ``GET /api/image/<id>.png``: the frame;
- ``POST /api/decision`` with JSON ``{"id", "decision": "accepted" | "corrected" |
  "rejected", "boxes": [[x0, y0, x1, y1], ...], "labels": [...]}`` (boxes and labels for
  a correction): written atomically by ``SampleStore.decide``; answers the manifest;
- ``GET /api/stats``: samples per decision.

A request that cannot be used gets 400 (404 for an unknown sample) with ``{"error"}``.
"""

from __future__ import annotations

from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import json
import struct
import threading
import zlib

import numpy as np

from unilab_datafactory.review_page import PAGE
from unilab_datafactory.store import SampleStore, StoreError

MAX_BODY = 1 << 20


def png_bytes(image: np.ndarray) -> bytes:
    """Encode an [H, W, 3] uint8 image as PNG (stdlib zlib; filter 0 on every row)."""
    h, w = image.shape[:2]
    rows = np.concatenate([np.zeros((h, 1), np.uint8),
                           np.ascontiguousarray(image, np.uint8).reshape(h, w * 3)], axis=1)

    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + \
            struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))
            + chunk(b'IDAT', zlib.compress(rows.tobytes(), 6)) + chunk(b'IEND', b''))


def queue(store: SampleStore) -> list[dict]:
    """Return the pending samples with their proposals, lowest confidence first."""
    out = []
    for m in store.manifests(('pending',)):
        t, _ = store.read(m['id'])
        h, w = t['image'].shape[:2]
        out.append({'id': m['id'], 'confidence': m.get('confidence'), 'width': w,
                    'height': h, 'boxes': t['boxes'].tolist(), 'labels': t['labels'].tolist(),
                    'scores': t['scores'].tolist(), 'classes': m.get('classes', []),
                    'source': m.get('source', ''), 'stamp_ns': m.get('stamp_ns')})
    return sorted(out, key=lambda q: (q['confidence'] is None, q['confidence'] or 0.0))


def _handler(store: SampleStore):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet: one line per request is noise here
            pass

        def _send(self, status, body: bytes, ctype: str):
            self.send_response(status)
            self.send_header('Content-Type', ctype)
            self.send_header('Content-Length', str(len(body)))
            self.send_header('Cache-Control', 'no-store')
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status, obj):
            self._send(status, json.dumps(obj).encode(), 'application/json')

        def do_GET(self):  # noqa: N802 - the http.server hook's name
            try:
                if self.path in ('/', '/index.html'):
                    return self._send(HTTPStatus.OK, PAGE.encode(), 'text/html; charset=utf-8')
                if self.path == '/api/queue':
                    return self._json(HTTPStatus.OK, queue(store))
                if self.path == '/api/stats':
                    counts = {}
                    for m in store.manifests():
                        counts[m['decision']] = counts.get(m['decision'], 0) + 1
                    return self._json(HTTPStatus.OK, counts)
                if self.path.startswith('/api/image/') and self.path.endswith('.png'):
                    sample_id = self.path[len('/api/image/'):-len('.png')]
                    t, _ = store.read(sample_id)
                    return self._send(HTTPStatus.OK, png_bytes(t['image']), 'image/png')
                self._json(HTTPStatus.NOT_FOUND, {'error': f'no such path {self.path}'})
            except StoreError as exc:
                self._json(HTTPStatus.NOT_FOUND, {'error': str(exc)})

        def do_POST(self):  # noqa: N802 - the http.server hook's name
            if self.path != '/api/decision':
                return self._json(HTTPStatus.NOT_FOUND, {'error': f'no such path {self.path}'})
            try:
                n = int(self.headers.get('Content-Length', '0'))
                if not 0 < n <= MAX_BODY:
                    raise ValueError(f'body of {n} bytes (1 .. {MAX_BODY})')
                body = json.loads(self.rfile.read(n))
                if not isinstance(body, dict) or not isinstance(body.get('id'), str):
                    raise ValueError('expected a JSON object with a string `id`')
                boxes, labels = body.get('boxes'), body.get('labels')
                if body.get('decision') == 'corrected':
                    boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
                    labels = np.asarray(labels, np.int64).reshape(-1)
                    if len(boxes) != len(labels):
                        raise ValueError(f'{len(boxes)} boxes but {len(labels)} labels')
                with lock:  # read-modify-write of one sample: one decision at a time
                    manifest = store.decide(body['id'], str(body.get('decision')), boxes,
                                            labels, str(body.get('reviewer', '')))
                self._json(HTTPStatus.OK, manifest)
            except StoreError as exc:
                status = HTTPStatus.NOT_FOUND if 'no sample' in str(exc) else \
                    HTTPStatus.BAD_REQUEST
                self._json(status, {'error': str(exc)})
            except (ValueError, TypeError) as exc:
                self._json(HTTPStatus.BAD_REQUEST, {'error': str(exc)})

    lock = threading.Lock()
    return Handler


def make_server(root, port: int = 8765, host: str = '127.0.0.1') -> ThreadingHTTPServer:
    """Return a server for the store ``root`` (port 0: any free port)."""
    return ThreadingHTTPServer((host, port), _handler(SampleStore(root)))
