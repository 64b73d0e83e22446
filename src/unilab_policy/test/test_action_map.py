# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The action map: actions -> commands in joint units, resolved per task, exported with the net."""

import copy
import dataclasses
import threading
import time
import warnings

import numpy as np
import pytest
import torch
from unilab_core.config import ConfigError, ModelSection, NormalizationSection
from unilab_core.graph import TaskInfo
from unilab_policy.action_map import ActionMap, resolve_action_map
from unilab_policy.actor import PolicyActor, StepIn
from unilab_policy.export import export_onnx, export_torchscript
from unilab_policy.exported_inference import ExportedPolicy, OnnxBundlePolicy
from unilab_policy.inference import InferencePolicy
from unilab_policy.networks import build_bundle, load_weights_file, resolve_runtime
from unilab_policy.params import PolicyNodeParams
from unilab_policy.weights import flatten_state

J, N = 3, 4
OBS = 2 * J + 2
ARM = TaskInfo(name='arm', joint_names=('a', 'b', 'c'), action_dim=J, obs_dim=OBS, extras_dim=2,
               uses_joint_state=True, command_interface='position', control_dt=0.02,
               max_episode_steps=10, action_mode='relative', action_scale=(0.1, 0.2, 0.3))


def test_the_task_default_is_resolved_and_a_config_overrides_it():
    m = resolve_action_map(ModelSection(), ARM)
    assert (m.action_mode, m.action_scale) == ('relative', [0.1, 0.2, 0.3])
    m = resolve_action_map(ModelSection(action_scale=[0.5]), ARM)
    assert m.action_scale == [0.5, 0.5, 0.5]
    m = resolve_action_map(ModelSection(action_mode='absolute'), ARM)
    assert (m.action_mode, m.action_scale) == ('absolute', [])
    absolute_task = dataclasses.replace(ARM, action_mode='absolute', action_scale=())
    assert resolve_action_map(ModelSection(), absolute_task).action_mode == 'absolute'


def test_impossible_relative_maps_are_refused_naming_the_key():
    effort = dataclasses.replace(ARM, command_interface='effort')
    with pytest.raises(ConfigError, match='model.action_mode: relative needs position'):
        resolve_action_map(ModelSection(action_mode='relative'), effort)
    with pytest.raises(ConfigError, match='model.action_scale: 2 values, task arm has 3'):
        resolve_action_map(ModelSection(action_scale=[0.1, 0.2]), ARM)
    no_default = dataclasses.replace(ARM, action_mode='absolute', action_scale=())
    with pytest.raises(ConfigError, match='model.action_scale: task arm has no default'):
        resolve_action_map(ModelSection(action_mode='relative'), no_default)
    with pytest.raises(ValueError, match='finite and > 0'):
        ModelSection(action_scale=[0.1, -1.0])
    with pytest.raises(ValueError, match='not resolved'):
        ActionMap('task', (), J)


def test_node_parameters_without_a_task_act_in_absolute_commands():
    assert PolicyNodeParams(obs_dim=OBS, act_dim=J).model.action_mode == 'absolute'


def test_relative_commands_are_measured_position_plus_scaled_action_and_invert():
    amap = ActionMap('relative', [0.1, 0.2, 0.3], J)
    obs = np.arange(N * OBS, dtype=np.float32).reshape(N, OBS) / 10
    act = np.random.default_rng(0).normal(size=(N, J)).astype(np.float32)
    cmd = amap.command(obs, act)
    np.testing.assert_allclose(cmd, obs[:, :J] + act * [0.1, 0.2, 0.3], rtol=1e-6)
    np.testing.assert_allclose(amap.action(obs, cmd), act, rtol=1e-5, atol=1e-6)
    torch_cmd = amap(torch.from_numpy(obs), torch.from_numpy(act)).numpy()
    np.testing.assert_allclose(torch_cmd, cmd, rtol=1e-6)
    absolute = ActionMap('absolute', (), J)
    assert absolute.command(obs, act) is act


def test_a_clipped_map_bounds_the_lead_and_resolves_from_the_task():
    amap = ActionMap('relative', [0.1, 0.2, 0.3], J, clip=1.5)
    obs = np.random.default_rng(3).normal(size=(N, OBS)).astype(np.float32)
    act = np.array([[3.0, -0.5, -7.0]] * N, np.float32)
    cmd = amap.command(obs, act)
    # Beyond the clip the command stops at clip * scale from the measured joint.
    np.testing.assert_allclose(cmd - obs[:, :J], [[0.15, -0.1, -0.45]] * N, rtol=1e-6)
    torch_cmd = amap(torch.from_numpy(obs), torch.from_numpy(act)).numpy()
    np.testing.assert_allclose(torch_cmd, cmd, rtol=1e-6)  # what an export computes
    # The task's clip unless the config gives one (0: none); absolute maps never clip.
    clipped = dataclasses.replace(ARM, action_clip=1.5)
    assert resolve_action_map(ModelSection(), clipped).action_clip == 1.5
    assert resolve_action_map(ModelSection(action_clip=0.0), clipped).action_clip == 0.0
    assert resolve_action_map(ModelSection(action_clip=2.0), ARM).action_clip == 2.0
    assert resolve_action_map(ModelSection(action_mode='absolute'), clipped).action_clip == 0
    with pytest.raises(ValueError, match='model.action_clip must be >= 0'):
        ModelSection(action_clip=-0.5)
    with pytest.raises(ValueError, match='action_clip must be >= 0'):
        ActionMap('absolute', (), J, clip=1.0)
    # Parameters from before the clip (none recorded) act unclipped, as they were trained.
    assert PolicyNodeParams(obs_dim=OBS, act_dim=J).model.action_clip == 0.0


def _actor(amap, mode):
    bundle = build_bundle(OBS, J, ModelSection(), NormalizationSection(), seed=0)
    actor = PolicyActor(bundle, N, J, mode=mode, action_map=amap, rollout_length=2,
                        chunk_length=2)
    actor.set_version(0)
    return actor, bundle


def test_the_actor_sends_commands_and_keeps_actions_for_learning():
    amap = ActionMap('relative', [0.1, 0.2, 0.3], J)
    actor, bundle = _actor(amap, 'on_policy')
    rng = np.random.default_rng(1)
    obs = [rng.normal(size=(N, OBS)).astype(np.float32) for _ in range(3)]
    zeros = np.zeros(N, np.float32)
    outs, chunk = [], None
    for seq, o in enumerate(obs):
        res = actor.step(StepIn(seq, o, *([zeros] * 4 if seq else [None] * 4),
                                episode_length=zeros if seq else None))
        if res.action is not None:
            outs.append((o, res.action.action))
        chunk = res.chunk or chunk
    assert chunk is not None
    # The chunk holds the sampled actions; the step's command is the map of them.
    for k, (o, cmd) in enumerate(outs[:2]):
        np.testing.assert_allclose(chunk.tensors['actions'][k], amap.action(o, cmd),
                                   rtol=1e-4, atol=1e-5)


def test_an_exported_model_gives_commands_like_the_actor(tmp_path):
    amap = ActionMap('relative', [0.1, 0.2, 0.3], J)
    actor, bundle = _actor(amap, 'deploy')
    obs = np.random.default_rng(2).normal(size=(N, OBS)).astype(np.float32)
    want = actor.step(StepIn(0, obs)).action.action
    path = tmp_path / 'p.onnx'
    export_onnx(bundle.actor_critic, bundle.obs_normalizer, path, OBS, action_map=amap)
    exported = ExportedPolicy(path, N, OBS)
    np.testing.assert_allclose(exported.act(obs).action.numpy(), want, atol=1e-5)
    assert exported.command(obs).dtype == np.float32  # the control path's numpy call
    np.testing.assert_allclose(exported.command(obs.astype(np.float64)), want, atol=1e-5)
    # In a deploy actor the exported model's output is used as the command as it is.
    actor.inference = exported
    np.testing.assert_allclose(actor.step(StepIn(1, obs)).action.action, want, atol=1e-5)


def test_the_onnx_runtime_acts_like_torch_and_follows_every_weight_swap():
    amap = ActionMap('relative', [0.1, 0.2, 0.3], J)
    torch_actor, bundle = _actor(amap, 'deploy')
    onnx_actor = PolicyActor(copy.deepcopy(bundle), N, J, mode='deploy', action_map=amap,
                             action_history=0, runtime='onnx')
    assert isinstance(onnx_actor.inference, OnnxBundlePolicy)
    obs = np.random.default_rng(3).normal(size=(N, OBS)).astype(np.float32)
    # No weights yet: nothing exported, nothing to act with (the gate holds).
    assert onnx_actor.step(StepIn(0, obs)).action is None
    assert not onnx_actor.inference.onnx_active
    onnx_actor.set_version(0)
    torch_actor.set_version(0)
    assert onnx_actor.inference.onnx_active  # the first export is ready before any step
    np.testing.assert_allclose(onnx_actor.step(StepIn(1, obs)).action.action,
                               torch_actor.step(StepIn(1, obs)).action.action, atol=1e-5)
    # New weights act from the very next step: in torch while the export builds, then
    # through onnxruntime, the same commands both ways.
    flat = flatten_state(bundle)[0].numpy() * 1.5
    for actor in (onnx_actor, torch_actor):
        actor.load_weights(flat, 1)
    want = torch_actor.step(StepIn(2, obs)).action.action
    out = onnx_actor.step(StepIn(2, obs)).action
    assert out.version == 1
    # Nothing trains on a deployed policy's value / log-prob: zeros nobody can write.
    assert not out.value.any() and not out.log_prob.any() and not out.value.flags.writeable
    np.testing.assert_allclose(out.action, want, atol=1e-5)
    deadline = time.monotonic() + 60
    while not onnx_actor.inference.onnx_active and time.monotonic() < deadline:
        time.sleep(0.05)
    assert onnx_actor.inference.onnx_active and onnx_actor.inference.exports == 2
    np.testing.assert_allclose(onnx_actor.step(StepIn(3, obs)).action.action,
                               torch_actor.step(StepIn(3, obs)).action.action, atol=1e-5)


def test_the_onnx_runtime_is_for_deployed_policies_only():
    amap = ActionMap('absolute', (), J)
    _, bundle = _actor(amap, 'deploy')
    for mode in ('on_policy', 'adapt'):
        with pytest.raises(ValueError, match='runtime onnx'):
            PolicyActor(bundle, N, J, mode=mode, runtime='onnx')
        with pytest.raises(ValueError, match='runtime onnx needs mode deploy'):
            PolicyNodeParams(obs_dim=OBS, act_dim=J, mode=mode, runtime='onnx')
    cpu, cuda = torch.device('cpu'), torch.device('cuda')
    assert resolve_runtime('auto', 'deploy', cpu) == 'onnx'
    assert resolve_runtime('auto', 'deploy', cuda) == 'torch'  # CUDA graphs, no export
    assert resolve_runtime('auto', 'adapt', cpu) == 'torch'
    assert resolve_runtime('torch', 'deploy', cpu) == 'torch'


def _raise(*args, **kwargs):
    raise RuntimeError('exporter unavailable')


@pytest.mark.parametrize('name, fake, why', [
    ('onnx_bytes', _raise, 'exporter unavailable'),
    # A mismatch, and a NaN one (NaN > tolerance is False: it must still be refused).
    ('verify_onnx', lambda *a, **k: 1e-3, 'differs from torch by 1.00e-03'),
    ('verify_onnx', lambda *a, **k: float('nan'), 'differs from torch by nan')])
def test_a_failed_export_leaves_the_policy_acting_in_torch(monkeypatch, name, fake, why):
    import unilab_policy.export as export
    amap = ActionMap('absolute', (), J)
    torch_actor, bundle = _actor(amap, 'deploy')
    logs = []
    actor = PolicyActor(copy.deepcopy(bundle), N, J, mode='deploy', runtime='onnx',
                        log=logs.append)
    monkeypatch.setattr(export, name, fake)
    actor.set_version(0)
    torch_actor.set_version(0)
    assert not actor.inference.onnx_active and actor.inference.failed == 1
    assert any('acting in torch: ' in m and why in m for m in logs), logs
    obs = np.random.default_rng(4).normal(size=(N, OBS)).astype(np.float32)
    np.testing.assert_allclose(actor.step(StepIn(0, obs)).action.action,
                               torch_actor.step(StepIn(0, obs)).action.action, atol=1e-6)


def test_a_burst_of_weights_runs_one_export_at_a_time_and_ends_on_the_newest():
    amap = ActionMap('relative', [0.1, 0.2, 0.3], J)
    torch_actor, bundle = _actor(amap, 'deploy')
    actor = PolicyActor(copy.deepcopy(bundle), N, J, mode='deploy', action_map=amap,
                        runtime='onnx')
    actor.set_version(0)  # the first export, at once
    base = flatten_state(bundle)[0].numpy()
    for v in range(1, 11):  # a weights topic flooding new versions
        flat = base * (1.0 + 0.05 * v)
        actor.load_weights(flat, v)
        assert sum(t.name == 'onnx-export' for t in threading.enumerate()) <= 1
    torch_actor.load_weights(flat, 10)
    deadline = time.monotonic() + 60
    while not actor.inference.onnx_active and time.monotonic() < deadline:
        time.sleep(0.05)
    assert actor.inference.onnx_active and actor.inference._worker is None
    # Versions that came while an export ran were skipped to the newest.
    assert 2 <= actor.inference.exports < 11 and actor.inference.failed == 0
    obs = np.random.default_rng(5).normal(size=(N, OBS)).astype(np.float32)
    out = actor.step(StepIn(0, obs)).action
    assert out.version == 10
    np.testing.assert_allclose(out.action, torch_actor.step(StepIn(0, obs)).action.action,
                               atol=1e-5)


def test_an_exported_model_is_refused_for_a_sampling_actor(tmp_path):
    amap = ActionMap('absolute', (), J)
    actor, bundle = _actor(amap, 'on_policy')
    path = tmp_path / 'p.onnx'
    export_onnx(bundle.actor_critic, bundle.obs_normalizer, path, OBS, action_map=amap)
    with pytest.raises(ConfigError, match='exported model acts only in deploy mode'):
        load_weights_file(actor, path)
    assert isinstance(actor.inference, InferencePolicy)  # nothing changed


def test_an_exported_runtime_takes_a_read_only_observation(tmp_path):
    amap = ActionMap('absolute', (), J)
    actor, bundle = _actor(amap, 'deploy')
    path = tmp_path / 'p.pt'
    export_torchscript(bundle.actor_critic, bundle.obs_normalizer, path, OBS, action_map=amap)
    obs = np.random.default_rng(6).normal(size=(N, OBS)).astype(np.float32)
    obs.flags.writeable = False  # as published arrays are handed over
    want = actor.step(StepIn(0, obs)).action.action
    exported = ExportedPolicy(path, N, OBS)
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # torch warns about non-writable arrays
        got = exported.command(obs)
    np.testing.assert_allclose(got, want, atol=1e-5)
