# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
ROS edge of ``unilab check-robot``: look at a live graph and fill a GraphSnapshot.

Waits a moment for DDS discovery, reads topic types and the publisher / subscriber nodes of
every contract topic, subscribes (best effort, which matches reliable publishers too) to each
published contract topic for the rest of the window, and records message times and frame
ids. The verdict is ``robot_contract.check_contract``.
"""

from __future__ import annotations

import importlib
import time

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from unilab_bridge.robot_contract import ContractItem, GraphSnapshot
from unilab_core.ros.tensor_topic import descriptor_topic

# At most this many frame ids are kept per topic (a JointState has one name per joint).
_MAX_FRAMES = 64


def get_message(type_name: str):
    """Return the message class of ``pkg/msg/Type`` (rosidl_runtime_py is not installed here)."""
    pkg, kind, name = type_name.split('/')
    if kind != 'msg':
        raise ValueError(f'not a message type: {type_name}')
    return getattr(importlib.import_module(f'{pkg}.msg'), name)


def _node_names(infos) -> list[str]:
    return [f'{i.node_namespace.rstrip("/")}/{i.node_name}' for i in infos]


def _frames(msg) -> list[str]:
    if hasattr(msg, 'name') and hasattr(msg, 'position'):  # JointState: names carry env<i>/
        return list(msg.name)
    header = getattr(msg, 'header', None)
    return [header.frame_id] if header is not None else []


def probe_graph(node: Node, items: list[ContractItem], window_s: float,
                discovery_s: float = 1.0, spin=None) -> GraphSnapshot:
    """Observe the graph for ``discovery_s + window_s`` seconds; ``spin(timeout)`` spins."""
    import rclpy
    spin = spin or (lambda t: rclpy.spin_once(node, timeout_sec=t))
    me = f'{node.get_namespace().rstrip("/")}/{node.get_name()}'
    end = time.monotonic() + discovery_s
    while time.monotonic() < end:
        spin(0.05)
    snap = GraphSnapshot(window_s=window_s)
    snap.types = {t: list(ts) for t, ts in node.get_topic_names_and_types()}
    snap.nodes = [f'{ns.rstrip("/")}/{n}' for n, ns in node.get_node_names_and_namespaces()]
    stamps: dict[str, list[float]] = {}
    subs = []
    for item in items:
        snap.publishers[item.topic] = [
            n for n in _node_names(node.get_publishers_info_by_topic(item.topic)) if n != me]
        readers = _node_names(node.get_subscriptions_info_by_topic(item.topic))
        readers += _node_names(node.get_subscriptions_info_by_topic(
            descriptor_topic(item.topic)))
        snap.subscribers[item.topic] = sorted({n for n in readers if n != me})
        if item.role != 'publish' or not snap.publishers[item.topic]:
            continue
        try:
            msg_type = get_message(item.msg_type if item.msg_type in snap.types.get(
                item.topic, []) else snap.types[item.topic][0])
        except (AttributeError, ImportError, KeyError, IndexError, ValueError):
            continue  # unknown type: the check reports the type mismatch
        times = stamps.setdefault(item.topic, [])
        frames = snap.frames.setdefault(item.topic, [])

        def on_msg(msg, times=times, frames=frames):
            times.append(time.monotonic())
            if len(frames) < _MAX_FRAMES:
                frames.extend(_frames(msg)[:_MAX_FRAMES - len(frames)])
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)
        subs.append(node.create_subscription(msg_type, item.topic, on_msg, qos))
    end = time.monotonic() + window_s
    while time.monotonic() < end:
        spin(0.05)
    for sub in subs:
        node.destroy_subscription(sub)
    for topic, times in stamps.items():
        if len(times) >= 2 and times[-1] > times[0]:
            snap.rates_hz[topic] = (len(times) - 1) / (times[-1] - times[0])
    return snap


def run_check(control_hz: float, timeout_s: float, imu=False, points=False,
              camera=False) -> tuple[bool, str]:
    """Start rclpy, probe the live graph, return (contract met, report text)."""
    import rclpy
    from unilab_bridge.robot_contract import (check_contract, contract_ok, format_report,
                                              robot_contract)
    items = robot_contract(control_hz, imu=imu, points=points, camera=camera)
    rclpy.init()
    try:
        node = Node('unilab_check_robot')
        discovery = min(1.0, timeout_s / 3)
        snap = probe_graph(node, items, max(timeout_s - discovery, 0.1), discovery)
        node.destroy_node()
    finally:
        rclpy.try_shutdown()
    results = check_contract(items, snap)
    return contract_ok(results), format_report(results, snap)
