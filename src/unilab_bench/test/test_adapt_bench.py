# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench adapt``'s latency part: the control loop timed without and with the adapter."""

import json

from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()


def test_latency_is_timed_with_and_without_the_adapter(tmp_path):
    from unilab_bench.adapt_latency import latency_during_adapt
    from unilab_bench.procs import fresh_run_dir
    model = fresh_run_dir('arm6_reach', tmp_path / 'model')
    out = latency_during_adapt(str(model), 40, tmp_path)
    for suffix in ('', '_during_adapt'):
        # Every cycle either timed a command or counted a miss.
        assert out[f'deploy_cycles{suffix}'] == 40
        assert 0 <= out[f'deploy_deadline_misses{suffix}'] < 40
        assert 0 < out[f'deploy_p50_ms{suffix}'] <= out[f'deploy_p99_ms{suffix}']
    assert out['deploy_p99_ms_adapt_increase'] == round(
        out['deploy_p99_ms_during_adapt'] - out['deploy_p99_ms'], 3)
    # The second run was `unilab adapt` (its adapter started and wrote its history).
    history = [json.loads(line)
               for line in open(tmp_path / 'during_adapt' / 'adapt' / 'history.jsonl')]
    assert history[0]['kind'] == 'start'
    assert out['adapt_rounds_during_latency'] == sum(h['kind'] == 'candidate'
                                                     for h in history)
    assert not (tmp_path / 'deploy' / 'adapt').exists()
