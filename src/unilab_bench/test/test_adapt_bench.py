# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench adapt``'s latency part: the control loop timed without and with the adapter."""

import json

import pytest

from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()


def test_latency_is_timed_with_and_without_the_adapter(tmp_path):
    from unilab_bench.adapt_latency import latency_during_adapt
    from unilab_bench.procs import fresh_run_dir
    model = fresh_run_dir('arm6_reach', tmp_path / 'model')
    png = tmp_path / 'latency.png'
    out = latency_during_adapt(str(model), 40, tmp_path, rounds=2, png=png)
    assert out['latency_rounds'] == 2
    assert png.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'  # both sides' histograms
    for suffix in ('', '_during_adapt'):
        # Every cycle of both rounds either timed a command or counted a miss.
        assert out[f'deploy_cycles{suffix}'] == 40
        assert 0 <= out[f'deploy_deadline_misses{suffix}'] < 40
        assert 0 < out[f'deploy_p50_ms{suffix}'] <= out[f'deploy_p99_ms{suffix}']
    assert out['deploy_p99_ms_adapt_increase'] == round(
        out['deploy_p99_ms_during_adapt'] - out['deploy_p99_ms'], 3)
    # Each round's second run was `unilab adapt`, its control loop in one process beside
    # the recorder and the adapter (started under SCHED_IDLE: on a busy machine a short
    # run may end before the adapter is up). A round's history is written from the first
    # round on (the deployed policy's simulation test runs with it).
    candidates = 0
    for i in range(2):
        run = tmp_path / f'during_adapt_{i}'
        path = run / 'adapt' / 'history.jsonl'
        history = [json.loads(line) for line in open(path)] if path.is_file() else []
        assert not history or history[0]['kind'] == 'start'
        candidates += sum(h['kind'] == 'candidate' for h in history)
        assert sorted(p.name for p in (run / 'logs').glob('*.log')) == [
            'adapter.log', 'perception+policy+safety.log', 'recorder.log']
        assert not (tmp_path / f'deploy_{i}' / 'adapt').exists()
    assert out['adapt_rounds_during_latency'] == candidates


def test_the_targets_need_the_gain_the_fuse_and_the_latency():
    from unilab_bench.adapt import targets
    good = {'success_before': 0.5, 'success_after': 0.75, 'sabotage_rollbacks': 1,
            'sabotage_start_success': 0.5, 'sabotage_final_success': 0.52,
            'deploy_p99_ms_adapt_increase': 0.4}
    got = targets(good)
    assert got['success_gain_points'] == 25.0
    assert got['adaptation_target_met'] and got['latency_target_met'] and got['target_met']
    for change in ({'success_after': 0.69}, {'sabotage_rollbacks': 0},
                   {'sabotage_final_success': 0.4}):
        got = targets({**good, **change})
        assert not got['adaptation_target_met'] and not got['target_met'], change
    slow = targets({**good, 'deploy_p99_ms_adapt_increase': 1.33})
    assert slow['adaptation_target_met'] and not slow['latency_target_met']
    assert not slow['target_met']
    # Without the latency part (--latency-cycles 0) only the adaptation is judged.
    unmeasured = targets({k: v for k, v in good.items() if k != 'deploy_p99_ms_adapt_increase'})
    assert unmeasured['latency_target_met'] is None and unmeasured['target_met']


def test_the_latency_histograms_go_beside_the_rounds_plot():
    from unilab_bench.adapt import latency_png
    assert str(latency_png('docs/adapt_rounds.png')) == 'docs/adapt_rounds_latency.png'
    assert str(latency_png('out/plot')) == 'out/plot_latency.png'


def test_no_latency_histogram_without_a_timed_cycle(tmp_path):
    from unilab_bench.adapt_latency import plot_latency
    png = tmp_path / 'latency.png'
    assert not plot_latency(png, {'unilab deploy': [], 'unilab adapt': []})
    assert not png.exists()
    assert plot_latency(png, {'unilab deploy': [1.5, 2.0], 'unilab adapt': []})
    assert png.read_bytes()[:4] == b'\x89PNG'


def test_a_walking_policy_adapts_on_the_go2_double_and_is_scored_before_and_after(
        tmp_path, monkeypatch):
    """`bench adapt --robot go2`: a round on the double through the fuse, scored both ends."""
    import argparse

    from unilab_bench import adapt_legged
    from unilab_bench.adapt import bench_adapt
    from unilab_bench.procs import fresh_run_dir
    from unilab_core.config import ConfigError
    model = fresh_run_dir('go2_walk', tmp_path / 'model')
    for name, value in (('EVAL_SEGMENTS', 3), ('MIN_EPISODES', 2), ('SEGMENT_S', 1.0),
                        ('SIM_ENVS', 1), ('ICE_SEGMENTS', 2)):
        monkeypatch.setattr(adapt_legged, name, value)
    args = argparse.Namespace(robot='go2', variant='slippery', model=str(model), steps=1,
                              seed=0, latency_cycles=0)
    out = bench_adapt(args)
    assert (out['robot'], out['variant'], out['rounds']) == ('go2', 'slippery', 1)
    for side in ('before', 'after', 'before_on_real', 'after_on_real'):
        assert out[f'segments_{side}'] == 3
        assert out[f'success_{side}'] == round(1 - out[f'falls_{side}'] / 3, 4)
        per = out[f'per_command_{side}']   # the first three commands, a segment each
        assert [c['segments'] for c in per] == [1, 1, 1]
        assert sum(c['falls'] for c in per) == out[f'falls_{side}']
    # The starting version on ice too (a floor below the training's friction), before only.
    assert out['ice_friction'] == adapt_legged.ICE_FRICTION < 0.2
    assert out['segments_before_on_ice'] == 2 and 'segments_after_on_ice' not in out
    # One round: the running version scored on the robot, one candidate fine-tuned and
    # either deployed (then followed on the robot) or rejected by the simulation test.
    assert len(out['robot_success_per_round']) == 1
    assert out['versions_deployed'] + out['candidates_rejected'] == 1
    assert out['updates_followed'] <= out['versions_deployed']
    assert out['success_gain_points'] == round(
        100 * (out['success_after'] - out['success_before']), 1)
    assert out['latency_target_met'] is None and 'control_p99_ms_adapt_increase' not in out
    for bad, match in (({'variant': 'ice'}, 'expected one of'),
                       ({'robot': 'arm6'}, 'not a legged robot'),
                       ({'model': None}, 'needs --model')):
        with pytest.raises(ConfigError, match=match):
            bench_adapt(argparse.Namespace(**{**vars(args), **bad}))


@pytest.mark.system
def test_the_legged_control_loop_is_timed_with_and_without_the_adapter(tmp_path):
    """Over DDS: the Go2 double under `unilab deploy`, then under `unilab adapt`."""
    from unilab_bench.adapt_legged_latency import latency_legged
    from unilab_bench.procs import fresh_run_dir
    from unilab_bringup.paths import profile_path
    model = fresh_run_dir('go2_walk', tmp_path / 'model')
    out = latency_legged(str(model), profile_path('go2').resolve(), 'slippery', 200,
                         tmp_path, rounds=1)
    assert out['latency_rounds'] == 1
    for suffix in ('', '_during_adapt'):
        run, = out[f'latency_runs{suffix}']
        # The supervisor's motor loop ran and timed its ticks; the gate timed its actions.
        assert run['legged_loop_cycles'] > 500, run
        assert 0 <= run['legged_period_error_p50_us'] <= run['legged_period_error_p99_us']
        assert run['action_latency_p99_us'] > 0
        assert out[f'legged_period_error_p99_us_mean{suffix}'] == run[
            'legged_period_error_p99_us']
        # The double's own silences, to tell a stall of the double from the controller's.
        assert run['double_joint_state_gap_max_ms'] > 0, run
        assert run['double_joint_state_gaps_past_timeout'] >= 0, run
    assert out['control_p99_ms_adapt_increase'] == round(
        (out['legged_period_error_p99_us_mean_during_adapt']
         - out['legged_period_error_p99_us_mean']) / 1000, 3)
    # The adapt run was `unilab adapt` (the control process, the recorder, the adapter),
    # and the control process took its stop quietly on both sides. (A learner stopped
    # while still importing, under SCHED_IDLE on a busy machine, may print where.)
    logs = tmp_path / 'during_adapt_0' / 'logs'
    assert {'adapter.log', 'recorder.log'} <= {p.name for p in logs.glob('*.log')}
    for log in [logs / 'perception+policy+safety.log',
                *(tmp_path / 'deploy_0' / 'logs').glob('*.log')]:
        assert 'Traceback' not in log.read_text(), log
