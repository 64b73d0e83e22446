# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench stress``: the report's arithmetic and thresholds, and a two-robot run."""

import argparse
import json

import pytest
from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()

LIMITS = {'gpu_latency_ms': 5.0, 'scheduling_latency_us': 10.0, 'packet_loss': 0.0001,
          'latency_p99_ms': 10.0, 'rss_growth_mb_per_min': 5.0, 'deadline_miss_share': 0.001,
          'joint_state_rate_share': 0.95}
KEYS = ('robots', 'duration_s', 'latency_p99_ms', 'messages_lost', 'deadline_misses',
        'rss_growth_mb_per_min', 'thresholds_exceeded')


def test_exceeded_names_each_threshold_and_skips_what_was_not_measured():
    from unilab_bench.stress_report import exceeded
    figures = {'robots': 2, 'robots_commanding': 2, 'gpu_latency_p99_ms': None,
               'scheduling_latency_max_us': 50.0, 'packet_loss': 0.0, 'latency_p99_ms': 12.0,
               'rss_growth_mb_per_min': 1.0, 'deadline_miss_share': 0.0,
               'joint_state_rate_share_min': 0.5}
    assert exceeded(figures, LIMITS) == ['scheduling_latency_us', 'latency_p99_ms',
                                         'joint_state_rate_share']
    calm = dict(figures, scheduling_latency_max_us=5.0, latency_p99_ms=1.0,
                joint_state_rate_share_min=1.0)
    assert exceeded(calm, LIMITS) == []
    assert exceeded(dict(calm, robots_commanding=1), LIMITS) == ['robots_commanding']


def test_rss_slope_is_per_minute_and_needs_three_points():
    from unilab_bench.stress_report import slope_per_min
    assert slope_per_min([0, 30, 60, 90], [100, 101, 102, 103]) == pytest.approx(2.0)
    assert slope_per_min([0, 30], [100, 200]) is None


def test_summary_of_fabricated_samples():
    from unilab_bench.stress_report import summarise
    first = {'/robot0/safety': {'_t': 0.0, 'deadline_misses': '1', 'loop_cycles': '0',
                                'joint_states': '0', 'transport_dropped': '0',
                                'transport_received': '0'}}
    last = {'/robot0/safety': {'_t': 10.0, 'deadline_misses': '11', 'loop_cycles': '10000',
                               'joint_states': '2000', 'transport_dropped': '3',
                               'transport_received': '997', '_level': 1}}
    probe = {'cycles': 1000, 'p99_us': 20.0, 'max_us': 80.0}
    samples = [{'t': float(t), 'robots': [],
                'processes': {'a': {'cpu_pct': 50.0, 'rss_mb': 100.0 + t}},
                'shm': {'count': 2, 'bytes': 10}, 'probe': probe} for t in (0, 30, 60)]
    out = summarise(samples, {0: [0.001, 0.002, 0.003], 1: []}, first, last, 2, 60.0, 250.0,
                    LIMITS)
    assert out['deadline_misses'] == 10 and out['deadline_miss_share'] == 0.001
    assert out['messages_lost'] == 3 and out['packet_loss'] == pytest.approx(0.003)
    assert out['messages_lost_by_node'] == {'/robot0/safety': 3}
    assert out['per_robot']['0']['joint_state_rate_share'] == pytest.approx(0.8)
    assert out['rss_growth_mb_per_min'] == pytest.approx(60.0)
    assert out['robots_commanding'] == 1 and out['scheduling_latency_max_us'] == 80.0
    assert set(out['thresholds_exceeded']) == {'scheduling_latency_us', 'packet_loss',
                                               'rss_growth_mb_per_min',
                                               'joint_state_rate_share', 'robots_commanding'}


@pytest.mark.parametrize('robots, duration', [(0, 10.0), (2, 0.0)])
def test_bad_options_are_errors_naming_the_option(robots, duration):
    from unilab_bench.stress import _options
    from unilab_core.config import ConfigError
    with pytest.raises(ConfigError, match='--robots' if not robots else '--duration'):
        _options(argparse.Namespace(robots=robots, duration=duration, adapters=None))


def test_two_robots_report_keys_png_and_exit_code(tmp_path):
    from unilab_bench.command import _bench
    args = argparse.Namespace(name='stress', robots=2, duration=6.0, adapters=1,
                              json=str(tmp_path / 'stress.json'),
                              png=str(tmp_path / 'stress.png'))
    code = _bench(args)
    out = json.loads((tmp_path / 'stress.json').read_text())
    for key in KEYS:
        assert key in out, key
    assert out['robots'] == 2 and out['adapters'] == 1
    # Every robot was served: commands came back and their latencies were timed.
    assert out['robots_commanding'] == 2
    assert all(r['latency_count'] > 0 for r in out['per_robot'].values())
    assert {'double', 'probe', 'bench', 'robot0_adapt', 'robot1_deploy'} <= set(
        out['processes'])
    assert isinstance(out['thresholds_exceeded'], list)
    assert out['inference_p99_ms'] > 0 and out['gpu_latency_p99_ms'] is None  # a CPU here
    assert code == (1 if out['thresholds_exceeded'] else 0)
    assert out['samples'] and (tmp_path / 'stress.png').stat().st_size > 0


def test_policy_inference_is_judged_as_gpu_latency_only_on_a_gpu():
    from unilab_bench.stress_report import summarise
    samples = [{'t': float(t), 'robots': [], 'processes': {'a': {'cpu_pct': 1.0,
                                                                 'rss_mb': 100.0}},
                'shm': {'count': 0, 'bytes': 0},
                'probe': {'cycles': 10, 'p99_us': 1.0, 'max_us': 1.0}} for t in (0, 60)]
    cpu = {'/robot0/policy': {'_t': 60.0, 'inference_p99_ms': '7.5', 'gpu': 'no GPU in use'},
           '/robot1/policy': {'_t': 60.0, 'inference_p99_ms': '0.5'}}
    out = summarise(samples, {0: [0.001], 1: [0.001]}, {}, cpu, 2, 60.0, 250.0, LIMITS)
    assert out['inference_p99_ms'] == 7.5 and out['gpu_latency_p99_ms'] is None
    assert 'gpu_latency_ms' not in out['thresholds_exceeded']
    gpu = dict(cpu)
    gpu['/robot0/policy'] = {'_t': 60.0, 'inference_p99_ms': '7.5', 'gpu.temperature_c': '60'}
    out = summarise(samples, {0: [0.001], 1: [0.001]}, {}, gpu, 2, 60.0, 250.0, LIMITS)
    assert out['gpu_latency_p99_ms'] == 7.5 and 'gpu_latency_ms' in out['thresholds_exceeded']
