# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
ROS edge of ``unilab check-robot``: look at a live graph and fill a GraphSnapshot.

Waits a moment for DDS discovery, reads topic types and the publisher / subscriber nodes of
every contract topic, subscribes (best effort, which matches reliable publishers too) to each
published contract topic for the rest of the window, and records message times and the
joint names seen; ``robot_description`` is read as robot_state_publisher latches it
(reliable, transient local) and kept whole. The verdict is ``robot_contract.check_contract``.
"""

from __future__ import annotations

import importlib
import time

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from unilab_bridge.robot_contract import (check_contract, contract_ok, ContractItem, format_report,
                                          GraphSnapshot, profile_contract)

# At most this many distinct joint names are kept per topic.
_MAX_NAMES = 1024


def get_message(type_name: str):
    """Return the message class of ``pkg/msg/Type`` (rosidl_runtime_py is not installed here)."""
    pkg, kind, name = type_name.split('/')
    if kind != 'msg':
        raise ValueError(f'not a message type: {type_name}')
    return getattr(importlib.import_module(f'{pkg}.msg'), name)


def _node_names(infos) -> list[str]:
    return [f'{i.node_namespace.rstrip("/")}/{i.node_name}' for i in infos]


def _joint_names(msg) -> list[str]:
    return list(msg.name) if hasattr(msg, 'name') and hasattr(msg, 'position') else []


def probe_graph(node: Node, items: list[ContractItem], window_s: float,
                discovery_s: float = 1.0, spin=None) -> GraphSnapshot:
    """
    Observe the graph: discovery (up to ``discovery_s``), then ``window_s`` of messages.

    Discovery ends as soon as every item's topic has its publisher (or subscriber):
    DDS may take a few seconds to announce participants that started earlier (Fast
    DDS re-announces every 3 s), so a fixed short wait would miss a running robot.
    ``spin(timeout)`` spins the probe node.
    """
    import rclpy
    spin = spin or (lambda t: rclpy.spin_once(node, timeout_sec=t))
    me = f'{node.get_namespace().rstrip("/")}/{node.get_name()}'

    def found(item):
        infos = node.get_publishers_info_by_topic(item.topic) if item.role == 'publish' \
            else node.get_subscriptions_info_by_topic(item.topic)
        return any(n != me for n in _node_names(infos))
    end = time.monotonic() + discovery_s
    while time.monotonic() < end and not all(found(i) for i in items if i.required):
        spin(0.05)
    snap = GraphSnapshot(window_s=window_s)
    snap.types = {t: list(ts) for t, ts in node.get_topic_names_and_types()}
    stamps: dict[str, list[float]] = {}
    subs = []
    for item in items:
        snap.publishers[item.topic] = [
            n for n in _node_names(node.get_publishers_info_by_topic(item.topic)) if n != me]
        readers = _node_names(node.get_subscriptions_info_by_topic(item.topic))
        snap.subscribers[item.topic] = sorted({n for n in readers if n != me})
        if item.role != 'publish' or not snap.publishers[item.topic]:
            continue
        try:
            msg_type = get_message(item.msg_type if item.msg_type in snap.types.get(
                item.topic, []) else snap.types[item.topic][0])
        except (AttributeError, ImportError, KeyError, IndexError, ValueError):
            continue  # unknown type: the check reports the type mismatch
        times = stamps.setdefault(item.topic, [])
        seen: dict[str, None] = {}  # insertion-ordered set
        if item.names:
            snap.names[item.topic] = []

        def on_msg(msg, times=times, seen=seen, topic=item.topic, names=bool(item.names)):
            times.append(time.monotonic())
            if names and len(seen) < _MAX_NAMES:
                new = [n for n in _joint_names(msg) if n not in seen]
                if new:
                    seen.update(dict.fromkeys(new))
                    snap.names[topic] = list(seen)
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
        if item.key == 'robot_description':
            def on_description(msg, on_msg=on_msg):
                on_msg(msg)
                snap.robot_description = str(msg.data)
            subs.append(node.create_subscription(msg_type, item.topic, on_description, QoSProfile(
                depth=1, reliability=ReliabilityPolicy.RELIABLE,
                durability=DurabilityPolicy.TRANSIENT_LOCAL)))
            continue
        subs.append(node.create_subscription(msg_type, item.topic, on_msg, qos))
    end = time.monotonic() + window_s
    while time.monotonic() < end:
        spin(0.05)
    for sub in subs:
        node.destroy_subscription(sub)
    # Node names travel on their own discovery topic and may come after the endpoints.
    snap.nodes = [f'{ns.rstrip("/")}/{n}' for n, ns in node.get_node_names_and_namespaces()]
    for topic, times in stamps.items():
        if len(times) >= 2 and times[-1] > times[0]:
            snap.rates_hz[topic] = (len(times) - 1) / (times[-1] - times[0])
    return snap


def run_check(profile, namespace: str, timeout_s: float) -> tuple[bool, str]:
    """Start rclpy, probe the live graph for ``profile``'s robot, return (ok, report)."""
    import rclpy
    items = profile_contract(profile, namespace)
    rclpy.init()
    try:
        node = Node('unilab_check_robot')
        # Up to 60 % of the time for discovery (less when everything is found), the
        # rest (at least 1 s) to measure rates.
        snap = probe_graph(node, items, max(0.4 * timeout_s, 1.0), 0.6 * timeout_s)
        node.destroy_node()
    finally:
        rclpy.try_shutdown()
    results = check_contract(items, snap, profile)
    return contract_ok(results), format_report(results, snap)
