# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab train --offline BAG...``: IQL and a BC baseline from bags, evaluated in simulation.

No ROS graph runs: the dataset comes from the bags, and evaluation steps the
task (``unilab_bridge.tasks.make_task``) through the same safety gate the
graph uses, with the deterministic (mean) action. The run directory looks
like an online one: ``config.yaml``, ``graph_params.yaml`` (the policy's
parameters, so ``unilab export`` works), ``metrics.csv``,
``checkpoints/{iql,bc,latest}.pt`` (latest = IQL) and ``summary.json``.
"""

from __future__ import annotations

import json
import math
import time

import numpy as np
import torch
from unilab_bag.dataset import build_dataset, HistorySpec
from unilab_bridge.tasks import make_task
from unilab_bringup.direct import make_gate
from unilab_bringup.graphs import POLICY, policy_params
from unilab_bringup.paths import default_config_files
from unilab_bringup.prepare import make_run_dir, task_info
from unilab_bringup.sim_loop import run_episodes, ZeroPolicy
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError, dump_config, load_run_config, RunConfig
from unilab_core.graph import Graph, holds_joint_positions
from unilab_policy.action_map import ActionMap
from unilab_policy.checkpoint import save_checkpoint
from unilab_policy.device import resolve_device
from unilab_policy.history import policy_input_dim
from unilab_policy.models import PolicyBundle
from unilab_policy.networks import bundle_from_params, make_actor
from unilab_policy.normalizer import EmpiricalNormalization
from unilab_policy.offline.bc import BehaviourCloning
from unilab_policy.offline.dataset import TransitionTensors
from unilab_policy.offline.iql import IQL
from unilab_policy.params import PolicyNodeParams
from unilab_policy.run_log import RunLog


def evaluate(cfg: RunConfig, info, bundle: PolicyBundle | None, gate, seed: int,
             device: torch.device) -> float:
    """
    Return the mean return of ``offline.eval_episodes`` episodes of ``bundle``'s mean action.

    ``bundle`` None scores the zero action. The policy acts through the deployed
    policy's actor (``mode: deploy``, action history kept as the policy node keeps
    it) and its commands pass ``gate`` (the limits the graph's safety node enforces).
    """
    off = cfg.offline
    with make_task(cfg.run.task, off.eval_envs, seed=seed) as task:
        if bundle is None:
            actor = ZeroPolicy(off.eval_envs, info.action_dim)
        else:
            actor = make_actor(policy_params(cfg, info, mode='deploy', num_envs=off.eval_envs),
                               device, bundle)
            actor.set_version(0)
        return float(np.mean(run_episodes(task, actor, gate, off.eval_episodes, seed)))


def _bundle(pp: PolicyNodeParams, norm: EmpiricalNormalization,
            device: torch.device) -> PolicyBundle:
    """Return a fresh network with the dataset's (frozen) observation statistics."""
    bundle = bundle_from_params(pp, device)
    bundle.obs_normalizer.load_state_dict(norm.state_dict())
    bundle.obs_normalizer.freeze()
    return bundle


def train_offline(bags: list[str], config_files: list[str] | None = None,
                  overrides: dict | None = None, run_dir: str | None = None,
                  log=print, allow_damaged: bool = False) -> dict:
    """
    Build the dataset, train IQL and BC, evaluate, write the run dir; return the summary.

    A damaged bag is refused (``BagDamagedError``) unless ``allow_damaged``: then
    the readable part is used, and what was lost is logged and kept in
    ``summary.json`` (``dataset.damaged``).
    """
    cfg = load_run_config(list(default_config_files()) + list(config_files or []), overrides)
    off = cfg.offline
    hist = cfg.model.action_history
    info, _ = task_info(cfg.run.task)
    # The network's input: the observation plus the policy's last `hist` commands.
    width = policy_input_dim(info.obs_dim, info.action_dim, hist)
    rd = make_run_dir(cfg.run.task, run_dir, 'offline')
    dump_config(cfg, rd / 'config.yaml')
    # The policy node's parameters, so ``unilab export`` and ``deploy`` rebuild the network.
    pp = policy_params(cfg, info)
    Graph('offline', (POLICY,), {'policy': pp}).write_params(rd / 'graph_params.yaml')

    t0 = time.monotonic()
    data = build_dataset(bags, off.dataset_source, info.joint_names, info.uses_joint_state,
                         HistorySpec(hist, info.action_low, info.action_high,
                                     holds_joint_positions(info)), allow_damaged,
                         # The action topic carries commands; the network learns actions.
                         action_map=ActionMap.of(pp.model, info.action_dim))
    stats = data.stats()
    for bag, d in data.damaged.items():
        log(f'unilab: warning: bag {bag} is damaged, training on its readable part: '
            f'{d["summary"]}')
    obs_w, act_w = data.arrays['obs'].shape[1], data.arrays['actions'].shape[1]
    if (obs_w, act_w) != (width, info.action_dim):
        extra = ''
        if off.dataset_source == 'rollout' and act_w == info.action_dim \
                and (obs_w - info.obs_dim) % info.action_dim == 0 and obs_w >= info.obs_dim:
            extra = (f'; the rollouts carry an action history of '
                     f'{(obs_w - info.obs_dim) // info.action_dim}: set model.action_history '
                     'to that (or use the sensors source)')
        raise ConfigError(f'run.task: bags hold obs {obs_w} / act {act_w}, task '
                          f'{info.name} with model.action_history {hist} needs obs {width} / '
                          f'act {info.action_dim}{extra}')
    log(f'unilab: offline dataset from {len(bags)} bag(s): {stats["transitions"]:,} '
        f'transitions, {stats["episodes"]} episodes, behaviour return '
        f'{stats["behaviour_return"]:.2f}; run dir {rd}')
    torch.set_num_threads(cfg.run.torch_threads)
    torch.manual_seed(cfg.run.seed)
    device = resolve_device(cfg.run.device)
    tensors = TransitionTensors.from_arrays(data.arrays, device)
    norm = EmpiricalNormalization(width, clip=cfg.normalization.clip).to(device)
    if cfg.normalization.observations:
        norm.update(tensors.obs)  # fitted once on the whole dataset, then frozen
    iql_bundle = _bundle(pp, norm, device)
    bc_bundle = _bundle(pp, norm, device)
    iql = IQL(iql_bundle, tuple(cfg.model.hidden_sizes), off.lr, cfg.advantage.gamma,
              off.expectile, off.beta, off.target_tau, cfg.model.activation)
    bc = BehaviourCloning(bc_bundle, off.lr)
    gen = torch.Generator(device=device).manual_seed(cfg.run.seed)

    def ev(bundle):
        return evaluate(cfg, info, bundle.eval(), make_gate(cfg, rd), cfg.run.seed + 1, device)

    zero_return = evaluate(cfg, info, None, make_gate(cfg, rd), cfg.run.seed + 1, device)
    runlog = RunLog(rd, tensorboard=cfg.logging.tensorboard)
    history: list[tuple[int, float, float]] = []
    train_s = 0.0
    try:
        for step in range(1, off.gradient_steps + 1):
            ts = time.monotonic()
            metrics = iql.update(tensors, off.batch_size, gen)
            metrics.update(bc.update(tensors, off.batch_size, gen))
            train_s += time.monotonic() - ts
            if step % off.eval_every == 0 or step == off.gradient_steps:
                iql_ret, bc_ret = ev(iql_bundle), ev(bc_bundle)
                iql_bundle.train()
                bc_bundle.train()
                history.append((step, iql_ret, bc_ret))
                metrics.update({'charts/iql_return': iql_ret, 'charts/bc_return': bc_ret,
                                'charts/grad_steps_per_s': step / max(train_s, 1e-9)})
                runlog.write(step, step * off.batch_size, metrics)
                log(f'unilab: step {step:,}/{off.gradient_steps:,}: IQL return {iql_ret:.2f}, '
                    f'BC return {bc_ret:.2f}')
    finally:
        runlog.close()
    ckpt = rd / 'checkpoints'
    for name, b in (('bc', bc_bundle), ('iql', iql_bundle)):
        save_checkpoint(ckpt / f'{name}.pt', {'bundle': b.state_dict(), 'algorithm': name,
                                              'gradient_steps': off.gradient_steps})
    save_checkpoint(ckpt / 'latest.pt', {'bundle': iql_bundle.state_dict(), 'algorithm': 'iql',
                                         'gradient_steps': off.gradient_steps})
    wall = time.monotonic() - t0
    beh = stats['behaviour_return']
    iql_ret, bc_ret = history[-1][1], history[-1][2]

    def normalized(r):  # D4RL-style score: 0 = zero action, 1 = behaviour policy
        span = beh - zero_return
        return (r - zero_return) / span if span > 0 else float('nan')

    summary = {
        'mode': 'offline', 'steps': off.gradient_steps, 'wall_s': round(wall, 3),
        'fps': round(off.gradient_steps / max(train_s, 1e-9), 1),
        'fps_unit': 'gradient steps/s (IQL + BC together)',
        'return_first': history[0][1], 'return_last': iql_ret,
        'checkpoint': str(ckpt / 'iql.pt'),
        'iql_return': iql_ret, 'bc_return': bc_ret, 'behaviour_return': beh,
        'zero_action_return': zero_return,
        'iql_over_behaviour': iql_ret / beh if beh > 0 else float('nan'),
        'iql_normalized': normalized(iql_ret), 'bc_normalized': normalized(bc_ret),
        'dataset': {**stats, 'source': data.source, 'bags': data.bags},
        'eval': {'envs': off.eval_envs, 'episodes': off.eval_episodes,
                 'seed': cfg.run.seed + 1, 'action': 'deterministic mean, safety-gated'},
        'history': [{'step': s, 'iql_return': a, 'bc_return': b} for s, a, b in history],
    }
    summary = {k: (None if isinstance(v, float) and math.isnan(v) else v)
               for k, v in summary.items()}
    atomic_write_text(rd / 'summary.json', json.dumps(summary, indent=2))
    return summary
