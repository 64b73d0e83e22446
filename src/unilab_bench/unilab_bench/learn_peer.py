# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench learn --peer rsl_rl --subset arm6|quad|quad12|go2``: rsl_rl's PPO beside ours.

Per seed, on the same task, env count, env-step budget and seed:

- ours: the direct training loop (``unilab_bringup.direct.train_direct``: the graph's
  components in one process, the default configuration);
- rsl_rl: its ``OnPolicyRunner`` over our task as an rsl_rl VecEnv
  (``unilab_interop.vecenv``: our action map and safety gate in the loop), with
  the library's published defaults (``--peer rsl_rl``,
  ``unilab_interop.convert.RSL_DEFAULTS``) or with our PPO's settings
  (``--peer rsl_rl_our_settings``, ``convert.rsl_cfg_like``).

Both trained policies are then scored by one evaluation: rsl_rl's checkpoint
is imported into a UniLab run directory (``unilab import-policy rsl_rl``) and
both act deterministically through the gate on the same episodes
(``unilab_bringup.evaluation``; arm6: the return and reach success of ``bench learn``'s
arm6 subset; quadrupeds: velocity tracking under ``learn_quad.QUAD_COMMANDS``, the Go2
under ``learn_quad.GO2_COMMANDS``). Finished runs in ``--run-root`` (ours: its
``summary.json``; rsl_rl's: ``train_rsl``'s) are scored again instead of trained again.
"""

from __future__ import annotations

import json
import pathlib
import time

from unilab_bench.learn_quad import default_steps, GO2_COMMANDS, GO2_KEYS, score_quad
from unilab_bench.learn_runs import mean_std
from unilab_bringup.direct import train_direct
from unilab_bringup.paths import training_config
from unilab_core.atomic import atomic_write_text
from unilab_interop.convert import rsl_cfg_like, rsl_train_cfg
from unilab_interop.rsl_import import import_rsl
from unilab_interop.rsl_train import finished_rsl, train_rsl
from unilab_policy.networks import load_trained
import yaml

#: --peer -> the runner configuration of rsl_rl's side: its published defaults, or our
#: PPO's settings (``convert.rsl_cfg_like``: then only the implementations differ).
PEERS = {'rsl_rl': lambda cfg: rsl_train_cfg(), 'rsl_rl_our_settings': rsl_cfg_like}
#: --subset -> task the peer comparison runs on.
PEER_TASKS = {'arm6': 'arm6_reach', 'quad': 'quad_walk', 'quad12': 'quad12_walk',
              'go2': 'go2_walk'}


def _ours(task: str, seed: int, steps: int, rd: pathlib.Path) -> dict:
    cfg = training_config([], {'run.task': task, 'run.seed': seed, 'run.total_steps': steps,
                               'logging.tensorboard': False, 'logging.progress': False})
    done = rd / 'summary.json'
    if done.is_file():  # a finished run in --run-root: scored again, not trained again
        summary = json.loads(done.read_text())
        return {'cfg': cfg, 'wall_s': summary.get('wall_s'), 'env_steps': summary.get('steps'),
                'fps': summary.get('fps'), 'train_return_last': summary.get('return_last'),
                'reused': True}
    t0 = time.monotonic()
    summary = train_direct(cfg, rd)
    summary['wall_s'] = round(time.monotonic() - t0, 1)
    atomic_write_text(done, json.dumps(summary, indent=2))  # as `unilab train --direct`
    return {'cfg': cfg, 'wall_s': summary['wall_s'],
            'env_steps': summary.get('steps'), 'fps': summary.get('fps'),
            'train_return_last': summary.get('return_last')}


def _evaluate(task: str, cfg, rd: pathlib.Path, score) -> dict:
    """Return the deterministic evaluation of the run in ``rd`` (one protocol for both)."""
    if task == 'arm6_reach':
        ev = score(cfg, rd, task)
        return {'eval_return': ev['return'], 'eval_success': ev['success'],
                'eval_clamp_share': ev['clamp_share'],
                'eval_tool_speed_p99_mps': ev.get('tool_speed_p99_mps')}
    ev = score_quad(cfg, rd, task)
    return {'eval_' + name: fig for name, fig in ev.items()}


def rsl_peer(subset: str, seeds, steps, root: pathlib.Path, score,
             peer: str = 'rsl_rl') -> dict:
    """Train ours and rsl_rl's PPO (``PEERS[peer]``) per seed; score both alike."""
    task = PEER_TASKS[subset]
    steps = steps or (default_steps(task) if subset != 'arm6' else
                      training_config([], {'run.task': task}).run.total_steps)
    per_seed = {}
    for seed in seeds:
        rd_ours, rd_rsl = root / f'unilab_{task}_s{seed}', root / f'rsl_rl_{task}_s{seed}'
        ours = _ours(task, seed, steps, rd_ours)
        side = finished_rsl(rd_rsl)
        if side is None:
            side = train_rsl(task, seed, steps, rd_rsl, train_cfg=PEERS[peer](ours['cfg']))
        else:
            side = {**side, 'reused': True}
        # The network's input as ours: the last commands at its end when the task trains
        # with them, privileged columns the actor does not read (as the trained run says).
        model = load_trained(rd_ours).params.model
        spec = rd_rsl / 'import_spec.yaml'
        spec.write_text(yaml.safe_dump({'action_history': model.action_history,
                                        'critic_only': list(model.critic_only)}))
        imported = import_rsl(side['checkpoint'], task, spec_path=str(spec),
                              run_dir=str(rd_rsl / 'imported'))
        per_seed[seed] = {
            'unilab': {'run_dir': str(rd_ours), **{k: v for k, v in ours.items() if k != 'cfg'},
                       **_evaluate(task, ours['cfg'], rd_ours, score)},
            'rsl_rl': {'run_dir': str(imported), **side,
                       **_evaluate(task, ours['cfg'], imported, score)}}
    out = {'task': task, 'steps': steps, 'peer': peer,
           'rsl_rl_cfg': PEERS[peer](training_config([], {'run.task': task})),
           'per_seed': per_seed,
           '_curves': {}, '_expert_line': None}
    if task == 'arm6_reach':
        keys = ('eval_return', 'eval_success', 'eval_clamp_share', 'wall_s', 'fps')
        for who in ('unilab', 'rsl_rl'):
            out[who] = {k: mean_std([s[who][k] for s in per_seed.values()]) for k in keys}
        out['rsl_rl_minus_unilab_return'] = round(
            out['rsl_rl']['eval_return']['mean'] - out['unilab']['eval_return']['mean'], 3)
    else:
        names, keys = ('vx0.5', 'random'), ('vx_error', 'survival', 'return')
        if task == 'go2_walk':
            names, keys = tuple(GO2_COMMANDS), GO2_KEYS
        for who in ('unilab', 'rsl_rl'):
            out[who] = {f'{name}_{k}': mean_std([s[who][f'eval_{name}'][k]
                                                 for s in per_seed.values()])
                        for name in names for k in keys}
            out[who]['wall_s'] = mean_std([s[who]['wall_s'] for s in per_seed.values()])
    return out
