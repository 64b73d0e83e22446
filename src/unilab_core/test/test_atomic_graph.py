# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Atomic writes and the graph description."""

import pytest
from unilab_core.atomic import atomic_path, atomic_write_text
from unilab_core.config import RunConfig
from unilab_core.graph import describe_graph, NODES, observation_layout, TaskInfo
import yaml

TASK = TaskInfo(name='arm6_reach', joint_names=('a', 'b'), action_dim=2, obs_dim=7,
                extras_dim=3, uses_joint_state=True, command_interface='position',
                control_dt=0.02, max_episode_steps=100)


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path):
    path = tmp_path / 'f.txt'
    atomic_write_text(path, 'one')
    atomic_write_text(path, 'two')
    assert path.read_text() == 'two'
    assert [p.name for p in tmp_path.iterdir()] == ['f.txt']


def test_atomic_write_failure_keeps_old_file(tmp_path):
    path = tmp_path / 'f.txt'
    path.write_text('old')
    with pytest.raises(RuntimeError):
        with atomic_path(path) as tmp:
            tmp.write_text('half')
            raise RuntimeError('crash while writing')
    assert path.read_text() == 'old'
    assert [p.name for p in tmp_path.iterdir()] == ['f.txt']


def test_graph_has_the_five_nodes_of_four_layers():
    graph = describe_graph(RunConfig(), TASK, '/tmp/run', '/tmp/limits.yaml')
    assert [n.name for n in graph.nodes] == ['bridge', 'perception', 'policy', 'trainer',
                                             'safety']
    assert {n.package for n in graph.nodes} == {'unilab_bridge', 'unilab_perception',
                                                'unilab_policy', 'unilab_safety'}
    assert set(graph.parameters) == {n.name for n in NODES}


def test_params_yaml_is_ros_format_without_aliases(tmp_path):
    cfg = RunConfig()
    graph = describe_graph(cfg, TASK, tmp_path, tmp_path / 'limits.yaml')
    text = graph.params_yaml()
    # rcl's parser rejects YAML anchors/aliases; shared sections must be written out.
    assert '&id' not in text and '*id' not in text
    data = yaml.safe_load(text)
    assert data['policy']['ros__parameters']['model'] == data['trainer']['ros__parameters'][
        'model']
    assert data['safety']['ros__parameters']['joint_names'] == ['a', 'b']
    assert data['trainer']['ros__parameters']['rollout']['num_envs'] == cfg.rollout.num_envs
    assert data['perception']['ros__parameters']['obs_dim'] == 7
    path = graph.write_params(tmp_path / 'p.yaml')
    assert yaml.safe_load(path.read_text()) == data


def test_chunk_length_never_exceeds_rollout():
    cfg = RunConfig()
    cfg.rollout.rollout_length = 4
    cfg.rollout.chunk_length = 8
    graph = describe_graph(cfg, TASK, '/tmp/run', '/tmp/limits.yaml')
    assert graph.parameters['policy']['chunk_length'] == 4


def test_height_map_observation_gives_the_policy_its_grid():
    cfg = RunConfig()
    cfg.perception.pointcloud = True
    cfg.perception.imu = True
    cfg.perception.bev_output = 'height_map'
    cfg.perception.bev_range = 3.0
    cfg.perception.pillar_size = 0.5
    assert observation_layout(cfg, 7) == (7 + 6 + 2 * 12 * 12, [13, 2, 12, 12])
    p = describe_graph(cfg, TASK, '/tmp/run', '/tmp/limits.yaml').parameters
    assert p['perception']['obs_dim'] == p['policy']['obs_dim'] == 7 + 6 + 288
    assert p['perception']['bev'] == {'feature_dim': 32, 'output': 'height_map',
                                      'x_range': [-3.0, 3.0], 'y_range': [-3.0, 3.0],
                                      'pillar_size': 0.5}
    assert p['policy']['model']['grid_input'] == p['trainer']['model']['grid_input'] == [
        13, 2, 12, 12]
    # Pillar features (the default) leave the model a plain MLP.
    cfg.perception.bev_output = 'features'
    assert observation_layout(cfg, 7) == (7 + 6 + 32, [])
    assert describe_graph(cfg, TASK, '/tmp/run', '/tmp/limits.yaml').parameters['policy'][
        'model']['grid_input'] == []


def test_height_map_larger_than_the_observation_can_take_is_refused():
    from unilab_core.config import PerceptionSection
    with pytest.raises(ValueError, match='perception.bev_range 100.0 / pillar_size 0.5'):
        PerceptionSection(pointcloud=True, bev_output='height_map', bev_range=100.0)
    PerceptionSection(pointcloud=True, bev_range=100.0)  # features: any grid
