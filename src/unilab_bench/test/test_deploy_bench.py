# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench deploy``: a few cycles of each controller against the robot double."""

import argparse
import json

import pytest
from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()


def test_bench_deploy_times_every_controller_and_compares_with_the_baseline():
    from unilab_bench.deploy import bench_deploy
    args = argparse.Namespace(steps=20, model=None, robot='arm6', no_multiprocess=False,
                              rounds=1)
    out = bench_deploy(args)
    assert out['cycles'] == 20 and out['control_rate_hz'] == 50.0
    for name in ('deploy', 'deploy_torch', 'deploy_rt_process', 'deploy_cold',
                 'deploy_multiprocess', 'rclpy', 'echo'):
        # Every cycle either timed a command or counted a miss.
        assert out[f'{name}_cycles'] == 20
        assert 0 <= out[f'{name}_deadline_misses'] < 20
        assert 0 < out[f'{name}_p50_ms'] <= out[f'{name}_p99_ms'] <= out[f'{name}_max_ms']
    assert out['deadline_misses'] == out['deploy_deadline_misses']
    assert out['deploy_p99_vs_rclpy'] == round(out['deploy_p99_ms'] / out['rclpy_p99_ms'], 3)
    assert 'deploy_multiprocess_p50_vs_rclpy' in out
    # The breakdown: the gate's own hop (from its statistics) is a part of each deploy
    # run's loop, so it is shorter than the loop; the floor is the echo node's p50.
    for name in ('deploy', 'deploy_torch', 'deploy_rt_process', 'deploy_cold',
                 'deploy_multiprocess'):
        assert 0 < out[f'{name}_gate_p50_ms'] <= out[f'{name}_gate_p99_ms']
        assert out[f'{name}_gate_p50_ms'] < out[f'{name}_p50_ms']
        assert f'{name}_graph_p50_ms' in out
        # Every timed cycle's command passed the gate; those limited for coming early
        # (sooner than a control step after the last) are counted among them.
        assert out[f'{name}_gate_commands'] >= 20 - out[f'{name}_deadline_misses']
        assert 0 <= out[f'{name}_gate_early_actions'] <= out[f'{name}_gate_commands']
    assert out['floor_p50_ms'] == out['echo_p50_ms']
    assert out['deploy_above_floor_p50_ms'] == round(out['deploy_p50_ms']
                                                     - out['echo_p50_ms'], 3)
    # The default rehearses its chain before each control step, the cold variant does not.
    assert out['deploy_p50_vs_cold'] == round(out['deploy_p50_ms'] / out['deploy_cold_p50_ms'],
                                              3)
    assert out['deploy_rehearsal_errors'] == 0 and 'deploy_cold_rehearsals' not in out
    assert out['deploy_rehearsals'] + out['deploy_rehearsals_late'] > 0
    # A robot's default gates on arrival; the process variant hands each action over.
    assert out['deploy_rt_mode'] == 'inline' and out['deploy_multiprocess_rt_mode'] == 'inline'
    assert out['deploy_torch_rt_mode'] == 'inline'
    assert out['deploy_rt_process_rt_mode'] == 'process'
    assert out['rounds'] == 1


def test_rounds_spread_the_cycles_and_merge_every_round():
    from unilab_bench.deploy import merge_probes, split_cycles
    from unilab_core.config import ConfigError
    assert split_cycles(10, 3) == [4, 3, 3] and split_cycles(5, 1) == [5]
    for bad in (0, 11):
        with pytest.raises(ConfigError, match='--rounds'):
            split_cycles(10, bad)
    with pytest.raises(ConfigError, match='--steps'):
        split_cycles(-5, 3)
    merged = merge_probes([{'cycles': 4, 'deadline_misses': 1, 'latency_ms': [1.0, 2.0, 3.0]},
                           {'cycles': 3, 'deadline_misses': 0, 'latency_ms': [4.0, 5.0, 6.0]}])
    assert merged == {'cycles': 7, 'deadline_misses': 1,
                      'latency_ms': [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}


def test_gate_figures_average_the_rounds_and_sum_the_counters(tmp_path):
    from unilab_bench.deploy import gate_figures
    dirs = []
    for r, (p50, p99, commands) in enumerate([(300.0, 500.0, 10), (500.0, 900.0, 12)]):
        d = tmp_path / f'r{r}'
        d.mkdir()
        (d / 'safety_stats.json').write_text(json.dumps({
            'action_latency_p50_us': p50, 'action_latency_p99_us': p99, 'rt_mode': 'inline',
            'early_actions': 1, 'commands': commands, 'clamped': 2}))
        dirs.append(d)
    out = gate_figures('deploy', dirs + [tmp_path / 'missing'])
    assert out == {'deploy_gate_p50_ms': 0.4, 'deploy_gate_p99_ms': 0.7,
                   'deploy_rt_mode': 'inline', 'deploy_gate_early_actions': 2,
                   'deploy_gate_commands': 22, 'deploy_gate_clamped': 4}


def test_bench_deploy_view_times_the_graph_with_and_without_a_watched_view():
    from unilab_bench.deploy import bench_deploy
    args = argparse.Namespace(steps=20, model=None, robot='arm6', no_multiprocess=False,
                              rounds=1, view=True)
    out = bench_deploy(args)
    names = ('deploy', 'deploy_view', 'deploy_view_foxglove')
    for name in names:
        assert out[f'{name}_cycles'] == 20
        assert 0 < out[f'{name}_p50_ms'] <= out[f'{name}_p99_ms']
        assert len(out[f'{name}_round_p99_ms']) == 1
    # Only the composed graph runs; the view's cases had their clients served.
    assert 'rclpy_p50_ms' not in out and 'deploy_torch_p50_ms' not in out
    assert out['deploy_view_client']['viser']['messages'] > 0
    assert set(out['deploy_view_client']) == {'viser'}
    assert out['deploy_view_foxglove_client']['foxglove']['messages'] > 0
    assert out['view_p99_diff_ms'] == round(out['deploy_view_p99_ms']
                                            - out['deploy_p99_ms'], 3)
    assert isinstance(out['target_met'], bool)


def test_view_figures_pair_the_rounds_and_compare_with_the_budget():
    from unilab_bench.deploy import figures, merge_probes, view_figures

    def probe(*ms):
        return {'cycles': len(ms), 'deadline_misses': 0, 'latency_ms': list(ms)}
    # Two rounds each; a single cycle per round makes each round's p99 that cycle.
    probes = {'deploy': [probe(1.0), probe(2.0)],
              'deploy_view': [probe(1.1), probe(2.3)],
              'deploy_view_foxglove': [probe(1.5), probe(2.0)]}
    pooled = {}
    for name, ps in probes.items():
        pooled.update(figures(name, merge_probes(ps)))
    out = view_figures(pooled, probes)
    assert out['deploy_round_p99_ms'] == [1.0, 2.0]
    assert out['deploy_view_round_p99_ms'] == [1.1, 2.3]
    # Paired per round: +0.1 and +0.3 -> median 0.2; +0.5 and 0.0 -> 0.25.
    assert out['view_p99_diff_round_median_ms'] == pytest.approx(0.2)
    assert out['view_foxglove_p99_diff_round_median_ms'] == pytest.approx(0.25)
    # Pooled: the difference of the p99s over all cycles.
    assert out['view_p99_diff_ms'] == round(
        pooled['deploy_view_p99_ms'] - pooled['deploy_p99_ms'], 3)
    assert out['target_met'] is (max(out['view_p99_diff_ms'],
                                     out['view_foxglove_p99_diff_ms']) <= 0.2)
