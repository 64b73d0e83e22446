# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench transfer``: two tiny policies, each deployed on the real double for two goals."""

import argparse

from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()


def test_bench_transfer_scores_both_policies_deployed_and_in_process():
    from unilab_bench.transfer import bench_transfer
    args = argparse.Namespace(steps=512, seed=0, num_envs=4, goals=2, injection=None,
                              nominal=None)
    out = bench_transfer(args)
    for label in ('injection', 'nominal'):
        deployed = out[f'deployed_{label}']
        assert deployed['goals_scored'] == deployed['goals_planned'] == 2
        assert out[f'success_{label}'] == deployed['success_fraction']
        assert 0.0 <= out[f'success_{label}'] <= 1.0
        assert 0.0 <= out[f'success_{label}_inproc'] <= 1.0
        assert out[f'inproc_{label}']['episodes'] == 8  # 4 envs x 2 episodes
        assert 'disturbances ' + ('on' if label == 'injection' else 'off') \
            in out[f'model_{label}']
    assert isinstance(out['target_met'], bool)
