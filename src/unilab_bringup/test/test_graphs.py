# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The graph descriptions: nodes, typed parameters, and the parameter file every starter reads."""

import pytest
from unilab_bringup.graphs import training_graph
from unilab_core.config import RunConfig
from unilab_core.graph import model_parameters, TaskInfo
from unilab_perception.layout import observation_layout
import yaml

TASK = TaskInfo(name='arm6_reach', joint_names=('a', 'b'), action_dim=2, obs_dim=7,
                extras_dim=3, uses_joint_state=True, command_interface='position',
                control_dt=0.02, max_episode_steps=100)


def _train(cfg=None, run_dir='/tmp/run'):
    return training_graph(cfg or RunConfig(), TASK, run_dir, '/tmp/limits.yaml')


def test_graph_has_the_five_nodes_of_four_layers():
    graph = _train()
    assert graph.name == 'train' and graph.end_node == 'trainer'
    assert [n.name for n in graph.nodes] == ['bridge', 'perception', 'policy', 'trainer',
                                             'safety']
    assert {n.package for n in graph.nodes} == {'unilab_bridge', 'unilab_perception',
                                                'unilab_policy', 'unilab_safety'}
    assert set(graph.parameters) == {n.name for n in graph.nodes}


def test_config_values_reach_each_node_under_their_config_keys():
    cfg = RunConfig()
    cfg.run.seed = 7
    cfg.safety.rate_hz = 500.0
    cfg.bridge.state_timeout_s = 0.3
    cfg.policy_update.lr = 5e-4
    cfg.disturbances.enabled = True
    p = _train(cfg).plain_parameters()
    assert p['bridge']['run']['seed'] == p['policy']['run']['seed'] == 7
    assert p['safety']['safety']['rate_hz'] == 500.0
    assert p['safety']['safety']['joint_limits_file'] == '/tmp/limits.yaml'  # resolved
    assert p['safety']['lockstep'] is True and p['safety']['joint_names'] == ['a', 'b']
    assert p['bridge']['bridge']['state_timeout_s'] == 0.3
    assert p['bridge']['disturbances']['enabled'] is True
    assert p['trainer']['policy_update']['lr'] == 5e-4
    assert p['policy']['mode'] == 'on_policy'
    assert p['policy']['action_history_fill'] == 'joint_position'


def test_params_yaml_is_ros_format_without_aliases(tmp_path):
    cfg = RunConfig()
    graph = _train(cfg, tmp_path)
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


def test_parameter_file_round_trips_into_the_node_models(tmp_path):
    # What a node reads back from the file is the model the description built.
    graph = _train()
    data = yaml.safe_load(graph.params_yaml())
    for name, model in graph.parameters.items():
        assert type(model).model_validate(
            model_parameters(data[name]['ros__parameters'])) == model


def test_the_simulated_graph_runs_on_sim_time_and_every_node_watches_its_peers():
    cfg = RunConfig()
    cfg.health.clamp_share_warn = 0.5
    graph = _train(cfg)
    data = yaml.safe_load(graph.params_yaml())
    names = [n.name for n in graph.nodes]
    for name in names:
        ros = data[name]['ros__parameters']
        assert ros['use_sim_time'] is True
        health = graph.parameters[name].health
        assert health.clamp_share_warn == 0.5 and health.hardware_id == 'sim/arm6_reach'
        assert sorted(health.peers) == sorted(f'/{n}' for n in names if n != name)


def test_the_training_graph_keeps_off_a_robots_joint_states_and_clock():
    # Every node (publisher and readers, and rclpy's TimeSource) on the graph's own names.
    graph = _train()
    for name in (n.name for n in graph.nodes):
        args = graph.ros_args(name)
        assert ['-r', '/joint_states:=/unilab/sim/joint_states'] == args[:2], name
        assert ['-r', '/clock:=/unilab/sim/clock'] == args[2:4], name


def test_chunk_length_never_exceeds_rollout():
    from unilab_policy.networks import make_actor
    import torch
    cfg = RunConfig()
    cfg.rollout.rollout_length = 4
    cfg.rollout.chunk_length = 8
    cfg.model.hidden_sizes = [8]
    actor = make_actor(_train(cfg).parameters['policy'], torch.device('cpu'))
    assert actor.chunk_length == 4


def test_height_map_observation_gives_the_policy_its_grid():
    cfg = RunConfig()
    cfg.perception.pointcloud = True
    cfg.perception.imu = True
    cfg.perception.bev_output = 'height_map'
    cfg.perception.bev_range = 3.0
    cfg.perception.pillar_size = 0.5
    assert observation_layout(cfg.perception, 7) == (7 + 6 + 2 * 12 * 12, [13, 2, 12, 12])
    p = _train(cfg).plain_parameters()
    assert p['perception']['obs_dim'] == p['policy']['obs_dim'] == 7 + 6 + 288
    bev = p['perception']['bev']
    assert (bev['feature_dim'], bev['output'], bev['x_range'], bev['y_range'],
            bev['pillar_size']) == (32, 'height_map', [-3.0, 3.0], [-3.0, 3.0], 0.5)
    assert p['policy']['model']['grid_input'] == p['trainer']['model']['grid_input'] == [
        13, 2, 12, 12]
    # Pillar features (the default) leave the model a plain MLP.
    cfg.perception.bev_output = 'features'
    assert observation_layout(cfg.perception, 7) == (7 + 6 + 32, [])
    assert _train(cfg).plain_parameters()['policy']['model']['grid_input'] == []


def test_height_map_larger_than_the_observation_can_take_is_refused():
    from unilab_core.config import PerceptionSection
    with pytest.raises(ValueError, match='perception.bev_range 100.0 / pillar_size 0.5'):
        PerceptionSection(pointcloud=True, bev_output='height_map', bev_range=100.0)
    PerceptionSection(pointcloud=True, bev_range=100.0)  # features: any grid
