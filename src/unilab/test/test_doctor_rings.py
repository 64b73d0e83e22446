# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The doctor's ring list matches the publishers the real nodes create."""

import pytest
import rclpy
from unilab.doctor.report import policy_weight_count
from unilab.doctor.rings import graph_rings, RingNeed, shm_need
from unilab_bringup.prepare import prepare_run
from unilab_core.ros.runtime import create_composed
from unilab_core.ros.tensor_topic import TensorPublisher
from unilab_core.transport.ring_layout import ring_bytes
from unilab_perception.perception_node import PASS_THROUGH


def test_ring_bytes_by_hand():
    # 4 KiB header page + 4 slots of (4 KiB slot header + 10,000 B -> 16 KiB) each
    assert ring_bytes(10_000, 4) == 4096 + 4 * 16384
    assert ring_bytes(1, 2, ext_bytes=1) == 4096 + 4096 + 2 * 8192
    need = [RingNeed('a', '/x', 10_000, 4), RingNeed('b', '/w', 1, 2, latched=True)]
    assert shm_need(need, 'composed') == (4096 + 2 * 8192, 4096 * 18 + 2 * 8192)
    assert shm_need(need, 'multiprocess') == (4096 * 18 + 2 * 8192,) * 2


@pytest.mark.parametrize('yaml_text', [
    'rollout: {num_envs: 3, chunk_length: 4, rollout_length: 8}\n',
    'rollout: {num_envs: 2}\nperception: {imu: true}\nmodel: {action_history: 2}\n',
])
def test_rings_match_the_nodes(tmp_path, yaml_text):
    cfg = tmp_path / 'c.yaml'
    cfg.write_text(yaml_text + 'logging: {tensorboard: false}\n')
    run = prepare_run([str(cfg)], run_dir=str(tmp_path / 'run'))
    expected = graph_rings(run.graph, policy_weight_count(run.graph), len(PASS_THROUGH))
    rclpy.init(args=['--ros-args', '--params-file', str(run.params_file)])
    nodes = []
    try:
        nodes = create_composed(run.graph.nodes, run.graph.ros_args)
        actual = sorted(
            RingNeed(node.get_name(), ep.topic, ep.capacity, ep.slots, ep.latched)
            for node in nodes for ep in node.__dict__.get('_unilab_transport_endpoints', [])
            if isinstance(ep, TensorPublisher))
    finally:
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown()
    assert actual == sorted(expected)
