# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
How much ``/dev/shm`` the training graph's shared-memory rings take.

Every ``TensorPublisher`` of the graph is listed here with the shapes its
node passes to ``batch_capacity`` and its slot count; a ring's segment is
``ring_layout.ring_bytes(capacity, slots)`` (a header page plus page-rounded slots
of a 4 KiB slot header and the payload). The figure is an upper bound of
host memory: a ring is created only when a reader outside the process
exists (one process per node, a recorder) or the topic is latched (the
weights, always), and payloads a node publishes from a CUDA device live in
device memory, with only a small descriptor ring here. ``test_doctor_rings``
checks the list against the publishers that the real nodes create.
"""

from __future__ import annotations

from typing import NamedTuple

from unilab_core import topics
from unilab_core.graph import Graph
from unilab_core.ros.joint_state_topic import joint_state_capacity
from unilab_core.ros.tensor_topic import batch_capacity
from unilab_core.transport.ring_layout import ring_bytes
from unilab_policy.history import policy_input_dim
from unilab_safety.command_output import command_capacity


class RingNeed(NamedTuple):
    """One publisher's ring: node, topic, slot capacity in bytes, slots, latched."""

    node: str
    topic: str
    capacity: int
    slots: int
    latched: bool = False

    @property
    def nbytes(self) -> int:
        """Return the segment size of this ring."""
        return ring_bytes(self.capacity, self.slots)


def graph_rings(graph: Graph, n_weights: int, step_fields: int) -> list[RingNeed]:
    """
    Return the rings of the graph's publishers (shapes as each node builds them).

    ``n_weights``: float32 values of the policy bundle (network plus normaliser);
    ``step_fields``: per-env step values carried with observations and task
    state (reward, terminated, truncated, episode return, episode length).
    """
    p = graph.parameters
    per, pol = p['perception'], p['policy']
    n, obs_width, extras = per.num_envs, per.obs_dim, per.extras_dim
    act = pol.act_dim
    width = policy_input_dim(pol.obs_dim, act, pol.model.action_history)
    k = min(pol.rollout.chunk_length, pol.rollout.rollout_length)
    joints = len(p['safety'].joint_names)
    # The bridge's joint states under the name the graph gives them (training: its own,
    # topics.SIM_REMAPS).
    joint_states = graph.remappings.get('bridge', {}).get(topics.JOINT_STATES,
                                                          topics.JOINT_STATES)
    return [
        RingNeed('bridge', joint_states, joint_state_capacity(n, joints), 4),
        RingNeed('bridge', topics.TASK_STATE,
                 batch_capacity({'extras': (n, extras), 'step': (n, step_fields)}), 4),
        RingNeed('perception', topics.OBSERVATION,
                 batch_capacity({'obs': (n, obs_width), 'step': (n, step_fields)}), 4),
        RingNeed('policy', topics.ACTION,
                 batch_capacity({'a': (n, act), 'v': (n,), 'l': (n,)}), 4),
        # Rollout chunks (unilab_policy.chunk): observation, action + mean + std, and 7
        # per-step floats (log-prob, value, reward, terminated, truncated, episode return
        # and length).
        RingNeed('policy', topics.ROLLOUT,
                 batch_capacity({'obs': (k, n, width), 'act': (k, n, 3 * act),
                                 'f': (k, n, 7), 'next_obs': (n, width)}), 16),
        RingNeed('trainer', topics.WEIGHTS, batch_capacity({'flat': (n_weights,)}), 4,
                 latched=True),
        RingNeed('safety', topics.SAFE_COMMAND, command_capacity(n, joints), 4),
    ]


def shm_need(rings: list[RingNeed], process_mode: str) -> tuple[int, int]:
    """
    Return ``(bytes the configured mode creates, bytes with every ring created)``.

    Composed (one process): only latched rings exist unless an outside reader
    joins; multiprocess: every ring.
    """
    total = sum(r.nbytes for r in rings)
    if process_mode == 'multiprocess':
        return total, total
    return sum(r.nbytes for r in rings if r.latched), total
