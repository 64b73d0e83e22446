# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``bench adapt``'s latency part: the control loop timed without and with the adapter.

The same probe as ``bench deploy`` (the robot double times each ``/joint_states``
leaving -> the command arriving back, ``--latency-cycles`` cycles at the
profile's rate), with a scenario beside the double giving a new goal every
``GOAL_TIMEOUT_S`` (episodes for the learner), run twice against fresh doubles:

- ``deploy``: ``unilab deploy MODEL --robot arm6 --armed`` (no learner; the
  deploy graph composed in one process, as ``unilab deploy`` and ``unilab adapt``
  run it; the network in torch, ``run.deploy_runtime: torch``, as the adapting
  policy runs it, so that the difference is the adapter's);
- ``during_adapt``: ``unilab adapt MODEL --robot arm6 --armed`` (the same control
  process plus the recorder and the adapter in their own processes, the adapter
  under SCHED_IDLE with its configured threads), with rounds due every ``PERIOD_S`` after
  ``MIN_EPISODES`` episodes, so that fine-tuning and simulation tests run during
  most of the measured cycles; ``adapt_rounds_during_latency`` says how many ran.

The two alternate in ``ROUNDS`` rounds of ``cycles / ROUNDS`` cycles each, as
``bench deploy`` interleaves its controllers; each side's figures are over all
its rounds. Reported: ``deploy_p50_ms`` / ``deploy_p99_ms`` / ``deploy_max_ms`` and
``deploy_p50_ms_during_adapt`` / ``deploy_p99_ms_during_adapt`` /
``deploy_max_ms_during_adapt``, with each run's ``deadline_misses``; ``png``
draws both sides' latency histograms (``plot_latency``).
"""

from __future__ import annotations

import json
import pathlib
import sys

from unilab_bench.deploy import figures, measure, merge_probes, split_cycles
from unilab_bringup.paths import profile_path
from unilab_core.robot_profile import load_profile
import yaml

ROBOT = 'arm6'
#: Cycles per run (at 50 Hz: 100 s).
DEFAULT_CYCLES = 5000
#: Wall seconds per scenario goal: one robot episode.
GOAL_TIMEOUT_S = 1.0
#: The adapter's rounds: as often as its work allows.
PERIOD_S = 2.0
MIN_EPISODES = 4
#: Interleaved rounds (deploy, adapt, deploy, ...): the machine's drift hits both alike.
ROUNDS = 3


def _rounds(run_dir: pathlib.Path) -> int:
    history = run_dir / 'adapt' / 'history.jsonl'
    if not history.is_file():
        return 0
    return sum(json.loads(line)['kind'] == 'candidate' for line in open(history))


def latency_during_adapt(model: str, cycles: int, tmp: pathlib.Path,
                         rounds: int = ROUNDS, png: str | pathlib.Path | None = None) -> dict:
    """Measure the control latency without and with the adapter (see the module doc)."""
    source = profile_path(ROBOT).resolve()
    profile = load_profile(source)
    fast = tmp / 'adapt_rounds.yaml'
    fast.write_text(yaml.safe_dump({'adapt': {'period_s': PERIOD_S,
                                              'min_episodes': MIN_EPISODES}}))
    same_runtime = tmp / 'deploy_torch.yaml'
    same_runtime.write_text(yaml.safe_dump({'run': {'deploy_runtime': 'torch'}}))
    cli = [sys.executable, '-m', 'unilab.cli']
    robot = ['--robot', str(source), '--armed']
    runs = {'deploy': cli + ['deploy', model, *robot, '--config', str(same_runtime)],
            'during_adapt': cli + ['adapt', model, *robot, '--config', str(fast)]}
    per_round = split_cycles(cycles, rounds)
    probes: dict = {name: [] for name in runs}
    adapt_dirs = []
    for i, n in enumerate(per_round):
        goals = int(n / profile.control_rate_hz / GOAL_TIMEOUT_S) + 1000
        for name, command in runs.items():
            run_dir = tmp / f'{name}_{i}'
            if name == 'during_adapt':
                adapt_dirs.append(run_dir)
            probes[name].append(measure(f'{name}_{i}', command + ['--run-dir', str(run_dir)],
                                        profile, source, n, tmp, goals=goals,
                                        goal_timeout_s=GOAL_TIMEOUT_S))
    out: dict = {'latency_cycles': cycles, 'latency_rounds': len(per_round)}
    merged = {name: merge_probes(got) for name, got in probes.items()}
    for name, probe in merged.items():
        suffix = '' if name == 'deploy' else '_during_adapt'
        out.update({k + suffix: v for k, v in figures('deploy', probe).items()})
    if png and not plot_latency(png, {'unilab deploy': merged['deploy']['latency_ms'],
                                      'unilab adapt (adapter training beside it)':
                                      merged['during_adapt']['latency_ms']}):
        print(f'{png}: not drawn, no control cycle was timed', file=sys.stderr)
    out['adapt_rounds_during_latency'] = sum(_rounds(d) for d in adapt_dirs)
    p99, p99_adapt = out.get('deploy_p99_ms'), out.get('deploy_p99_ms_during_adapt')
    if p99 is not None and p99_adapt is not None:
        out['deploy_p99_ms_adapt_increase'] = round(p99_adapt - p99, 3)
    return out


def plot_latency(path, samples: dict) -> bool:
    """
    Draw each side's control latency (``name -> ms per cycle``) as a histogram.

    Return False, drawing nothing, when no cycle was timed (every one a deadline miss).
    """
    import numpy as np
    every = np.concatenate([np.asarray(v, float) for v in samples.values()] or [[]])
    if not every.size:
        return False
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    bins = np.linspace(0.0, float(np.percentile(every, 99.9)) * 1.1, 80)
    for name, ms in samples.items():
        ms = np.asarray(ms, float)
        if not ms.size:
            continue
        p50, p99 = np.percentile(ms, [50, 99])
        ax.hist(np.minimum(ms, bins[-1]), bins=bins, histtype='step', linewidth=1.4,
                label=f'{name}: p50 {p50:.2f}, p99 {p99:.2f}, max {ms.max():.2f} ms')
        ax.axvline(p99, linestyle=':', color=ax.patches[-1].get_edgecolor())
    ax.set_yscale('log')
    ax.set_xlabel('/joint_states out -> command back at the robot [ms] '
                  '(the last bin holds the slower)')
    ax.set_ylabel('control cycles')
    ax.set_title('Control latency on the robot double, without and with online '
                 'adaptation (p99 dotted)', fontsize=10)
    ax.legend(fontsize=7, loc='upper right')
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
