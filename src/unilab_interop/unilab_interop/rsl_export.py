# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab export RUN_DIR --format rsl_rl``: a UniLab policy as rsl_rl's runner saves one.

rsl_rl's own ``OnPolicyRunner`` is built for the policy's sizes (over a stand-in
environment that only reports them), its actor and critic take our weights
(``unilab_interop.convert``), and the runner itself writes the files:
``model_<updates>.pt`` (``runner.save``: ``actor_state_dict``,
``critic_state_dict``, ``optimizer_state_dict``, ``iter``, ``infos``; what
``runner.load`` reads; ``rsl_rl_train_cfg.yaml`` is the runner configuration
that builds a matching actor and critic) and ``policy.onnx`` (``export_policy_to_onnx``: input
``obs``, output ``actions``, the normaliser inside). ``rsl_rl_spec.yaml``
beside them is the spec ``import-policy`` reads: observation layout, joint
order and the action map that turns ``actions`` into joint commands (rsl_rl's
files hold the network only).
"""

from __future__ import annotations

import contextlib
import copy
import io
import pathlib

import numpy as np
from rsl_rl.env import VecEnv
from rsl_rl.runners import OnPolicyRunner
from tensordict import TensorDict
import torch
from unilab_bringup.prepare import task_info
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError
from unilab_interop.convert import ConvertError, rsl_cfg_for_bundle, rsl_states_from_bundle
from unilab_interop.rsl_import import task_layout
from unilab_policy.envelope import KEY as ENVELOPE_KEY
from unilab_policy.networks import load_trained
import yaml

#: Largest difference tolerated between rsl_rl's inference and ours on the check batch.
EXPORT_TOLERANCE = 1e-5


class ShapeEnv(VecEnv):
    """A VecEnv that only reports sizes: enough for rsl_rl to build and save a runner."""

    def __init__(self, obs_dim: int, num_actions: int):
        """Describe one env with ``obs_dim`` observations and ``num_actions`` actions."""
        self.num_envs, self.num_actions = 1, int(num_actions)
        self.max_episode_length = 1
        self.episode_length_buf = torch.zeros(1, dtype=torch.long)
        self.device, self.cfg = 'cpu', {}
        self._obs = torch.zeros(1, int(obs_dim))

    def get_observations(self) -> TensorDict:
        """Return zeros in the ``policy`` and ``critic`` groups."""
        return TensorDict({'policy': self._obs, 'critic': self._obs}, batch_size=[1])

    def step(self, actions):
        """Refuse: this environment cannot be stepped."""
        raise RuntimeError('ShapeEnv only describes sizes')


def runner_for(obs_dim: int, num_actions: int, cfg: dict) -> OnPolicyRunner:
    """Return rsl_rl's runner for the sizes, built quietly (it prints its models)."""
    with contextlib.redirect_stdout(io.StringIO()):
        return OnPolicyRunner(ShapeEnv(obs_dim, num_actions), cfg, log_dir=None, device='cpu')


def export_rsl(run_dir: str, out: str | None = None) -> dict:
    """Write rsl_rl's checkpoint, ONNX and the spec of ``run_dir``'s policy; return paths."""
    trained = load_trained(run_dir)
    p = trained.params
    if p.model.action_history:
        raise ConfigError(f'export --format rsl_rl: {run_dir} observes its last '
                          f'{p.model.action_history} actions (model.action_history); '
                          'rsl_rl\'s environments do not provide them')
    try:
        cfg = rsl_cfg_for_bundle(trained.bundle, p.model.activation)
    except ConvertError as exc:
        raise ConfigError(f'export --format rsl_rl: {run_dir}: {exc}') from None
    out_dir = pathlib.Path(out) if out else pathlib.Path(run_dir) / 'rsl_rl'
    out_dir.mkdir(parents=True, exist_ok=True)
    saved_cfg = copy.deepcopy(cfg)  # the runner resolves entries in place
    runner = runner_for(trained.input_dim, p.act_dim, cfg)
    actor, critic = rsl_states_from_bundle(trained.bundle)
    runner.alg.get_policy().load_state_dict(actor, strict=True)
    runner.alg.critic.load_state_dict(critic, strict=True)
    ckpt = torch.load(trained.checkpoint, map_location='cpu', weights_only=True)
    runner.current_learning_iteration = int(ckpt.get('updates', 0))
    model = out_dir / f'model_{runner.current_learning_iteration}.pt'
    runner.save(str(model), infos={'exported_from': 'unilab', 'run_dir': str(run_dir)})
    runner.export_policy_to_onnx(str(out_dir), 'policy.onnx')
    single_file_onnx(out_dir / 'policy.onnx')
    spec = out_dir / 'rsl_rl_spec.yaml'
    info, _ = task_info(p.run.task)
    atomic_write_text(spec, yaml.safe_dump(policy_spec(p, info, ckpt.get(ENVELOPE_KEY)),
                                           sort_keys=False))
    # The runner configuration whose actor and critic take these weights.
    train_cfg = out_dir / 'rsl_rl_train_cfg.yaml'
    atomic_write_text(train_cfg, yaml.safe_dump(saved_cfg, sort_keys=False))
    diff = check_same_actions(runner, trained.bundle, trained.input_dim)
    if not diff <= EXPORT_TOLERANCE:
        raise RuntimeError(f'rsl_rl\'s actor differs from ours by {diff:.2e} '
                           f'(> {EXPORT_TOLERANCE}); {model} is not trustworthy')
    return {'checkpoint': model, 'onnx': out_dir / 'policy.onnx', 'spec': spec,
            'train_cfg': train_cfg, 'diff': diff}


def single_file_onnx(path: pathlib.Path) -> None:
    """Fold the weights torch's exporter may write beside ``path`` (``.data``) into it."""
    import onnx
    data = path.with_name(path.name + '.data')
    if not data.exists():
        return
    model = onnx.load(str(path))  # reads the external data
    onnx.save_model(model, str(path), save_as_external_data=False)
    data.unlink()


def policy_spec(params, info, envelope: dict | None = None) -> dict:
    """
    Return the spec ``import-policy`` reads for a policy of ``params`` on task ``info``.

    ``envelope`` is the checkpoint's trained envelope: its joint range travels as the
    spec's ``joint_range`` (rsl_rl's files have no place for it).
    """
    m = params.model
    spec = {'task': info.name,
            'observation': [{'name': n, 'size': s} for n, s in task_layout(info)],
            'joint_names': list(info.joint_names), 'action_mode': m.action_mode,
            'action_scale': list(m.action_scale), 'action_offset': list(m.action_offset),
            'action_clip': max(0.0, m.action_clip), 'activation': m.activation}
    if envelope and 'joint_low' in envelope:
        spec['joint_range'] = {'low': list(envelope['joint_low']),
                               'high': list(envelope['joint_high'])}
    return spec


def check_same_actions(runner: OnPolicyRunner, bundle, obs_dim: int, n: int = 256,
                       seed: int = 0) -> float:
    """
    Return max |rsl_rl's deterministic actions - ours| on normal observations.

    The observations are drawn around the normaliser's mean within two of its
    standard deviations, where our clip (``normalization.clip``) does not act.
    """
    g = torch.Generator().manual_seed(seed)
    norm = bundle.obs_normalizer
    z = torch.randn(n, obs_dim, generator=g).clamp(-2.0, 2.0)
    obs = norm.mean + z * norm.std
    policy = runner.get_inference_policy('cpu')
    with torch.no_grad():
        theirs = policy(TensorDict({'policy': obs, 'critic': obs}, batch_size=[n]))
        ours = bundle(obs)
    return float(np.max(np.abs((theirs - ours).numpy())))
