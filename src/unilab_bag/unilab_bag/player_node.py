# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Publish a bag into the graph with ``/clock``, so the layers run on recorded data.

Messages go out as the exact recorded bytes (rclpy publishes ``bytes`` as a
serialized message). When the bag holds a clock (``/unilab/sim/clock``, the
simulated time recorded from a training graph, or a robot's ``/clock``) it is
replayed like any topic; otherwise the player publishes the bag time on
``/clock`` (``--remap /clock:=...`` renames it) before each message, as
``ros2 bag play --clock`` does.
"""

from __future__ import annotations

import time

from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from rosgraph_msgs.msg import Clock
from unilab_bag.player import schedule
from unilab_bag.recorder_node import message_class
from unilab_bag.storage import BagReader
from unilab_core import topics as graph_topics
from unilab_core.ros.runtime import _install_sigterm


class PlayerNode(Node):
    """Publishers for every (remapped) topic of a bag."""

    def __init__(self, reader: BagReader, remap: dict[str, str], **kwargs):
        super().__init__('unilab_player', **kwargs)
        self.remap = remap
        self.pubs = {}
        for topic, (msgtype, _) in reader.topics.items():
            name = remap.get(topic, topic)
            # Latched like the trainer's weights (a transient-local writer also
            # matches volatile readers), plain reliable for everything else.
            durable = name == graph_topics.WEIGHTS
            qos = QoSProfile(depth=1 if durable else 100,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL if durable
                             else DurabilityPolicy.VOLATILE)
            self.pubs[name] = self.create_publisher(message_class(msgtype, topic), name, qos)
        # A recorded clock (a robot's /clock or the training graph's) is replayed as it is.
        self.own_clock = not {graph_topics.CLOCK, graph_topics.SIM_CLOCK} & set(reader.topics)
        if self.own_clock:
            self.clock_pub = self.create_publisher(
                Clock, remap.get(graph_topics.CLOCK, graph_topics.CLOCK), QoSProfile(depth=10))
        self.counters = {'published': 0, 'passes': 0}

    def publish(self, due) -> None:
        """Publish one scheduled message (and the bag time on /clock)."""
        if self.own_clock:
            c = Clock()
            c.clock.sec, c.clock.nanosec = divmod(due.stamp_ns, 1_000_000_000)
            self.clock_pub.publish(c)
        self.pubs[due.topic].publish(due.raw)
        self.counters['published'] += 1


def replay(bag: str, rate: float = 1.0, loop: bool = False, remap=None, topics=None,
           wait_s: float = 0.0, log=print) -> dict[str, int]:
    """Play ``bag`` (once, or until Ctrl-C with ``loop``); return counters."""
    import rclpy
    _install_sigterm()
    reader = BagReader(bag)
    reader.refuse_if_damaged()  # before any node starts: one line naming what was lost
    rclpy.init()
    node = PlayerNode(reader, remap or {})
    log(f'unilab: replaying {bag} ({reader.storage}, {sum(n for _, n in reader.topics.values())}'
        f' messages, {reader.duration_ns / 1e9:.1f} s) at rate {rate}')
    try:
        # Give subscribers time to discover the new publishers before the first
        # message (volatile topics drop what nobody was matched to receive): up to
        # ``wait_s``, less once every topic of the bag has a subscriber.
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and not all(
                p.get_subscription_count() for p in node.pubs.values()):
            rclpy.spin_once(node, timeout_sec=0.05)
        while True:
            start = time.monotonic()
            for due in schedule(reader.messages(topics), rate, node.remap):
                delay = start + due.offset_s - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                node.publish(due)
            node.counters['passes'] += 1
            if not loop or not rclpy.ok():
                break
    except KeyboardInterrupt:
        pass
    finally:
        counters = dict(node.counters)
        # Reliable delivery needs the writer alive until readers acknowledged: exiting
        # right after the last publish would lose the tail of the bag.
        for pub in node.pubs.values():
            pub.wait_for_all_acked(Duration(seconds=5.0))
        node.destroy_node()
        rclpy.try_shutdown()
        reader.close()
    return counters
