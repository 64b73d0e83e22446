# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Tensor topics: the rclpy edge of the zero-copy transport (see docs/transport.md).

A node publishes named arrays with ``TensorPublisher`` and receives them with
``TensorSubscription``; payloads go in-process (the same objects), through
shared-memory rings to other processes (a small ``TensorDescriptor`` on
``<topic>/_tensor_desc`` for discovery), and as a standard message on
``<topic>`` only while a plain ROS reader listens. ``batch_capacity`` sizes
a ring slot; ``close_endpoints`` (from a node's ``destroy_node``) closes
every endpoint the node created. Nodes import these names from here.

Modules: ``publisher`` (``TensorPublisher``, ``PublisherLoan``,
``batch_capacity``), ``subscription`` (``TensorSubscription``),
``descriptor_msg`` (the descriptor topic and its message codec),
``endpoints`` (the endpoints of a node and its ROS domain). The ROS-free
parts (rings, descriptors, the in-process registry, the futex waiter) are
in ``unilab_core.transport``.
"""

from unilab_core.ros.tensor_topic.descriptor_msg import descriptor_topic
from unilab_core.ros.tensor_topic.endpoints import close_endpoints, node_endpoints
from unilab_core.ros.tensor_topic.publisher import batch_capacity, TensorPublisher
from unilab_core.ros.tensor_topic.subscription import TensorSubscription

__all__ = ['TensorPublisher', 'TensorSubscription', 'batch_capacity', 'close_endpoints',
           'node_endpoints', 'descriptor_topic']
