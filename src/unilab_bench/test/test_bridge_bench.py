# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench bridge``'s side-by-side throughput: its rows, and a run without envpool."""

import sys

import pytest

from unilab_bench import bridge


def test_without_envpool_the_bench_says_so_and_runs_ours(monkeypatch):
    monkeypatch.setitem(sys.modules, 'envpool', None)  # import envpool raises ImportError
    out = bridge.peer_throughput(10, envs=(16,), threads=(1, 2), repeats=1,
                                 models=('HalfCheetah-v5',))
    assert out['envpool'].startswith('not installed') and 'envpool==' in out['envpool']
    assert [(r['num_envs'], r['threads']) for r in out['rows']] == [(16, 1), (16, 2)]
    for row in out['rows']:
        assert row['ours'] > 0 and row['rollout'] > 0
        assert row['envpool'] is None and row['ours_vs_envpool'] is None
    assert 'ours_thread_gain' in out['rows'][1]
    targets = bridge._targets(out, {'quad12_walk': {'2': 1.0}})
    assert targets['ours_vs_envpool_met'] is False and targets['quad12_walk_met'] is False


def test_with_envpool_each_row_has_the_three_engines():
    pytest.importorskip('envpool')
    out = bridge.peer_throughput(10, envs=(16,), threads=(1,), repeats=1,
                                 models=('Hopper-v5',))
    (row,) = out['rows']
    assert row['envpool'] > 0 and row['ours_vs_envpool'] == pytest.approx(
        row['ours'] / row['envpool'], abs=1e-3)
