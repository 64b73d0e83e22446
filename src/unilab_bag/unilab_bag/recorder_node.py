# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Record graph topics into a rosbag2 with raw (exact-bytes) subscriptions.

Topics are subscribed once they appear in the graph, with the type their
publisher advertises, so ``--topics`` may name any topic. ``serialize_message``
adds trailing padding that rosbags rejects, so messages are never
re-serialised: a ``raw=True`` subscription hands over the bytes as they
travelled. Receive time (the node clock) is the bag time stamp, as
``ros2 bag record`` does.
"""

from __future__ import annotations

import importlib
import pathlib
import time

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from unilab_bag.recorder_params import RecorderNodeParams
from unilab_bag.rotating import RotatingBagWriter
from unilab_bag.storage import BagError, BagWriter
from unilab_core import topics as graph_topics
from unilab_core.ros.params import declare_params
from unilab_core.ros.runtime import sched_idle, spin_node, spin_nodes

#: What ``unilab record`` records by default: the training graph's sensors,
#: observation, action, safe command, reward/done (task_state and observation carry
#: them), rollouts and clock (its joint states and clock under ``topics.SIM_REMAPS``).
DEFAULT_TOPICS = (graph_topics.SIM_JOINT_STATES, graph_topics.TASK_STATE,
                  graph_topics.OBSERVATION, graph_topics.ACTION, graph_topics.SAFE_COMMAND,
                  graph_topics.ROLLOUT, graph_topics.SIM_CLOCK)

#: Types of the graph's own topics: subscribed at once, before discovery, so
#: a recorder started before the graph misses nothing.
KNOWN_TYPES = {
    **{t: 'sensor_msgs/msg/JointState' for t in (graph_topics.JOINT_STATES,
                                                 graph_topics.SIM_JOINT_STATES)},
    **{t: 'rosgraph_msgs/msg/Clock' for t in (graph_topics.CLOCK, graph_topics.SIM_CLOCK)},
    graph_topics.DIAGNOSTICS: 'diagnostic_msgs/msg/DiagnosticArray',
    **{t: 'unilab_interfaces/msg/TensorBatch' for t in (
        graph_topics.TASK_STATE, graph_topics.OBSERVATION, graph_topics.ACTION,
        graph_topics.SAFE_COMMAND, graph_topics.ROLLOUT, graph_topics.WEIGHTS)},
}


def message_class(msgtype: str, topic: str = ''):
    """Import the rclpy message class of ``pkg/msg/Name``; raise naming the topic."""
    pkg, _, name = msgtype.split('/')
    try:
        return getattr(importlib.import_module(f'{pkg}.msg'), name)
    except (ImportError, AttributeError):
        where = f' of topic `{topic}`' if topic else ''
        raise LookupError(f'message type `{msgtype}`{where} is not installed '
                          f'(no python module {pkg}.msg.{name})') from None


class RecorderNode(Node):
    """Subscribe raw to the wanted topics and append every message to a bag."""

    def __init__(self, out: str | pathlib.Path | None = None, topics=DEFAULT_TOPICS,
                 storage: str = 'mcap', flush_period_s: float = 1.0, **kwargs):
        super().__init__('recorder', **kwargs)
        rotate_mb = keep_mb = 0.0
        if out is None:  # started by a graph: the typed parameters say what to record
            p = declare_params(self, RecorderNodeParams)
            out, topics, storage, flush_period_s = p.out, p.topics, p.storage, p.flush_period_s
            rotate_mb, keep_mb = p.rotate_mb, p.keep_mb
            if p.sched_idle:  # beside a robot's control loop (unilab adapt)
                self.get_logger().info(f'recording under {sched_idle()}')
        self.wanted = list(dict.fromkeys(topics))
        self.writer = (RotatingBagWriter(out, storage, int(rotate_mb * 2**20),
                                         int(keep_mb * 2**20)) if rotate_mb
                       else BagWriter(out, storage))
        self.subscribed: dict[str, str] = {}
        self.counters = {'messages': 0, 'bytes': 0}
        self._closed = False
        for topic in self.wanted:
            if topic in KNOWN_TYPES:
                self._subscribe(topic, KNOWN_TYPES[topic])
        self._discover()
        self.create_timer(0.2, self._discover)
        self.create_timer(flush_period_s, self.writer.flush)

    def _discover(self) -> None:
        if len(self.subscribed) == len(self.wanted):
            return
        types = dict(self.get_topic_names_and_types())
        for topic in self.wanted:
            if topic in self.subscribed or topic not in types:
                continue
            self._subscribe(topic, types[topic][0])

    def _subscribe(self, topic: str, msgtype: str) -> None:
        try:
            cls = message_class(msgtype, topic)
            self.writer.add_topic(topic, msgtype)
        except (LookupError, ValueError) as exc:
            self.get_logger().error(f'not recording `{topic}`: {exc}')
            self.subscribed[topic] = ''
            return
        self.create_subscription(cls, topic, self._callback(topic), self._qos(topic),
                                 raw=True)
        self.subscribed[topic] = msgtype
        self.get_logger().info(f'recording {topic} ({msgtype})')

    def _qos(self, topic: str) -> QoSProfile:
        # Match the publisher's reliability (a reliable reader does not match a
        # best-effort writer); volatile durability matches every writer, and
        # TRANSIENT_LOCAL where a writer offers it, so latched weights are kept.
        infos = self.get_publishers_info_by_topic(topic)
        if topic == graph_topics.WEIGHTS:  # latched by the trainer even if not yet seen
            return QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        best_effort = any(i.qos_profile.reliability == ReliabilityPolicy.BEST_EFFORT
                          for i in infos)
        latched = bool(infos) and all(
            i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
        return QoSProfile(
            depth=1000,
            reliability=ReliabilityPolicy.BEST_EFFORT if best_effort
            else ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched
            else DurabilityPolicy.VOLATILE)

    def _callback(self, topic: str):
        def on_message(raw: bytes) -> None:
            if self._closed:
                return
            self.writer.write(topic, self.get_clock().now().nanoseconds, raw)
            self.counters['messages'] += 1
            self.counters['bytes'] += len(raw)
        return on_message

    def drain(self, executor, quiet_s: float = 0.3, limit_s: float = 5.0) -> None:
        """Write what the subscriptions still hold: spin until ``quiet_s`` brings nothing."""
        end = time.monotonic() + limit_s
        seen, quiet_since = self.counters['messages'], time.monotonic()
        while time.monotonic() < end and time.monotonic() - quiet_since < quiet_s:
            executor.spin_once(timeout_sec=0.05)
            if self.counters['messages'] != seen:
                seen, quiet_since = self.counters['messages'], time.monotonic()

    def close(self) -> None:
        """Close the bag cleanly (index, summary, metadata.yaml)."""
        if not self._closed:
            self._closed = True
            self.writer.close()


def record(out: str, topics=None, storage: str = 'mcap', duration_s: float = 0.0,
           flush_period_s: float = 1.0, log=print) -> dict[str, int]:
    """
    Record until Ctrl-C / SIGTERM (or ``duration_s`` > 0); return counts per topic.

    A stop first writes every message the subscriptions already received (the
    context stays up until then), then closes the bag.
    """
    import signal

    import rclpy
    from rclpy.signals import SignalHandlerOptions
    if pathlib.Path(out).exists():  # before any node: rosbags would refuse it after start-up
        raise BagError(f'{out}: exists already; record into a new directory')
    stop = []
    previous = {s: signal.signal(s, lambda *_: stop.append(True))
                for s in (signal.SIGINT, signal.SIGTERM)}
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = RecorderNode(out, topics or DEFAULT_TOPICS, storage, flush_period_s)
    log(f'unilab: recording {", ".join(node.wanted)} to {out} ({storage}); Ctrl-C stops')
    end = time.monotonic() + duration_s if duration_s > 0 else None
    try:
        spin_nodes([node], 'single_threaded',
                   until=lambda: bool(stop) or (end is not None and time.monotonic() >= end),
                   tick_s=0.1, on_stop=node.drain)
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        node.close()  # spin_nodes closes too; idempotent
        counts = dict(node.writer.counts)
        node.destroy_node()
        rclpy.try_shutdown()
    return counts


def main(args=None):
    """Run the recorder node of a graph (its typed parameters say what to record)."""
    spin_node(RecorderNode, args)
