# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The graph's TensorBatch topics on Foxglove, decoded as arrays, read only while watched.

Every ``unilab_interfaces/msg/TensorBatch`` topic of the graph (observation, action, the
gate's command, task state, rollouts, weights) is advertised on the Foxglove server as a
JSON channel of the same name, schema ``unilab/TensorBatch``. The view subscribes the ROS
topic only while a Foxglove client subscribes the channel (``Watchers``): a TensorBatch
publisher builds its standard message only while such a reader exists (its UniLab readers
take the transport's arrays), so a channel nobody watches costs the graph nothing, and one
watched costs it a serialisation per message. ``record_all`` (``unilab view --mcap FILE
--mcap-tensors``) reads every one, for the recording. The subscription keeps the newest
message (depth 1) and the view sends it once per frame.

A message is ``{kind, seq, version, timestamp, tensors: {name: {shape, rows, data}}}``:
``data`` the tensor's first ``rows`` rows as nested lists (all of them up to
``MAX_VALUES`` values per tensor; the message says how many were sent of ``shape[0]``),
non-finite values as ``null``. Foxglove's Plot panel takes paths such as
``/unilab/action.tensors.action.data[0][2]``.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from unilab_core.ros.tensor_msg import read_batch, TensorMessageError
from unilab_interfaces.msg import TensorBatch

#: the ROS type of the topics served (as ``get_topic_names_and_types`` names it)
TENSOR_TYPE = 'unilab_interfaces/msg/TensorBatch'
#: the Foxglove schema name of their channels
SCHEMA = 'unilab/TensorBatch'
#: values sent per tensor and message: the first rows of a batch up to this many
MAX_VALUES = 1024
#: seconds between two looks at the graph for new TensorBatch topics
DISCOVER_S = 2.0


class Watchers:
    """Foxglove's server listener: how many client subscriptions each channel has."""

    def __init__(self):
        self.lock = threading.Lock()
        self.count: dict[str, int] = {}

    def on_subscribe(self, client, channel) -> None:
        """Count a client's subscription (called on the server's thread)."""
        with self.lock:
            self.count[channel.topic] = self.count.get(channel.topic, 0) + 1

    def on_unsubscribe(self, client, channel) -> None:
        """Uncount it (also called when a client disconnects)."""
        with self.lock:
            left = self.count.get(channel.topic, 0) - 1
            if left > 0:
                self.count[channel.topic] = left
            else:
                self.count.pop(channel.topic, None)

    def watched(self) -> set[str]:
        """Return the topics with at least one client subscription."""
        with self.lock:
            return set(self.count)


def tensor_json(batch, max_values: int = MAX_VALUES) -> dict:
    """Return a decoded TensorBatch as the channel's JSON object (first rows, nulls)."""
    tensors = {}
    for name, array in batch.tensors.items():
        shape = list(array.shape)
        if array.ndim == 0:
            rows, data = 1, _finite_list(array.reshape(1))
        else:
            per_row = int(np.prod(shape[1:], dtype=np.int64)) if array.ndim > 1 else 1
            rows = min(shape[0], max(1, max_values // max(per_row, 1)))
            data = _finite_list(array[:rows])
        tensors[name] = {'shape': shape, 'rows': rows, 'data': data}
    return {'kind': batch.kind, 'seq': int(batch.seq), 'version': int(batch.version),
            'timestamp': {'sec': batch.stamp_ns // 1_000_000_000,
                          'nsec': batch.stamp_ns % 1_000_000_000},
            'tensors': tensors}


def _finite_list(array: np.ndarray) -> list:
    """Return ``array`` as nested lists, non-finite values as None (JSON has no NaN)."""
    finite = np.isfinite(array)
    if finite.all():
        return array.tolist()
    return np.where(finite, array, None).tolist()


class TensorChannels:
    """The graph's TensorBatch topics as Foxglove channels of ``bridge``, read while watched."""

    def __init__(self, node: Node, bridge, watchers: Watchers, qos: QoSProfile,
                 on_message: Callable[[], None] = lambda: None,
                 discover_s: float = DISCOVER_S, record_all: bool = False):
        self.node, self.bridge, self.watchers, self.qos = node, bridge, watchers, qos
        self.record_all = record_all
        self.on_message = on_message  # the view counts the messages a frame takes
        self.discover_s = discover_s
        self.topics: set[str] = set()  # advertised
        self.subscriptions = {}  # topic -> rclpy subscription, while watched
        self.latest = {}  # topic -> the newest message not yet sent
        self.lock = threading.Lock()
        self.next_look = 0.0
        self.counters = {'sent': 0, 'undecodable': 0}

    def update(self) -> None:
        """Advertise new topics, follow the clients' subscriptions, send what arrived."""
        now = time.monotonic()
        if now >= self.next_look:
            self.next_look = now + self.discover_s
            for topic, types in self.node.get_topic_names_and_types():
                if TENSOR_TYPE in types and topic not in self.topics:
                    self.topics.add(topic)
                    self.bridge.advertise(topic, SCHEMA)
        watched = set(self.topics) if self.record_all else self.watchers.watched() & self.topics
        for topic in watched - set(self.subscriptions):
            self.subscriptions[topic] = self.node.create_subscription(
                TensorBatch, topic, lambda msg, t=topic: self._store(t, msg), self.qos)
        for topic in set(self.subscriptions) - watched:
            self.node.destroy_subscription(self.subscriptions.pop(topic))
            with self.lock:
                self.latest.pop(topic, None)
        with self.lock:
            latest, self.latest = self.latest, {}
        for topic, msg in latest.items():
            try:
                batch = read_batch(msg)
            except (TensorMessageError, ValueError) as exc:  # shapes, or a ragged buffer
                self.counters['undecodable'] += 1
                self.node.get_logger().warning(f'{topic}: not sent to Foxglove: {exc}',
                                               throttle_duration_sec=10.0)
                continue
            self.bridge.log(topic, SCHEMA, tensor_json(batch), batch.stamp_ns or
                            self.node.get_clock().now().nanoseconds)
            self.counters['sent'] += 1

    def _store(self, topic: str, msg) -> None:
        with self.lock:
            self.latest[topic] = msg
        self.on_message()
