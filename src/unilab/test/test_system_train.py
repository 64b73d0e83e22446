# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""System tests: train for a tiny budget through the real graph, composed and per process."""

import csv
import json

from conftest import cli, TINY
import pytest
import torch
import yaml

SUMMARY_KEYS = ('steps', 'wall_s', 'fps', 'return_first', 'return_last', 'checkpoint')


def check_run(run_dir, steps, num_envs=8, rollout=16):
    summary = json.loads((run_dir / 'summary.json').read_text())
    for key in SUMMARY_KEYS:
        assert key in summary, key
    per_update = num_envs * rollout
    assert summary['steps'] == -(-steps // per_update) * per_update
    assert summary['stale_chunks'] == 0
    # Checkpoint: real, loadable with weights_only, and the latest matches the summary.
    ckpt = torch.load(summary['checkpoint'], weights_only=True)
    assert ckpt['env_steps'] == summary['steps']
    assert ckpt['weights_version'] == summary['updates']
    assert (run_dir / 'checkpoints' / 'latest.pt').is_file()
    assert not list((run_dir / 'checkpoints').glob('.*.tmp'))
    # Safety gate: every action batch went through it and none was rejected.
    safety = summary['safety']
    assert safety['rejected'] == 0
    assert safety['batches'] >= summary['steps'] // num_envs
    assert safety['passed'] + safety['clamped'] == safety['batches'] * num_envs
    with open(run_dir / 'metrics.csv') as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == summary['updates']
    assert {'losses/value', 'losses/surrogate', 'charts/fps'} <= set(rows[0])
    # What operators look for, from the graph's health counters: the gate's shares are
    # numbers once the safety node has reported (every second), transport drops counted.
    assert {'episodes/success_rate', 'episodes/length_mean', 'safety/clamp_share',
            'safety/reject_share', 'safety/fallback_share', 'transport/dropped',
            'transport/drop_share'} <= set(rows[0])
    assert all(float(r['transport/dropped']) >= 0 for r in rows)
    resolved = yaml.safe_load((run_dir / 'config.yaml').read_text())
    assert resolved['rollout']['num_envs'] == num_envs
    return summary


@pytest.mark.system
def test_train_composed(tmp_path, tiny_config):
    run_dir = tmp_path / 'run'
    proc = cli('train', '--steps', 512, '--run-dir', run_dir, '--config', tiny_config, *TINY,
               check=True)
    assert f'run written to {run_dir}' in proc.stdout
    summary = check_run(run_dir, 512)
    assert summary['process_mode'] == 'composed'
    counters = summary['node_counters']
    # Lock-step: the bridge advanced once per policy step, each through the gate.
    assert counters['bridge']['steps'] == counters['policy']['steps']
    assert counters['bridge']['bad_commands'] == 0


@pytest.mark.system
def test_train_multiprocess(tmp_path, tiny_config):
    run_dir = tmp_path / 'run'
    cli('train', '--steps', 256, '--run-dir', run_dir, '--config', tiny_config, '--multiprocess',
        *TINY, check=True)
    summary = check_run(run_dir, 256)
    assert summary['process_mode'] == 'multiprocess'
    for node in ('bridge', 'perception', 'policy', 'trainer', 'safety'):
        assert (run_dir / 'logs' / f'{node}.log').is_file()


#: Metrics read from the wall clock; the seed fixes every other column of the direct loop's.
WALL_CLOCK_COLUMNS = ('charts/fps', 'charts/update_s', 'charts/wall_s')


def _metrics(run_dir):
    with open(run_dir / 'metrics.csv') as f:
        return list(csv.DictReader(f))


@pytest.mark.system
def test_composed_graph_and_direct_loop_train_bit_identically(tmp_path, tiny_config):
    # The same seed through the nodes (in one process) and through the direct loop: every
    # learning figure is the same to the last bit. The sim2real preset adds disturbances
    # and the action history (filled from the measured joints), so the gate's rate limits,
    # episode starts and the disturbance draws are all on the path.
    from unilab_bringup.paths import config_dir
    runs = {}
    for mode in ('composed', 'direct'):
        runs[mode] = tmp_path / mode
        cli('train', '--seed', 3, '--steps', 1024, '--run-dir', runs[mode], '--config',
            tiny_config, '--config', config_dir() / 'sim2real.yaml', *TINY,
            *(['--direct'] if mode == 'direct' else []), check=True)
    graph, direct = _metrics(runs['composed']), _metrics(runs['direct'])
    assert len(graph) == len(direct) == 8
    # The graph's rows also carry its nodes' health (safety, transport) columns.
    columns = [c for c in direct[0] if c not in WALL_CLOCK_COLUMNS]
    assert {'losses/surrogate', 'losses/value', 'charts/mean_return'} <= set(columns)
    for g, d in zip(graph, direct):
        assert {c: g[c] for c in columns} == {c: d[c] for c in columns}
    summaries = [json.loads((runs[m] / 'summary.json').read_text()) for m in runs]
    for key in ('steps', 'updates', 'return_first', 'return_last'):
        assert summaries[0][key] == summaries[1][key], key
    assert summaries[0]['return_last'] is not None
    weights = [torch.load(s['checkpoint'], weights_only=True)['bundle'] for s in summaries]
    assert weights[0].keys() == weights[1].keys()
    for key in weights[0]:
        assert torch.equal(weights[0][key], weights[1][key]), key


@pytest.mark.system
def test_resume_continues_the_run(tmp_path, tiny_config):
    run_dir = tmp_path / 'run'
    cli('train', '--steps', 256, '--run-dir', run_dir, '--config', tiny_config, *TINY,
        check=True)
    first = json.loads((run_dir / 'summary.json').read_text())
    cli('train', '--resume', run_dir, '--steps', 512, *TINY, check=True)
    second = json.loads((run_dir / 'summary.json').read_text())
    assert second['steps'] == 512
    assert second['updates'] == first['updates'] * 2
    with open(run_dir / 'metrics.csv') as f:
        updates = [int(r['update']) for r in csv.DictReader(f)]
    assert updates == list(range(1, second['updates'] + 1))


@pytest.mark.system
def test_gymnasium_task_runs_through_the_same_graph(tmp_path, tiny_config):
    run_dir = tmp_path / 'hop'
    cli('train', '--task', 'Hopper-v5', '--steps', 128, '--run-dir', run_dir,
        '--config', tiny_config, *TINY, check=True)
    summary = json.loads((run_dir / 'summary.json').read_text())
    assert summary['steps'] == 128
    limits = yaml.safe_load((run_dir / 'joint_limits.yaml').read_text())['joint_limits']
    assert set(limits) == {'thigh_joint', 'leg_joint', 'foot_joint'}
    assert all(j['has_effort_limits'] for j in limits.values())


@pytest.mark.system
def test_export_onnx_is_verified(tmp_path, tiny_config):
    # Trained with the sim2real preset: disturbances on and the policy's last 3 commands
    # in its observation, so the exported network takes 21 + 3 * 6 inputs.
    from unilab_bringup.paths import config_dir
    run_dir = tmp_path / 'run'
    cli('train', '--steps', 128, '--run-dir', run_dir, '--config', tiny_config, '--config',
        config_dir() / 'sim2real.yaml', *TINY, check=True)
    params = yaml.safe_load((run_dir / 'graph_params.yaml').read_text())
    policy = params['policy']['ros__parameters']
    assert policy['model']['action_history'] == 3
    assert policy['action_history_fill'] == 'joint_position' and len(policy['action_low']) == 6
    proc = cli('export', run_dir, '--format', 'onnx', check=True)
    assert (run_dir / 'policy.onnx').is_file()
    assert 'max abs difference' in proc.stdout
    proc = cli('export', run_dir, '--format', 'torchscript', '--out', tmp_path / 'p.pt',
               check=True)
    module = torch.jit.load(str(tmp_path / 'p.pt'))
    assert module(torch.zeros(2, 21 + 3 * 6)).shape == (2, 6)


def _train_with_lidar(tmp_path, perception: str, envs: int):
    """Train 256 steps of arm6_reach with a cheap lidar scan; return (run dir, params)."""
    cfg = tmp_path / 'lidar.yaml'
    cfg.write_text(f'perception: {perception}\n'
                   'bridge: {lidar_channels: 4, lidar_horizontal_samples: 64}\n'
                   'rollout: {rollout_length: 16, chunk_length: 8}\n'
                   'policy_update: {batch_size: 64, epochs: 2}\n'
                   'logging: {tensorboard: false}\n')
    run_dir = tmp_path / 'run'
    cli('train', '--steps', 256, '--num-envs', envs, '--config', cfg, '--run-dir', run_dir,
        '--no-progress', check=True)
    return run_dir, yaml.safe_load((run_dir / 'graph_params.yaml').read_text())


@pytest.mark.system
def test_pointcloud_and_imu_reach_the_policy_observation(tmp_path):
    """Bridge lidar + IMU -> perception (voxel grid, outliers, pillars) -> policy obs."""
    # 8 envs: one cloud and one IMU message per env and step arrive as a burst, more than
    # rclpy's sensor-data history of 5 holds (the graph hung on that before).
    run_dir, params = _train_with_lidar(
        tmp_path, '{pointcloud: true, imu: true, bev_feature_dim: 16}', envs=8)
    width = 21 + 6 + 16  # [q, qd, extras], imu, cloud features
    assert params['perception']['ros__parameters']['obs_dim'] == width
    assert params['policy']['ros__parameters']['obs_dim'] == width
    assert params['bridge']['ros__parameters']['bridge']['lidar'] is True
    summary = json.loads((run_dir / 'summary.json').read_text())
    counters = summary['node_counters']
    assert counters['perception']['published'] >= counters['bridge']['steps'] > 0
    # The trainer's normaliser saw every observation: the IMU and cloud columns vary.
    norm = torch.load(summary['checkpoint'], weights_only=True)['bundle']
    var = norm['obs_normalizer.var']
    assert var.shape == (width,)
    assert (var[21:27] > 0).all() and (var[27:] > 0).any()


@pytest.mark.system
def test_height_map_trains_the_policy_grid_encoder(tmp_path):
    """Bridge lidar -> perception BEV height map -> a policy that learns a CNN on it."""
    from unilab_core.config import ModelSection
    from unilab_policy.models import make_actor_critic
    run_dir, params = _train_with_lidar(
        tmp_path, '{pointcloud: true, bev_output: height_map, bev_range: 3.0, '
        'pillar_size: 0.5}', envs=4)
    width = 21 + 2 * 12 * 12  # [q, qd, extras], [occupancy, max z] x 12 x 12
    policy = params['policy']['ros__parameters']
    assert policy['obs_dim'] == params['perception']['ros__parameters']['obs_dim'] == width
    assert policy['model']['grid_input'] == [21, 2, 12, 12]
    summary = json.loads((run_dir / 'summary.json').read_text())
    counters = summary['node_counters']
    assert counters['perception']['published'] >= counters['bridge']['steps'] > 0
    bundle = torch.load(summary['checkpoint'], weights_only=True)['bundle']
    # The lidar fills some pillars: occupancy varies over the run.
    assert (bundle['obs_normalizer.var'][21:21 + 144] > 0).any()
    # PPO moved the grid encoder's weights away from their seeded start.
    torch.manual_seed(params['trainer']['ros__parameters']['run']['seed'])
    start = make_actor_critic(width, 6, ModelSection(**policy['model'])).state_dict()
    for key in ('actor.0.conv.0.weight', 'critic.0.conv.0.weight', 'actor.0.linear.0.weight'):
        assert bundle[f'actor_critic.{key}'].shape == start[key].shape
        assert not torch.equal(bundle[f'actor_critic.{key}'], start[key]), key
    # The exported ONNX model carries the grid encoder and matches torch.
    proc = cli('export', run_dir, '--format', 'onnx', '--out', tmp_path / 'hm.onnx', check=True)
    assert (tmp_path / 'hm.onnx').is_file(), proc.stdout


def test_camera_images_reach_the_policy_observation(tmp_path):
    """Bridge camera (EGL) -> perception (image stages, CNN) -> policy obs."""
    from unilab_bridge.camera import DEFAULT_SIZE
    from unilab_perception.params import ImageSection
    # The bridge renders what the perception node expects by default.
    assert DEFAULT_SIZE == (ImageSection().height, ImageSection().width)
    cfg = tmp_path / 'img.yaml'
    cfg.write_text('perception: {image: true, image_feature_dim: 8}\n'
                   'disturbances: {enabled: true, camera: {enabled: true}}\n'
                   'rollout: {rollout_length: 16, chunk_length: 8}\n'
                   'policy_update: {batch_size: 32, epochs: 1}\n'
                   'logging: {tensorboard: false}\n')
    run_dir = tmp_path / 'run'
    proc = cli('train', '--steps', 64, '--num-envs', 2, '--config', cfg, '--run-dir', run_dir,
               '--no-progress')
    if proc.returncode == 2 and 'rendering is unavailable' in proc.stderr:
        pytest.skip('no EGL rendering on this machine (the bridge says so at start-up)')
    assert proc.returncode == 0, proc.stderr[-2000:]
    params = yaml.safe_load((run_dir / 'graph_params.yaml').read_text())
    width = 21 + 8  # [q, qd, extras], image features
    assert params['perception']['ros__parameters']['obs_dim'] == width
    assert params['bridge']['ros__parameters']['bridge']['camera'] is True
    summary = json.loads((run_dir / 'summary.json').read_text())
    counters = summary['node_counters']
    assert counters['perception']['published'] >= counters['bridge']['steps'] > 0
    assert counters['perception']['invalid'] == 0
    var = torch.load(summary['checkpoint'], weights_only=True)['bundle']['obs_normalizer.var']
    assert var.shape == (width,) and (var[21:] > 0).any()
