# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench graph``: the composed graph and the direct loop side by side, rates and step times."""

import argparse

import pytest

from unilab_bench import graph


@pytest.mark.system
def test_graph_and_direct_loop_report_rates_and_per_step_latency():
    args = argparse.Namespace(task='arm6_reach', num_envs=2, steps=30, rounds=1, view=False)
    out = graph.bench_graph(args)
    assert out['rounds'] == 1 and out['num_envs'] == 2
    for name in ('graph', 'direct'):
        p50, p99 = out[f'{name}_step_ms_p50'], out[f'{name}_step_ms_p99']
        assert 0 < p50 <= p99, out
        assert out[f'{name}_steps_per_s'] > 0
    assert out['ratio_graph_vs_direct'] == pytest.approx(
        out['graph_steps_per_s'] / out['direct_steps_per_s'], abs=2e-3)
    assert 'seed_step_ms_p50' not in out   # the seed's figure is a humanoid's


def test_step_latency_takes_every_round_and_the_seed_figure_is_the_humanoid_s():
    rounds = [{'periods': [0.001] * 100}, {'periods': [0.005] * 10}]
    out = graph._step_latency('graph', rounds)
    assert out == {'graph_step_ms_p50': 1.0, 'graph_step_ms_p99': 5.0}   # the slow round counts
    assert graph.SEED_FIGURES['Humanoid-v5']['seed_step_ms_p50'] == 3.2
