# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The endpoints a node holds (publishers, subscriptions) and the ROS domain they live in."""

from __future__ import annotations

from rclpy.node import Node
from unilab_core.transport import shm


def node_domain(node: Node) -> int:
    """Return the ROS domain id of ``node``'s context (the environment's on older rclpy)."""
    try:
        return int(node.context.get_domain_id())
    except Exception:  # older rclpy: fall back to the environment
        return shm.ros_domain()


def register_endpoint(node: Node, endpoint) -> None:
    """Remember ``endpoint`` (anything with ``close()``) so ``close_endpoints`` closes it."""
    node.__dict__.setdefault('_unilab_transport_endpoints', []).append(endpoint)


def node_endpoints(node: Node) -> list:
    """Return the TensorPublishers / TensorSubscriptions created for ``node`` (still open)."""
    return list(node.__dict__.get('_unilab_transport_endpoints', []))


def close_endpoints(node: Node) -> None:
    """
    Close every TensorPublisher / TensorSubscription created for ``node``.

    Call it from the node's ``destroy_node``: segments are unlinked and
    in-process subscriptions removed before the node's handles go away.
    """
    for endpoint in node.__dict__.pop('_unilab_transport_endpoints', []):
        endpoint.close()
