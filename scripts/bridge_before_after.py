#!/usr/bin/env python3
# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Our tasks' env steps/s on an earlier commit and on this tree, alternated in the same minutes.

``python3 scripts/bridge_before_after.py REV --json docs/bench/bridge_before_after.json``
extracts REV's ``src/`` (``git archive``) into a temporary folder, then for every task and
thread count steps it in fresh processes, REV's tree and this one in turn, ``--repeats``
times each, and keeps the best of each (the machine may be shared: read the figures with
the load average the JSON records). Only ``make_task`` / ``reset`` / ``step`` are called,
an interface both trees have. Run it from the repository root with the environment
``bin/unilab`` uses (ROS and the venv sourced).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shlex
import subprocess
import sys
import tarfile
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
TASKS = ('arm6_reach', 'ur5e_reach', 'quad_walk', 'quad12_walk', 'go2_walk')
CHILD = r'''
import json, sys, time
import numpy as np
from unilab_bridge.tasks import make_task
name, n, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = make_task(name, n, seed=0, num_threads=threads)
t.reset(seed=0)
rng = np.random.default_rng(0)
mid = (t.action_low + t.action_high) / 2
cmd = mid + 0.1 * rng.standard_normal((16, n, t.action_dim))
for k in range(10):
    t.step(cmd[k % 16])
t0 = time.perf_counter()
for k in range(steps):
    t.step(cmd[k % 16])
print(json.dumps(steps * n / (time.perf_counter() - t0)))
t.close()
'''


def _rate(src: pathlib.Path, task: str, n: int, steps: int, threads: int) -> float:
    env = dict(os.environ)
    paths = [str(p) for p in sorted(src.iterdir()) if p.is_dir()]
    env['PYTHONPATH'] = os.pathsep.join(paths + [env.get('PYTHONPATH', '')])
    out = subprocess.run([sys.executable, '-c', CHILD, task, str(n), str(steps), str(threads)],
                         env=env, capture_output=True, text=True, check=True, cwd=src)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Measure, print and optionally write the JSON."""
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    p.add_argument('rev', help='the earlier commit')
    p.add_argument('--json', help='write the result to this file')
    p.add_argument('--num-envs', type=int, default=64)
    p.add_argument('--steps', type=int, default=150)
    p.add_argument('--repeats', type=int, default=2)
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / 'src' / 'unilab_bench'))
    from unilab_bench.registry import provenance
    rev = subprocess.run(['git', 'rev-parse', args.rev], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.strip()
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        archive = pathlib.Path(tmp) / 'src.tar'
        subprocess.run(['git', 'archive', '-o', str(archive), rev, 'src'], cwd=ROOT, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter='data')
        trees = {'before': pathlib.Path(tmp) / 'src', 'after': ROOT / 'src'}
        for task in TASKS:
            for threads in (1, 2):
                best = {k: 0.0 for k in trees}
                for _ in range(args.repeats):
                    for k, src in trees.items():
                        best[k] = max(best[k], _rate(src, task, args.num_envs, args.steps,
                                                     threads))
                row = {'task': task, 'threads': threads,
                       **{k: round(v, 1) for k, v in best.items()},
                       'after_vs_before': round(best['after'] / best['before'], 3)}
                print(json.dumps(row), flush=True)
                rows.append(row)
    result = {'benchmark': 'bridge', 'before_commit': rev, 'num_envs': args.num_envs,
              'steps': args.steps, 'repeats': args.repeats, 'rows': rows,
              'cpu_count': os.cpu_count(),
              'loadavg_before': [round(x, 2) for x in load_before],
              'loadavg_after': [round(x, 2) for x in os.getloadavg()],
              **provenance(str(ROOT)),
              'command_line': 'python3 scripts/bridge_before_after.py ' + shlex.join(
                  sys.argv[1:] if argv is None else argv)}
    text = json.dumps(result, indent=2)
    if args.json:
        pathlib.Path(args.json).write_text(text + '\n')
    print(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
