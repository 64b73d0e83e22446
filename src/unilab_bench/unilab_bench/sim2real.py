# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench sim2real``: does disturbance injection make a policy survive a "real" robot.

Trains the arm task twice with the direct (in-process) training path, same seed, budget
and network (the ``config/sim2real.yaml`` preset: the policy also sees its last 3
actions): (a) with the preset's disturbances off, (b) with them on. Both policies are then
evaluated deterministically (action = policy mean, through the same safety gate) on the
nominal model and on a held-out "real" variant (``REAL_VARIANT``): heavier links and
other friction than (b) was trained on, 1-3 control steps of command delay, an IMU bias
random walk and 1% packet loss each way, with an evaluation seed no training used.
Reports returns and the retention ratio real/nominal per policy; the target is that (b)
keeps >= 90% while (a) loses more.

Because a return ratio depends on the reward's offset (a frozen arm scores about -45, not
0), each variant is also scored by the zero action, giving ``retention_normalized`` =
(real - zero_real) / (nominal - zero_nominal), and by reach success: the share of episodes
whose final tool-to-target distance is below ``SUCCESS_M`` (the seed reports success rates).

One training seed says little about a training recipe: ``--seeds 0,1,2`` trains the pair
once per seed and reports each seed under ``per_seed`` plus the mean and minimum of every
headline figure; the target is then judged on the seed means of the returns.
``--png FILE`` draws returns and success per seed and policy, nominal vs real.
"""

from __future__ import annotations

import tempfile
import time

import numpy as np
from unilab_bridge.variants import REAL_VARIANT
from unilab_bringup.paths import config_dir, default_config_files
from unilab_core.config import load_run_config

TASK = 'arm6_reach'
DEFAULT_STEPS = 1_500_000
EVAL_SEED = 10_007  # no training run uses it (training seeds are run.seed)
EVAL_EPISODES_PER_ENV = 2

#: (b)'s training profile, also shipped for users: ``bin/unilab train --config
#: config/sim2real.yaml`` (disturbances on, command delay 0-3 steps, masses x0.8-1.2, 2 %
#: packet loss each way, the policy's last 3 actions in its observation).
PRESET = 'sim2real.yaml'


def _config(steps: int, seed: int, num_envs: int | None, injection: bool):
    """Return (a)'s or (b)'s run config: the preset, with its disturbances on or off."""
    overrides = {'run.task': TASK, 'run.total_steps': steps, 'run.seed': seed,
                 'logging.tensorboard': False, 'logging.progress': False,
                 'disturbances.enabled': bool(injection)}
    if num_envs:
        overrides['rollout.num_envs'] = num_envs
    # Both policies get the same network (action history included); only (b) trains with
    # the disturbances.
    return load_run_config(list(default_config_files()) + [config_dir() / PRESET], overrides)


def evaluate(bundle, cfg, run_dir: str, variant: dict | None, num_envs: int,
             seed: int = EVAL_SEED, episodes_per_env: int = EVAL_EPISODES_PER_ENV) -> dict:
    """Return return / success figures of ``bundle`` on a variant (``evaluate_policy``)."""
    from unilab_bringup.evaluation import evaluate_policy
    return evaluate_policy(cfg, bundle, TASK, run_dir, variant, num_envs, seed,
                           episodes_per_env)


def _train_pair(steps: int, seed: int, num_envs: int | None, tmp: str, zero: dict) -> dict:
    """Train and evaluate (a) and (b) for one training seed."""
    from unilab_bringup.direct import train_direct
    from unilab_policy.networks import load_trained
    out = {}
    for label, injection in (('nominal_trained', False), ('injection_trained', True)):
        cfg = _config(steps, seed, num_envs, injection)
        run_dir = f'{tmp}/{label}_s{seed}'
        t0 = time.monotonic()
        summary = train_direct(cfg, run_dir)
        bundle = load_trained(run_dir).bundle
        n = cfg.rollout.num_envs
        nominal = evaluate(bundle, cfg, run_dir, None, n)
        real = evaluate(bundle, cfg, run_dir, REAL_VARIANT, n)
        out[label] = {
            'train_s': round(time.monotonic() - t0, 1),
            'train_fps': round(float(summary['fps']), 1),
            'train_return_last': summary['return_last'],
            'eval_nominal': nominal, 'eval_real': real,
            'retention': round(real['return'] / nominal['return'], 4)
            if nominal['return'] > 0 else None,
            'retention_normalized': round(
                (real['return'] - zero['real']['return'])
                / (nominal['return'] - zero['nominal']['return']), 3),
        }
    return out


def _headline(res: dict) -> dict:
    """Return the flat figures of one seed's (a)/(b) pair."""
    a, b = res['nominal_trained'], res['injection_trained']
    return {
        'retention_nominal_trained': a['retention'],
        'retention_injection_trained': b['retention'],
        'retention_normalized_nominal_trained': a['retention_normalized'],
        'retention_normalized_injection_trained': b['retention_normalized'],
        'return_real_nominal_trained': a['eval_real']['return'],
        'return_real_injection_trained': b['eval_real']['return'],
        'success_real_nominal_trained': a['eval_real']['success'],
        'success_real_injection_trained': b['eval_real']['success'],
        'success_nominal_injection_trained': b['eval_nominal']['success'],
    }


def bench_sim2real(args) -> dict:
    """Train nominal vs with injection; evaluate both on nominal and on the real variant."""
    steps = args.steps or DEFAULT_STEPS
    seeds = ([int(x) for x in str(args.seeds).split(',') if x.strip()]
             if getattr(args, 'seeds', None) else [args.seed])
    out = {'benchmark': 'sim2real', 'task': TASK, 'train_steps_per_policy': steps,
           'seed': seeds[0] if len(seeds) == 1 else seeds, 'eval_seed': EVAL_SEED,
           'real_variant': REAL_VARIANT}
    with tempfile.TemporaryDirectory() as tmp:
        cfg0 = _config(steps, seeds[0], args.num_envs, False)
        d = cfg0.disturbances
        out['train_preset'] = f'config/{PRESET}'
        out['train_injection'] = {'actuator_delay_steps': list(d.actuator.delay_steps),
                                  'mass_scale': list(d.dynamics.mass_scale),
                                  'action_drop_prob': d.network.action_drop_prob,
                                  'observation_drop_prob': d.network.observation_drop_prob}
        out['train_ppo'] = {'lr': cfg0.policy_update.lr,
                            'schedule': cfg0.policy_update.schedule}
        out['action_history'] = cfg0.model.action_history
        n0 = cfg0.rollout.num_envs
        zero = {'nominal': evaluate(None, cfg0, f'{tmp}/zero', None, n0),
                'real': evaluate(None, cfg0, f'{tmp}/zero', REAL_VARIANT, n0)}
        out['zero_action'] = zero
        per_seed = {seed: _train_pair(steps, seed, args.num_envs, tmp, zero) for seed in seeds}
    if len(seeds) == 1:
        res = per_seed[seeds[0]]
        out.update(res)
        out.update(_headline(res))
        a, b = res['nominal_trained'], res['injection_trained']
        # Decided on the unrounded returns (a 0.8996 must not pass as 0.9).
        nb, rb = b['eval_nominal']['return'], b['eval_real']['return']
        ra = a['retention']
    else:
        out['per_seed'] = {str(k): dict(v, **_headline(v)) for k, v in per_seed.items()}
        heads = [_headline(v) for v in per_seed.values()]
        for key in heads[0]:
            vals = [h[key] for h in heads if h[key] is not None]
            out[f'{key}_mean'] = round(float(np.mean(vals)), 4) if vals else None
            out[f'{key}_min'] = round(float(np.min(vals)), 4) if vals else None
        # The target on the seed mean of the returns (each seed's policy counts once).
        nb = float(np.mean([v['injection_trained']['eval_nominal']['return']
                            for v in per_seed.values()]))
        rb = float(np.mean([v['injection_trained']['eval_real']['return']
                            for v in per_seed.values()]))
        na = float(np.mean([v['nominal_trained']['eval_nominal']['return']
                            for v in per_seed.values()]))
        ra_real = float(np.mean([v['nominal_trained']['eval_real']['return']
                                 for v in per_seed.values()]))
        ra = ra_real / na if na > 0 else None
        out['retention_of_mean_returns_injection_trained'] = round(rb / nb, 4) if nb > 0 else None
        out['retention_of_mean_returns_nominal_trained'] = round(ra, 4) if ra else None
    out['target_retention_injection_trained'] = 0.9
    rb_ratio = rb / nb if nb > 0 else None
    out['target_met'] = bool(rb_ratio is not None and rb >= 0.9 * nb
                             and (ra is None or ra < rb_ratio))
    png = getattr(args, 'png', None)
    if png:
        _plot(per_seed, png)
        out['plot'] = png
    return out


def _plot(per_seed: dict, path: str) -> None:
    """Bar chart: per seed, each policy's return and success, nominal vs real variant."""
    import os

    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    labels, width = [], 0.2
    for i, (seed, res) in enumerate(per_seed.items()):
        for j, (label, name) in enumerate((('nominal_trained', '(a) no injection'),
                                           ('injection_trained', '(b) injection'))):
            r = res[label]
            for ax, key in zip(axes, ('return', 'success')):
                x = i + (2 * j - 1) * width
                ax.bar(x - width / 2, r['eval_nominal'][key], width,
                       color=('#9ecae1', '#a1d99b')[j],
                       label=f'{name}, nominal' if i == 0 else None)
                ax.bar(x + width / 2, r['eval_real'][key], width,
                       color=('#3182bd', '#31a354')[j],
                       label=f'{name}, real variant' if i == 0 else None)
        labels.append(f'seed {seed}')
    for ax, title in zip(axes, ('deterministic episode return', 'reach success (< 5 cm)')):
        ax.set_xticks(range(len(labels)), labels)
        ax.set_title(title)
        ax.grid(True, axis='y', alpha=0.3)
    axes[1].legend(fontsize=8, loc='lower right')
    fig.suptitle('bench sim2real: arm6_reach, nominal model vs held-out real variant')
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
