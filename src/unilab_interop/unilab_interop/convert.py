# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Weights between rsl_rl's ``MLPModel`` actor/critic and UniLab's ``PolicyBundle``.

Both are plain MLPs of ``nn.Linear`` and activations indexed alike
(``rsl_rl.modules.MLP`` and ``unilab_policy.models.make_mlp``: layer ``2 i`` is
the i-th Linear), so weights copy one to one: ``mlp.<k>.*`` <->
``actor_critic.actor.<k>.*`` (critic alike). What differs:

- the exploration std: ours is ``exp(log_std)``, rsl_rl's ``std_type: log``
  keeps the same parameter as ``distribution.log_std_param``; its ``scalar``
  type (the default) keeps ``std_param`` = std, converted with a log;
- the observation normaliser: rsl_rl's ``EmpiricalNormalization`` computes
  ``(x - mean) / (std + 0.01)`` and does not clip; ours computes
  ``clip((x - mean) / sqrt(var + 1e-8), +-clip)``. An rsl_rl normaliser becomes
  ours with ``var = (std + 0.01)^2 - 1e-8`` (identity when it had none) and a
  clip so wide it never acts (``IMPORT_CLIP``); ours becomes rsl_rl's with
  ``std = sqrt(var + 1e-8) - 0.01``. Ours clips where rsl_rl's cannot: an
  exported UniLab policy acts identically on every observation within
  ``normalization.clip`` standard deviations of the training mean (the
  observations it was trained on) and differs beyond.
"""

from __future__ import annotations

import copy

import torch
from unilab_policy.models import PolicyBundle
from unilab_policy.ppo import num_mini_batches_for

#: rsl_rl's EmpiricalNormalization eps (added to the std) and ours (added to the variance).
RSL_NORM_EPS, OUR_NORM_EPS = 1e-2, 1e-8
#: ``normalization.clip`` of an imported policy: rsl_rl does not clip normalised inputs.
IMPORT_CLIP = 1e6
#: rsl_rl's activations that UniLab's networks have too.
ACTIVATIONS = ('elu', 'relu', 'tanh', 'gelu')

#: rsl_rl 5.x runner configuration with the library's published defaults (its
#: ``config/example_config.yaml`` and the PPO / MLPModel / GaussianDistribution
#: signatures): 24 steps per env and iteration, 5 epochs of 4 minibatches, lr 1e-3
#: with the adaptive KL schedule (desired_kl 0.01), gamma 0.99, lambda 0.95, entropy
#: 0.01, clip 0.2, value loss 1.0, grad norm 1.0; 3 x 256 ELU actor and critic, std 1.0.
RSL_DEFAULTS = {
    'class_name': 'OnPolicyRunner',
    'num_steps_per_env': 24,
    'save_interval': 50,
    'obs_groups': {'actor': ['policy'], 'critic': ['critic']},
    'logger': 'tensorboard',
    'actor': {'class_name': 'MLPModel', 'hidden_dims': [256, 256, 256],
              'activation': 'elu', 'obs_normalization': False,
              'distribution_cfg': {'class_name': 'GaussianDistribution', 'init_std': 1.0,
                                   'std_type': 'scalar'}},
    'critic': {'class_name': 'MLPModel', 'hidden_dims': [256, 256, 256],
               'activation': 'elu', 'obs_normalization': False},
    'algorithm': {'class_name': 'PPO', 'learning_rate': 1e-3, 'num_learning_epochs': 5,
                  'num_mini_batches': 4, 'schedule': 'adaptive', 'value_loss_coef': 1.0,
                  'clip_param': 0.2, 'use_clipped_value_loss': True, 'desired_kl': 0.01,
                  'entropy_coef': 0.01, 'gamma': 0.99, 'lam': 0.95, 'max_grad_norm': 1.0,
                  'normalize_advantage_per_mini_batch': False, 'rnd_cfg': None,
                  'symmetry_cfg': None},
}


def rsl_train_cfg(**updates) -> dict:
    """Return a copy of RSL_DEFAULTS with top-level ``updates``."""
    cfg = copy.deepcopy(RSL_DEFAULTS)
    cfg.update(updates)
    return cfg


def rsl_cfg_like(cfg) -> dict:
    """
    Return rsl_rl's runner configuration with our PPO's settings (a RunConfig's sections).

    Everything both libraries have is set to ours: rollout length, minibatch count
    (``unilab_policy.ppo.num_mini_batches_for``), epochs, learning rate and its
    schedule, clips, loss weights, gamma / lambda, the network (widths,
    activation, initial std as a log-std) and observation normalisation. What stays
    rsl_rl's: its initialisation, its normaliser (no clip) and its update code.
    """
    m, u, a, r = cfg.model, cfg.policy_update, cfg.advantage, cfg.rollout
    net = {'class_name': 'MLPModel', 'hidden_dims': list(m.hidden_sizes),
           'activation': m.activation, 'obs_normalization': bool(cfg.normalization.observations)}
    out = rsl_train_cfg(num_steps_per_env=int(r.rollout_length))
    out['actor'] = {**net, 'distribution_cfg': {'class_name': 'GaussianDistribution',
                                                'init_std': float(m.init_noise_std),
                                                'std_type': 'log'}}
    out['critic'] = dict(net)
    out['algorithm'].update({
        'learning_rate': u.lr, 'num_learning_epochs': u.epochs,
        'num_mini_batches': num_mini_batches_for(u.batch_size, r.rollout_length, r.num_envs),
        'schedule': u.schedule, 'desired_kl': u.desired_kl, 'clip_param': u.clip_param,
        'use_clipped_value_loss': u.clipped_value_loss, 'value_loss_coef': u.value_loss_coef,
        'entropy_coef': u.entropy_coef, 'max_grad_norm': u.max_grad_norm,
        'gamma': a.gamma, 'lam': a.gae_lambda})
    return out


class ConvertError(ValueError):
    """A network that cannot cross between rsl_rl and UniLab (the message names why)."""


def _linear_keys(state: dict, prefix: str) -> list[int]:
    """Return the indices ``k`` of ``<prefix><k>.weight`` in order."""
    out = []
    for key in state:
        if key.startswith(prefix) and key.endswith('.weight'):
            idx = key[len(prefix):-len('.weight')]
            if idx.isdigit():
                out.append(int(idx))
    return sorted(out)


def mlp_shape(state: dict, prefix: str) -> tuple[int, list[int], int]:
    """Return (input width, hidden widths, output width) of the MLP under ``prefix``."""
    idx = _linear_keys(state, prefix)
    if not idx:
        raise ConvertError(f'no `{prefix}<k>.weight` layers (keys: {sorted(state)[:8]} ...)')
    if idx != list(range(0, 2 * len(idx), 2)):
        raise ConvertError(f'`{prefix}*` is not a Linear/activation stack (layers {idx})')
    shapes = [tuple(state[f'{prefix}{k}.weight'].shape) for k in idx]
    for (o, _), (_, i) in zip(shapes, shapes[1:]):
        if o != i:
            raise ConvertError(f'`{prefix}*` layer widths do not chain: {shapes}')
    return shapes[0][1], [s[0] for s in shapes[:-1]], shapes[-1][0]


def _log_std(actor_state: dict) -> torch.Tensor | None:
    """Return the actor's Gaussian log-std, or None (an exported policy keeps no std)."""
    if 'distribution.log_std_param' in actor_state:
        return actor_state['distribution.log_std_param'].detach().clone().float()
    if 'distribution.std_param' in actor_state:
        return torch.log(actor_state['distribution.std_param'].detach().float().clamp_min(1e-6))
    return None


def rsl_normaliser(state: dict, width: int) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Return (mean, std) of an rsl_rl model's normaliser, or None when it has none."""
    if 'obs_normalizer._mean' not in state:
        return None
    mean = state['obs_normalizer._mean'].reshape(-1).float()
    std = state['obs_normalizer._std'].reshape(-1).float()
    if mean.numel() != width or std.numel() != width:
        raise ConvertError(f'normaliser of {mean.numel()} values for a {width}-wide input')
    return mean, std


def bundle_state_from_rsl(actor_state: dict, critic_state: dict | None,
                          bundle: PolicyBundle) -> dict:
    """
    Return ``bundle``'s state dict holding rsl_rl's actor (and critic, when given).

    ``bundle`` must have the same layer widths (build it from ``mlp_shape``);
    a missing critic keeps the bundle's own (an exported policy has none).
    """
    out = {k: v.clone() for k, v in bundle.state_dict().items()}
    width = bundle.actor_critic.obs_dim
    for name, state in (('actor', actor_state), ('critic', critic_state)):
        if state is None:
            continue
        for k in _linear_keys(state, 'mlp.'):
            for p in ('weight', 'bias'):
                ours = f'actor_critic.{name}.{k}.{p}'
                theirs = state[f'mlp.{k}.{p}']
                if ours not in out or out[ours].shape != theirs.shape:
                    raise ConvertError(f'{name} layer {k} {p}: rsl_rl has '
                                       f'{tuple(theirs.shape)}, the UniLab network '
                                       f'{tuple(out[ours].shape) if ours in out else "none"}')
                out[ours] = theirs.detach().clone().float()
    log_std = _log_std(actor_state)
    if log_std is not None:  # else the bundle's initial std (model.init_noise_std)
        if log_std.shape != out['actor_critic.log_std'].shape:
            raise ConvertError(f'the actor\'s std has {tuple(log_std.shape)} values for '
                               f'{out["actor_critic.log_std"].numel()} actions (only '
                               'GaussianDistribution actors convert)')
        out['actor_critic.log_std'] = log_std
    keep = getattr(bundle.actor_critic.actor, 'keep', None)  # model.critic_only
    norm = rsl_normaliser(actor_state, width if keep is None else len(keep))
    mean, std = torch.zeros(width), torch.full((width,), 0.99)
    if norm is not None:  # the actor's columns; the critic's own ones stay as they are
        cols = slice(None) if keep is None else keep
        mean[cols], std[cols] = norm
    # (x - mean) / sqrt(var + 1e-8) == (x - mean) / (std + 0.01)
    out['obs_normalizer.mean'] = mean
    out['obs_normalizer.var'] = (std + RSL_NORM_EPS).square() - OUR_NORM_EPS
    out['obs_normalizer.count'] = torch.tensor(
        int(actor_state.get('obs_normalizer.count', torch.tensor(0))), dtype=torch.long)
    return out


def rsl_states_from_bundle(bundle: PolicyBundle) -> tuple[dict, dict]:
    """Return rsl_rl ``(actor_state_dict, critic_state_dict)`` of a UniLab bundle."""
    ac, norm = bundle.actor_critic, bundle.obs_normalizer
    std = torch.sqrt(norm.var.float() + OUR_NORM_EPS) - RSL_NORM_EPS
    normaliser = {'obs_normalizer._mean': norm.mean.float().reshape(1, -1).clone(),
                  'obs_normalizer._var': std.square().reshape(1, -1),
                  'obs_normalizer._std': std.reshape(1, -1),
                  'obs_normalizer.count': norm.count.clone()}
    states = []
    for net in (ac.actor, ac.critic):
        state = dict(normaliser)
        for k, layer in enumerate(net):
            if isinstance(layer, torch.nn.Linear):
                state[f'mlp.{k}.weight'] = layer.weight.detach().clone()
                state[f'mlp.{k}.bias'] = layer.bias.detach().clone()
        states.append(state)
    states[0]['distribution.log_std_param'] = ac.log_std.detach().clone()
    return states[0], states[1]


def rsl_cfg_for_bundle(bundle: PolicyBundle, activation: str) -> dict:
    """Return the runner configuration whose actor/critic take ``bundle``'s weights."""
    ac = bundle.actor_critic
    if ac.grid_input:
        raise ConvertError('a policy with a grid encoder (model.grid_input) has no rsl_rl '
                           'MLPModel counterpart')
    if ac.critic_only:
        # rsl_rl's actor would need its own observation group without these columns and a
        # normaliser of that width: not written, so refused rather than exported wrong.
        raise ConvertError(f'a policy whose critic alone reads columns {list(ac.critic_only)} '
                           '(model.critic_only, e.g. go2_walk) has no rsl_rl export yet')
    hidden = [m.out_features for m in ac.actor if isinstance(m, torch.nn.Linear)][:-1]
    critic_hidden = [m.out_features for m in ac.critic if isinstance(m, torch.nn.Linear)][:-1]
    cfg = rsl_train_cfg()
    cfg['actor'] = {'class_name': 'MLPModel', 'hidden_dims': hidden, 'activation': activation,
                    'obs_normalization': True,
                    'distribution_cfg': {'class_name': 'GaussianDistribution',
                                         'init_std': 1.0, 'std_type': 'log'}}
    cfg['critic'] = {'class_name': 'MLPModel', 'hidden_dims': critic_hidden,
                     'activation': activation, 'obs_normalization': True}
    return cfg
