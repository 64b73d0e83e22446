# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench deploy``: a few cycles of each controller against the robot double."""

import argparse

from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()


def test_bench_deploy_times_every_controller_and_compares_with_the_baseline():
    from unilab_bench.deploy import bench_deploy
    args = argparse.Namespace(steps=20, model=None, robot='arm6', no_multiprocess=False)
    out = bench_deploy(args)
    assert out['cycles'] == 20 and out['control_rate_hz'] == 50.0
    for name in ('deploy', 'deploy_rt_thread', 'deploy_multiprocess', 'rclpy', 'echo'):
        # Every cycle either timed a command or counted a miss.
        assert out[f'{name}_cycles'] == 20
        assert 0 <= out[f'{name}_deadline_misses'] < 20
        assert 0 < out[f'{name}_p50_ms'] <= out[f'{name}_p99_ms'] <= out[f'{name}_max_ms']
    assert out['deadline_misses'] == out['deploy_deadline_misses']
    assert out['deploy_p99_vs_rclpy'] == round(out['deploy_p99_ms'] / out['rclpy_p99_ms'], 3)
    assert 'deploy_multiprocess_p50_vs_rclpy' in out
    # The breakdown: the gate's own hop (from its statistics) is a part of each deploy
    # run's loop, so it is shorter than the loop; the floor is the echo node's p50.
    for name in ('deploy', 'deploy_rt_thread', 'deploy_multiprocess'):
        assert 0 < out[f'{name}_gate_p50_ms'] <= out[f'{name}_gate_p99_ms']
        assert out[f'{name}_gate_p50_ms'] < out[f'{name}_p50_ms']
        assert f'{name}_graph_p50_ms' in out
        # Every timed cycle's command passed the gate; those limited for coming early
        # (sooner than a control step after the last) are counted among them.
        assert out[f'{name}_gate_commands'] >= 20 - out[f'{name}_deadline_misses']
        assert 0 <= out[f'{name}_gate_early_actions'] <= out[f'{name}_gate_commands']
    assert out['floor_p50_ms'] == out['echo_p50_ms']
    assert out['deploy_rt_mode'] == 'process' and out['deploy_rt_thread_rt_mode'] == 'thread'
