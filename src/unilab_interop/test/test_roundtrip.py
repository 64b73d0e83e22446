# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Policies crossing between rsl_rl and UniLab act identically.

rsl_rl -> UniLab: a short rsl_rl training through our environment, its own
checkpoint and ONNX export, our import; our deployed actor's commands equal
rsl_rl's inference mapped by the task's action map, before the gate.
UniLab -> rsl_rl: a UniLab run exported as rsl_rl loads in rsl_rl's runner
(strictly) and acts as our network does, in torch and through the ONNX file.
"""

import numpy as np
import onnxruntime
import pytest
from tensordict import TensorDict
import torch
from unilab.cli import main
from unilab_bringup.prepare import prepare_run
from unilab_policy.actor import StepIn
from unilab_policy.checkpoint import save_checkpoint
from unilab_policy.envelope import checkpoint_envelope, KEY as ENVELOPE_KEY
from unilab_policy.networks import bundle_from_params, load_trained, make_actor
import yaml

TOL = 1e-5


def _rollout_obs(env, steps=20, seed=1):
    """Return observations of the environment under random actions, [steps * N, obs]."""
    g = torch.Generator().manual_seed(seed)
    rows = [env.get_observations()['policy'].clone()]
    for _ in range(steps - 1):
        obs, _, _, _ = env.step(torch.randn(env.num_envs, env.num_actions, generator=g) * 0.5)
        rows.append(obs['policy'].clone())
    return torch.cat(rows)


def _deployed_commands(run_dir, obs: np.ndarray, runtime='auto') -> np.ndarray:
    """Return our deploy-mode actor's commands for a batch of observations."""
    trained = load_trained(run_dir)
    p = trained.params.model_copy(update={
        'mode': 'deploy', 'runtime': runtime,
        'rollout': trained.params.rollout.model_copy(update={'num_envs': obs.shape[0]})})
    actor = make_actor(p, 'cpu', trained.bundle, log=lambda _: None)
    actor.set_version(0)
    return actor.step(StepIn(0, obs)).action.action


@pytest.mark.parametrize('which', ['checkpoint', 'onnx'])
def test_rsl_rl_policy_imported_acts_as_rsl_rl(rsl_run, tmp_path, which):
    rd = tmp_path / 'imported'
    assert main(['import-policy', 'rsl_rl', str(rsl_run[which]), '--task', 'arm6_reach',
                 '--run-dir', str(rd)]) == 0
    env = rsl_run['env']
    obs = _rollout_obs(env)
    policy = rsl_run['runner'].get_inference_policy('cpu')
    with torch.no_grad():
        actions = policy(TensorDict({'policy': obs, 'critic': obs}, batch_size=[len(obs)]))
    theirs = env.action_map.command(obs.numpy(), actions.numpy())
    # The normaliser matters: the test would pass by accident with identity statistics.
    assert float(policy.obs_normalizer._std.min()) != 1.0
    for runtime in ('torch', 'onnx'):  # our training-time and deployed inference
        ours = _deployed_commands(rd, obs.numpy(), runtime)
        assert np.max(np.abs(ours - theirs)) <= TOL, runtime
    # The same network through rsl_rl's own ONNX file.
    sess = onnxruntime.InferenceSession(str(rsl_run['onnx']))
    onnx_actions = np.concatenate([sess.run(['actions'], {'obs': row[None]})[0]
                                   for row in obs.numpy()[:16]])
    assert np.max(np.abs(onnx_actions - actions.numpy()[:16])) <= TOL


def _unilab_run(tmp_path, obs):
    """Return a UniLab arm6_reach run directory: a random network, statistics of ``obs``."""
    run = prepare_run([], {'run.task': 'arm6_reach', 'logging.tensorboard': False},
                      run_dir=str(tmp_path / 'ours'))
    bundle = bundle_from_params(run.graph.parameters['policy'], seed=3)
    g = torch.Generator().manual_seed(4)
    with torch.no_grad():
        n = bundle.obs_normalizer
        n.update(obs)
        n.var.mul_(torch.rand(n.var.shape, generator=g) * 2 + 1).add_(1e-4)
        for p in bundle.actor_critic.parameters():
            p.add_(0.1 * torch.randn(p.shape, generator=g))
    envelope = {'joint_low': [-1.0 - 0.1 * k for k in range(6)],
                'joint_high': [1.0 + 0.1 * k for k in range(6)], 'samples': 100,
                'workspace': [], 'workspace_frame': ''}
    save_checkpoint(run.run_dir / 'checkpoints' / 'latest.pt',
                    {'bundle': bundle.state_dict(), 'updates': 7, ENVELOPE_KEY: envelope})
    return run.run_dir, bundle


def test_unilab_policy_exported_loads_in_rsl_rl_runner_and_acts_alike(rsl_run, tmp_path):
    from rsl_rl.runners import OnPolicyRunner
    env = rsl_run['env']
    rd, bundle = _unilab_run(tmp_path, _rollout_obs(env, seed=3))
    out = tmp_path / 'export'
    assert main(['export', str(rd), '--format', 'rsl_rl', '--out', str(out)]) == 0
    assert (out / 'model_7.pt').is_file() and (out / 'policy.onnx').is_file()
    assert not (out / 'policy.onnx.data').exists()  # one file to carry
    cfg = yaml.safe_load((out / 'rsl_rl_train_cfg.yaml').read_text())
    runner = OnPolicyRunner(env, cfg, log_dir=None, device='cpu')
    runner.load(str(out / 'model_7.pt'))  # strict: every key and shape fits
    assert runner.current_learning_iteration == 7
    obs = _rollout_obs(env, seed=2)
    with torch.no_grad():
        ours = bundle(obs)
        # Our normaliser clips at normalization.clip standard deviations, rsl_rl's does not:
        # compare where ours does not clip (the observations both were trained on).
        inside = ((obs - bundle.obs_normalizer.mean).abs()
                  < 5.0 * bundle.obs_normalizer.std).all(dim=1)
        theirs = runner.get_inference_policy('cpu')(
            TensorDict({'policy': obs, 'critic': obs}, batch_size=[len(obs)]))
    assert inside.sum() >= len(obs) // 2
    assert torch.max(torch.abs(ours - theirs)[inside]) <= TOL
    sess = onnxruntime.InferenceSession(str(out / 'policy.onnx'))
    rows = obs[inside][:16].numpy()
    onnx_actions = np.concatenate([sess.run(['actions'], {'obs': r[None]})[0] for r in rows])
    assert np.max(np.abs(onnx_actions - ours[inside][:16].numpy())) <= TOL
    # And back: the exported checkpoint imports with the spec written beside it.
    back = tmp_path / 'back'
    assert main(['import-policy', 'rsl_rl', str(out / 'model_7.pt'), '--task', 'arm6_reach',
                 '--spec', str(out / 'rsl_rl_spec.yaml'), '--run-dir', str(back)]) == 0
    again = load_trained(back).bundle
    with torch.no_grad():
        assert torch.max(torch.abs(again(obs[inside]) - ours[inside])) <= TOL
    # The trained joint range travels in the spec (rsl_rl's files have no place for it).
    mine = checkpoint_envelope(rd / 'checkpoints' / 'latest.pt')
    theirs = checkpoint_envelope(back / 'checkpoints' / 'latest.pt')
    assert theirs['joint_low'] == mine['joint_low']
    assert theirs['joint_high'] == mine['joint_high']
