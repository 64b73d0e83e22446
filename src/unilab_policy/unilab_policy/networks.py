# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The one construction path of the policy network and of the PPO parameters.

Every consumer (policy and trainer nodes, the direct training loop, offline
training, evaluation, export, deployment and the benchmarks) builds the
actor-critic + normaliser bundle through :func:`build_bundle` and the PPO
hyper-parameters through :func:`ppo_params`, from the typed config sections.
A trained policy is rebuilt from its run directory with :func:`load_trained`:
the network description is the policy node's parameters in the run's
``graph_params.yaml`` (the graph wrote them), the weights are the checkpoint.
"""

from __future__ import annotations

import dataclasses
import pathlib

import torch
from unilab_core.config import (AdvantageSection, ConfigError, ModelSection,
                                NormalizationSection, PolicyUpdateSection, RolloutSection)
from unilab_core.errors import one_line, yaml_error
from unilab_core.graph import model_parameters

from unilab_policy import distributed
from unilab_policy.action_map import ActionMap
from unilab_policy.actor import PolicyActor
from unilab_policy.checkpoint import load_checkpoint, restoring
from unilab_policy.envelope import TrainedEnvelope
from unilab_policy.history import policy_input_dim
from unilab_policy.models import make_actor_critic, PolicyBundle
from unilab_policy.normalizer import EmpiricalNormalization
from unilab_policy.params import PolicyNetParams, PolicyNodeParams, TrainerNodeParams
from unilab_policy.ppo import num_mini_batches_for, PPOParams
from unilab_policy.reward_scale import RewardScaler
from unilab_policy.trainer import Trainer


def build_bundle(obs_dim: int, act_dim: int, model: ModelSection,
                 normalization: NormalizationSection, device: torch.device | str = 'cpu',
                 seed: int | None = None) -> PolicyBundle:
    """
    Return the actor-critic + observation normaliser for an ``obs_dim`` observation.

    The network's input is the observation plus ``model.action_history`` past
    actions (``history.policy_input_dim``). With ``seed`` the global torch RNG
    is seeded first, so two builds with one seed start from the same weights
    (the policy and trainer nodes rely on it).
    """
    if seed is not None:
        torch.manual_seed(seed)
    width = policy_input_dim(obs_dim, act_dim, model.action_history)
    ac = make_actor_critic(width, act_dim, model)
    norm = EmpiricalNormalization(width, clip=normalization.clip)
    return PolicyBundle(ac, norm).to(device)


def bundle_from_params(p: PolicyNetParams, device: torch.device | str = 'cpu',
                       seed: int | None = None) -> PolicyBundle:
    """Return the bundle a node's parameters describe (``build_bundle`` of their sections)."""
    return build_bundle(p.obs_dim, p.act_dim, p.model, p.normalization, device, seed)


def ppo_params(update: PolicyUpdateSection, advantage: AdvantageSection,
               rollout: RolloutSection, ranks: int = 1) -> PPOParams:
    """
    Return the PPO parameters of the config sections (minibatch count from the size).

    ``update.batch_size`` is the minibatch over all ``ranks``: each rank splits its
    own rollout into as many minibatches as one rank with all ranks' envs would,
    so K ranks of N envs take the same gradient steps, each averaged over the
    same number of rows, as one rank of K N envs.
    """
    return PPOParams(update=update, advantage=advantage,
                     num_mini_batches=num_mini_batches_for(
                         update.batch_size, rollout.rollout_length,
                         rollout.num_envs * max(1, int(ranks))))


def make_actor(p: PolicyNodeParams, device: torch.device | str,
               bundle: PolicyBundle | None = None, log=print) -> PolicyActor:
    """Return the policy node's actor for its parameters (a new seeded bundle by default)."""
    device = torch.device(device)
    if bundle is None:
        bundle = bundle_from_params(p, device, seed=p.run.seed)
    return PolicyActor(bundle.eval(), p.rollout.num_envs, p.act_dim, mode=p.mode,
                       action_map=ActionMap.of(p.model, p.act_dim),
                       rollout_length=p.rollout.rollout_length,
                       chunk_length=p.rollout.chunk_length,
                       action_history=p.model.action_history, action_low=p.action_low,
                       action_high=p.action_high, history_fill=p.action_history_fill,
                       device=device, graph_capture=p.gpu.graph_capture,
                       runtime=resolve_runtime(p.runtime, p.mode, device), log=log)


def resolve_runtime(runtime: str, mode: str, device: torch.device) -> str:
    """Return the actor's runtime: ``auto`` is onnx for a deployed policy on a CPU."""
    if runtime != 'auto':
        return runtime
    return 'onnx' if mode == 'deploy' and device.type == 'cpu' else 'torch'


def make_trainer(p: TrainerNodeParams, device: torch.device,
                 bundle: PolicyBundle | None = None) -> Trainer:
    """Return the trainer node's core for its parameters (a new seeded bundle by default)."""
    if bundle is None:
        bundle = bundle_from_params(p, device, seed=p.run.seed)
    return Trainer(bundle, ppo_params(p.policy_update, p.advantage, p.rollout,
                                      distributed.world_size()),
                   p.rollout.rollout_length, p.rollout.num_envs, device, p.run_dir,
                   p.run.total_steps, p.logging.checkpoint_every, p.logging.tensorboard,
                   normalize_obs=p.normalization.observations,
                   reward_scaler=RewardScaler(p.rollout.num_envs, p.advantage.gamma,
                                              p.normalization.reward_clip)
                   if p.normalization.rewards else None,
                   envelope=TrainedEnvelope(p.envelope_joints, p.workspace, p.workspace_frame)
                   if p.envelope_joints else None)


@dataclasses.dataclass(frozen=True)
class TrainedPolicy:
    """A trained bundle with the description it was built from."""

    bundle: PolicyBundle
    params: PolicyNodeParams
    checkpoint: pathlib.Path

    @property
    def input_dim(self) -> int:
        """Return the network's input width (observation plus action history)."""
        return self.bundle.actor_critic.obs_dim


def run_policy_params(run_dir: str | pathlib.Path) -> PolicyNodeParams:
    """Return the policy node's parameters a run was trained with (its graph_params.yaml)."""
    import yaml
    path = pathlib.Path(run_dir) / 'graph_params.yaml'
    if not path.is_file():
        raise ConfigError(f'{run_dir}: not a run directory (no graph_params.yaml)')
    try:
        data = yaml.safe_load(path.read_text()) or {}
        return PolicyNodeParams.model_validate(
            upgrade_policy_params(data['policy']['ros__parameters']))
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_error(path, exc)) from None
    except (UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f'{path}: no valid policy parameters ({one_line(exc)})') from None


#: Flat policy parameters of run directories written before the typed node parameters,
#: and the section each moved into.
_LEGACY_KEYS = {'device': 'run', 'torch_threads': 'run', 'seed': 'run', 'num_envs': 'rollout',
                'chunk_length': 'rollout', 'rollout_length': 'rollout'}


def upgrade_policy_params(params: dict) -> dict:
    """Return older runs' (or exported models') policy parameters in today's layout."""
    params = model_parameters(params)
    for key, section in _LEGACY_KEYS.items():
        if key in params:
            params.setdefault(section, {})[key] = params.pop(key)
    # Runs from before model.action_mode acted in absolute commands.
    params.setdefault('model', {}).setdefault('action_mode', 'absolute')
    return params


def checkpoint_of(path: str | pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """Return ``(run_dir, checkpoint)`` for a run directory or a checkpoint inside one."""
    path = pathlib.Path(path)
    if path.is_dir():
        return path, path / 'checkpoints' / 'latest.pt'
    return path.parent.parent, path


def load_trained(path: str | pathlib.Path,
                 device: torch.device | str = 'cpu') -> TrainedPolicy:
    """
    Rebuild a trained policy from a run directory (``latest.pt``) or one of its checkpoints.

    Raises ConfigError for a directory that is not a run, FileNotFoundError for a
    missing checkpoint and ``CheckpointError`` for an unreadable one.
    """
    run_dir, ckpt = checkpoint_of(path)
    params = run_policy_params(run_dir)
    if not ckpt.is_file():
        raise ConfigError(f'{run_dir}: no checkpoint {ckpt.name} in {ckpt.parent}')
    bundle = bundle_from_params(params, device)
    state = load_checkpoint(ckpt, map_location=device, required=('bundle',))
    with restoring(ckpt):  # a checkpoint of another network: one line naming it
        bundle.load_state_dict(state['bundle'])
    return TrainedPolicy(bundle.eval(), params, ckpt)


def load_weights_file(actor: PolicyActor, path: str | pathlib.Path) -> str:
    """
    Give a deploy-mode actor the weights of ``path``; return what was loaded.

    A run directory or checkpoint loads into the actor's network (its shape must
    match); an exported model (``.onnx``, TorchScript) replaces the actor's
    inference. Raises ConfigError / ValueError with the reason.
    """
    from unilab_policy.exported_inference import ExportedPolicy, is_exported
    path = pathlib.Path(path)
    if is_exported(path):
        if actor.mode != 'deploy':
            # An exported model has no sampling and no value head: nothing to learn from.
            raise ConfigError(f'{path}: an exported model acts only in deploy mode (mode '
                              f'{actor.mode} samples actions: give a run directory or a '
                              'checkpoint)')
        actor.inference = ExportedPolicy(path, actor.num_envs, actor.input_dim)
        actor.set_version(0)
        return f'exported model {path}'
    trained = load_trained(path, actor.device)
    try:
        actor.bundle.load_state_dict(trained.bundle.state_dict())
    except RuntimeError as exc:
        raise ConfigError(f'{path}: does not fit this policy ({str(exc).splitlines()[0]})') \
            from None
    actor.set_version(0)
    how = ' (exported in memory, onnxruntime)' if getattr(actor.inference, 'onnx_active',
                                                          False) else ''
    return f'checkpoint {trained.checkpoint}{how}'
