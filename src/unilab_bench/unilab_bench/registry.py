# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench NAME``: benchmarks that report named figures as JSON.

Every benchmark runs its baseline in the same process, right before or after
the measured path, and reports the ratio; nothing here is a pass/fail test.
Each benchmark is a module of this package; this registry maps names to them.
"""

from __future__ import annotations

import datetime
import os
import subprocess

from unilab_bench.adapt import bench_adapt
from unilab_bench.bridge import bench_bridge
from unilab_bench.datafactory import bench_factory
from unilab_bench.deploy import bench_deploy
from unilab_bench.gae import bench_gae
from unilab_bench.graph import bench_graph
from unilab_bench.learn import bench_learn
from unilab_bench.perception import bench_perception
from unilab_bench.robot import bench_robot
from unilab_bench.safety import bench_safety
from unilab_bench.scale import bench_scale
from unilab_bench.sim2real import bench_sim2real
from unilab_bench.stress import bench_stress
from unilab_bench.train import bench_train
from unilab_bench.transfer import bench_transfer
from unilab_bench.transport import bench_transport
from unilab_core.config import ConfigError


BENCHMARKS = {'graph': bench_graph, 'gae': bench_gae, 'train': bench_train,
              'bridge': bench_bridge, 'safety': bench_safety,
              'perception': bench_perception, 'transport': bench_transport,
              'sim2real': bench_sim2real, 'adapt': bench_adapt,
              'stress': bench_stress, 'deploy': bench_deploy, 'transfer': bench_transfer,
              'learn': bench_learn, 'scale': bench_scale, 'factory': bench_factory,
              'robot': bench_robot}

#: What each benchmark that draws puts in ``--png FILE``; no benchmark draws without it,
#: and none writes into the current folder (or the checkout) unless a path says so.
PICTURES = {
    'safety': 'the latency histogram',
    'transport': 'the latency CDFs',
    'sim2real': 'returns and success per seed',
    'adapt': 'success per round (and FILE_latency.png: the latency histograms)',
    'stress': 'the time series',
    'learn': 'the learning curves',
    'scale': 'the modelled scaling',
}


def run_benchmark(name: str, args) -> dict:
    """Run one benchmark by name; unknown names list the available ones."""
    if name not in BENCHMARKS:
        raise ConfigError(f'unknown benchmark `{name}`; available: {", ".join(BENCHMARKS)}')
    if getattr(args, 'png', None) and name not in PICTURES:
        raise ConfigError(f'bench {name} draws nothing: --png is for {", ".join(PICTURES)}')
    return BENCHMARKS[name](args)


def _git(args: list[str], cwd: str) -> str | None:
    try:
        out = subprocess.run(['git', *args], cwd=cwd, capture_output=True, text=True,
                             timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def provenance(cwd: str | None = None) -> dict:
    """
    Return where a result comes from: ``commit``, ``dirty`` and ``measured_at``.

    ``commit`` is ``git rev-parse HEAD`` of the tree the command runs in (None
    outside a git checkout, and then ``dirty`` is None too); ``dirty`` is true
    when tracked files outside ``docs/`` differ from that commit (the results and the
    pages that quote them are not the measured code: scripts/benches.sh rewrites them
    one bench after the other); ``measured_at`` is UTC, ISO 8601.
    """
    cwd = cwd or os.getcwd()
    commit = _git(['rev-parse', 'HEAD'], cwd)
    dirty = None
    if commit is not None:
        top = _git(['rev-parse', '--show-toplevel'], cwd) or cwd
        status = _git(['status', '--porcelain', '--untracked-files=no', '--', '.',
                       ':(exclude)docs'], top)
        dirty = None if status is None else bool(status)
    measured_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')
    return {'commit': commit, 'dirty': dirty, 'measured_at': measured_at}
