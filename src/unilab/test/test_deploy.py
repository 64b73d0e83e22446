# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The deploy graph's description, the model checks against a profile, and the CLI's refusals."""

import dataclasses

from conftest import cli, cli_here
import numpy as np
import pytest
from unilab_bringup.deploy import check_model_fits, DeployModel, describe_model, model_metadata
from unilab_bringup.graphs import deploy_graph
from unilab_bringup.paths import profile_path
from unilab_bringup.prepare import task_info
from unilab_core.config import ConfigError, ModelSection, RunConfig
from unilab_core.graph import TaskInfo
from unilab_core.robot_profile import load_profile
from unilab_policy.checkpoint import save_checkpoint
from unilab_policy.networks import build_bundle
from unilab_policy.params import PolicyNodeParams
import yaml


@pytest.fixture(scope='module')
def arm6():
    info, _ = task_info('arm6_reach')
    params = PolicyNodeParams(obs_dim=info.obs_dim, act_dim=info.action_dim,
                              model=ModelSection(hidden_sizes=[16], action_history=2))
    return load_profile(profile_path('arm6')), params, info


def _run_dir(tmp_path, params):
    run = tmp_path / 'run'
    run.mkdir()
    (run / 'graph_params.yaml').write_text(yaml.safe_dump(
        {'policy': {'ros__parameters': params.model_dump()}}))
    bundle = build_bundle(params.obs_dim, params.act_dim, params.model, params.normalization,
                          seed=1)
    save_checkpoint(run / 'checkpoints' / 'latest.pt', {'bundle': bundle.state_dict()})
    return run, bundle


def test_deploy_graph_is_perception_policy_safety_on_the_robots_topics(arm6):
    profile, params, info = arm6
    g = deploy_graph(RunConfig(), profile, params, info, '/m/run', profile.joint_limits_file,
                     namespace='/robot3', armed=False)
    assert g.name == 'deploy'
    assert [n.name for n in g.nodes] == ['perception', 'policy', 'safety']
    per, pol, safe = (g.parameters[k] for k in ('perception', 'policy', 'safety'))
    assert per.source == 'robot' and per.num_envs == 1 and per.control_rate_hz == 50.0
    assert per.joint_names == profile.joint_names and per.obs_dim == params.obs_dim
    assert per.task_inputs.goal_topic == '/robot3/goal_pose'
    assert pol.mode == 'deploy' and pol.weights_file == '/m/run' and pol.rollout.num_envs == 1
    assert pol.runtime == 'auto'  # run.deploy_runtime: onnxruntime on a CPU
    # The chain rehearses 4 ms before each control step (run.deploy_rehearse_lead_ms).
    assert per.rehearse_lead_ms == 4.0
    cold = RunConfig.model_validate({'run': {'deploy_rehearse_lead_ms': 0}})
    assert deploy_graph(cold, profile, params, info, '/m/run', profile.joint_limits_file,
                        armed=False).parameters['perception'].rehearse_lead_ms == 0.0
    assert safe.lockstep is False and safe.armed is False and safe.num_envs == 1
    assert safe.state_timeout_s == profile.joint_state_timeout_s
    assert safe.dt == pytest.approx(0.02) and safe.safety.watchdog_timeout_s >= 3 * 0.02
    assert safe.output.type == 'forward_command'
    assert safe.output.topic == '/robot3/forward_position_controller/commands'
    # Every node under the robot's namespace, its topics and joint states remapped into it.
    assert g.ros_args('safety')[:2] == ['-r', '__ns:=/robot3']
    assert g.remappings['perception']['/joint_states'] == '/robot3/joint_states'
    assert g.remappings['policy']['/unilab/action'] == '/robot3/unilab/action'
    # The robot's own clock and joint states, never the training graph's names.
    assert not any('/unilab/sim/' in a for n in g.remappings for a in g.ros_args(n))
    assert set(yaml.safe_load(g.params_yaml())) == {'/robot3/perception', '/robot3/policy',
                                                    '/robot3/safety'}
    # A robot runs on wall time; each node's health names the robot and its peers there.
    assert g.use_sim_time is False and 'use_sim_time' not in g.params_yaml()
    assert safe.health.hardware_id == f'robot/{profile.name}/robot3'
    assert sorted(safe.health.peers) == ['/robot3/perception', '/robot3/policy']


def test_a_run_and_its_export_describe_the_same_policy(tmp_path, arm6):
    from unilab_policy.export import export_onnx
    from unilab_policy.exported_inference import ExportedPolicy
    profile, params, info = arm6
    run, bundle = _run_dir(tmp_path, params)
    (run / 'config.yaml').write_text('run: {task: arm6_reach}\n')
    described = describe_model(run)
    assert described.params == params and described.task == info
    onnx = tmp_path / 'p.onnx'
    width = bundle.actor_critic.obs_dim
    export_onnx(bundle.actor_critic, bundle.obs_normalizer, onnx, width,
                metadata=model_metadata(params, info))
    exported = describe_model(onnx)
    assert exported.params == params and exported.task == info
    # The exported network acts as the checkpoint's mean action does.
    obs = np.random.default_rng(0).normal(size=(3, width)).astype(np.float32)
    import torch
    with torch.no_grad():
        want = bundle.eval()(torch.from_numpy(obs)).numpy()
    got = ExportedPolicy(onnx, 3, width).act(obs).action.numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_a_model_that_does_not_fit_the_robot_is_refused_naming_both(arm6):
    profile, params, info = arm6
    model = DeployModel('/m', params, info)
    check_model_fits(model, profile, 'arm6.yaml')  # fits
    other = dataclasses.replace(info, action_dim=7, command_interface='velocity',
                                control_dt=0.01)
    with pytest.raises(ConfigError) as err:
        check_model_fits(DeployModel('/m', params, other), profile, 'arm6.yaml')
    text = str(err.value)
    assert 'commands 7 joints' in text and '`velocity`' in text and '100 Hz' in text


def test_deploy_refuses_bad_input_with_exit_code_2(tmp_path, arm6, capsys):
    profile, params, info = arm6
    run, _ = _run_dir(tmp_path, params)
    bad = tmp_path / 'bad.yaml'
    bad.write_text(yaml.safe_dump({'robot': {'name': 'x', 'task': 'arm6_reach',
                                             'joint_names': ['a'], 'control_rate': 5}}))
    for args, words in (
            (['deploy', run, '--robot', bad], ['robot.control_rate', 'unknown key']),
            (['deploy', run, '--robot', 'no_such_robot'], ['no such file', 'arm6']),
            (['deploy', tmp_path / 'nothing', '--robot', 'arm6'], ['not found']),
            (['deploy', run, '--robot', 'quad8'], ['does not fit', '6 joints'])):
        # In this process (the process path is the same main(); one case runs as a process).
        proc = cli(*args, timeout=120) if 'quad8' in args else cli_here(capsys, *args)
        assert proc.returncode == 2, proc.stderr
        assert 'Traceback' not in proc.stderr
        for w in words:
            assert w in proc.stderr, proc.stderr


def test_the_ur5e_profile_refuses_a_model_of_another_robots_task(tmp_path, arm6, capsys):
    # An arm6_reach policy has the UR5e's joints, commands and rate, but not its zeros.
    profile, params, info = arm6
    run, _ = _run_dir(tmp_path, params)
    (run / 'config.yaml').write_text('run: {task: arm6_reach}\n')
    proc = cli_here(capsys, 'deploy', run, '--robot', 'ur5e')
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr
    error = [line for line in proc.stderr.splitlines() if 'does not fit' in line]
    assert len(error) == 1, proc.stderr
    assert 'trained on `arm6_reach`, the profile is for `ur5e_reach`' in error[0]


def test_a_tasks_home_and_workspace_travel_with_the_model():
    info, _ = task_info('ur5e_reach')
    assert info.home == (0.0, -1.57, 1.57, -1.57, -1.57, 0.0)
    assert info.workspace_frame == 'base_link'
    assert info.workspace == (0.25, -0.4, 0.1, 0.65, 0.4, 0.5)
    # Exported metadata is JSON (lists); describe_model reads it back as the same TaskInfo.
    meta = yaml.safe_load(yaml.safe_dump(model_metadata(PolicyNodeParams(
        obs_dim=info.obs_dim, act_dim=info.action_dim), info)))
    assert TaskInfo(**{k: tuple(v) if isinstance(v, list) else v
                       for k, v in meta['task'].items()}) == info


def test_the_ur5e_deploy_graph_sees_the_tool_where_the_makers_double_has_it():
    """The perception node's forward kinematics against UR's DH table, not our model."""
    from unilab_perception.task_inputs import ReachInputs
    from ur5e_double import dh_flange, HOME
    profile = load_profile(profile_path('ur5e'))
    info, _ = task_info(profile.task)
    params = PolicyNodeParams(obs_dim=info.obs_dim, act_dim=info.action_dim)
    per = deploy_graph(RunConfig(), profile, params, info, '/m', profile.joint_limits_file,
                       armed=False).parameters['perception']
    inputs = ReachInputs(per.model_file, per.joint_names, per.task_inputs.tool_site)
    inputs.set_goal([0.5, 0.0, 0.3])
    rng = np.random.default_rng(3)
    for q in np.vstack([HOME, rng.uniform(-np.pi, np.pi, size=(19, 6))]):
        tool = inputs.extras(q[None, :])[0, :3]
        assert np.linalg.norm(tool - dh_flange(q)[:3, 3]) < 1e-3, q
    # The old profile's model (arm6's zeros) puts the tool elsewhere: this test would fail.
    old = ReachInputs(load_profile(profile_path('arm6')).model_file, per.joint_names,
                      'ee_site')
    old.set_goal([0.5, 0.0, 0.3])
    home = np.array([HOME])
    assert np.linalg.norm(old.extras(home)[0, :3] - dh_flange(HOME)[:3, 3]) > 0.1


def test_a_legged_robots_deploy_graph_does_not_rehearse():
    """Its gate's motor loop shares the GIL; a rehearsal's cost to it is not measured."""
    profile = load_profile(profile_path('go2'))
    info, _ = task_info(profile.task)
    params = PolicyNodeParams(obs_dim=info.obs_dim, act_dim=info.action_dim)
    g = deploy_graph(RunConfig(), profile, params, info, '/m', profile.joint_limits_file,
                     armed=False)
    assert g.parameters['safety'].legged is not None
    assert g.parameters['perception'].rehearse_lead_ms == 0.0
