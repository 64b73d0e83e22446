# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench NAME``: the benchmarks' subcommand, added to the CLI through an entry point.

The ``unilab`` CLI loads every ``unilab.commands`` entry point and calls it
with its subparsers; this package registers ``bench`` there, so the CLI
package does not depend on (or import) the benchmarks.
"""

from __future__ import annotations

import json
import shlex
import sys

from unilab_core.atomic import atomic_write_text


def _bench(args) -> int:
    from unilab_bench.registry import provenance, run_benchmark
    result = run_benchmark(args.name, args)
    # Every result says which code measured it (docs/benchmarks.md).
    result.update(provenance())
    result['command_line'] = 'bin/unilab ' + shlex.join(sys.argv[1:])
    text = json.dumps(result, indent=2)
    if args.json:
        atomic_write_text(args.json, text + '\n')
    print(text)
    # A benchmark with thresholds (stress) fails the command when any is exceeded.
    return 1 if result.get('thresholds_exceeded') else 0


def add_command(sub) -> None:
    """Add the ``bench`` subcommand to the CLI's subparsers."""
    from unilab_bench.registry import BENCHMARKS, PICTURES
    b = sub.add_parser('bench', help='run a benchmark, print/write JSON figures')
    b.add_argument('name', help=f'benchmark: {", ".join(BENCHMARKS)}')
    b.add_argument('--json', help='write the result to this file')
    b.add_argument('--steps', type=int, default=None,
                   help='graph: control steps to time (300); train: env steps (50000); '
                   'transport: messages per path and rate (100); '
                   'sim2real: env steps per trained policy (1500000); adapt: rounds (20); '
                   'deploy: control cycles per controller (10000); transfer: env steps per '
                   'policy trained (1500000); scale: env steps per rank (ten PPO updates); '
                   'factory: sim renders to train on (2000; 1000 replayed with --model); '
                   'robot: env steps of the policy trained (1500000)')
    b.add_argument('--num-envs', type=int, default=None,
                   help='envs (graph: 64; scale: per rank, 64)')
    b.add_argument('--task', help='task (graph: arm6_reach, train: Hopper-v5)')
    b.add_argument('--seed', type=int, default=0)
    b.add_argument('--model', default=None,
                   help='adapt: the nominal-trained arm6_reach run directory to adapt (with '
                   '--robot go2: a go2_walk run); '
                   'deploy: run directory or exported model (default: a fresh network of '
                   'the default configuration); factory: a detector directory or version '
                   '.pt (default: train one)')
    b.add_argument('--seeds', default=None,
                   help='sim2real: comma-separated training seeds, e.g. 0,1,2 (per-seed '
                   'figures, their means and minima; the target on the mean returns); '
                   'learn: the seeds trained (0,1,2)')
    b.add_argument('--repeats', type=int, default=20,
                   help='gae: timing repeats; scale: all-reduce repeats')
    b.add_argument('--no-sb3', action='store_true', help='train: skip the SB3 baseline')
    b.add_argument('--sb3-seeds', default=None,
                   help='learn (gymnasium): the seeds SB3 runs too, comma-separated (default: '
                   'every seed; one SB3 run of 1 M steps takes ~19 min on a 2-core VM)')
    b.add_argument('--duration', type=float, default=None,
                   help='safety: s per variant (30); stress: s measured (180)')
    b.add_argument('--robots', type=int, default=None,
                   help='stress: simulated robots, each with its own deploy graph (16)')
    b.add_argument('--adapters', type=int, default=None,
                   help='stress: robots served by `unilab adapt` (a learner) instead of '
                   '`unilab deploy` (1)')
    b.add_argument('--png', default=None, metavar='FILE',
                   help='draw the figures into this PNG file (nothing is drawn without it): '
                   + '; '.join(f'{k}: {v}' for k, v in PICTURES.items()))
    b.add_argument('--robot', default=None, help='deploy: robot profile (arm6); robot: (ur5e); '
                   'adapt: a legged robot (go2) adapts on its double instead of the arm')
    b.add_argument('--variant', default=None,
                   help='adapt --robot go2: the double\'s variant (slippery)')
    b.add_argument('--goals', type=int, default=None,
                   help='transfer: goals per deployed policy (100); robot: goals in the '
                   'workspace (100, 10 outside it among them)')
    b.add_argument('--run', default=None,
                   help='robot: the run directory deployed (default: train one with '
                   '--steps, 1500000)')
    b.add_argument('--injection', default=None, help='transfer: run trained with '
                   'injection (default: train one with config/sim2real.yaml)')
    b.add_argument('--nominal', default=None, help='transfer: run trained without '
                   'injection (default: train one, preset with disturbances off)')
    b.add_argument('--subset', default=None,
                   help='learn: arm6 (default; 3 seeds against the IK expert), ranks (2 '
                   'ranks x N/2 envs against 1 rank x N envs, 600000 steps each), a '
                   'gymnasium task against SB3: hopper, walker, halfcheetah, ant, or a '
                   'quadruped\'s velocity tracking: quad, quad12 (1500000 steps each)')
    b.add_argument('--peer', default=None, choices=('rsl_rl', 'rsl_rl_our_settings'),
                   help='learn: train rsl_rl\'s PPO beside ours on --subset arm6, quad or '
                   'quad12, both scored through the gate; rsl_rl: its published defaults, '
                   'rsl_rl_our_settings: our PPO\'s settings')
    b.add_argument('--run-root', default=None,
                   help='learn: keep the trained runs here (default: a new folder '
                   'unilab-bench-learn-* in the system\'s temporary folder)')
    b.add_argument('--latency-cycles', type=int, default=None,
                   help='adapt: control cycles timed without and with the adapter (5000; '
                   '0 skips the latency part)')
    b.add_argument('--no-multiprocess', action='store_true',
                   help='deploy: skip the one-process-per-node graph')
    b.add_argument('--rounds', type=int, default=None,
                   help='deploy: rounds over every controller, --steps / rounds cycles each '
                   '(3; 6 with --view): a machine whose speed drifts weighs on each '
                   'controller alike; graph --view: rounds of the three cases (3)')
    b.add_argument('--view', action='store_true',
                   help='deploy: the composed graph alone, with `unilab view` and with '
                   '`unilab view --foxglove` beside it (clients connected), alternated; '
                   'graph: the training graph alone and with `unilab view --training` '
                   '(its screen-rate joint states, and the per-step ones), alternated')
    b.set_defaults(func=_bench)
