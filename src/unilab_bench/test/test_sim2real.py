# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench sim2real``: its training preset, and a tiny run over two seeds."""

import pathlib

import numpy as np
import pytest
from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()


def test_sim2real_preset_is_what_bench_sim2real_trains_with():
    from unilab_bench.sim2real import _config
    injected = _config(1000, 0, 8, True)
    nominal = _config(1000, 0, 8, False)
    assert injected.disturbances.enabled and not nominal.disturbances.enabled
    # The same network for both policies: only the training conditions differ.
    assert injected.model.action_history == nominal.model.action_history == 3
    assert list(injected.disturbances.actuator.delay_steps) == [0, 3]
    # One PPO recipe for both: a fixed learning rate (see the preset's comment).
    for cfg in (injected, nominal):
        assert cfg.policy_update.schedule == 'fixed' and cfg.policy_update.lr == 3.0e-4


def test_bench_sim2real_over_seeds_reports_each_seed_and_the_means(tmp_path):
    import argparse

    from unilab_bench.sim2real import bench_sim2real
    args = argparse.Namespace(steps=512, seed=0, seeds='0,1', num_envs=4,
                              png=str(tmp_path / 'sim2real.png'))
    out = bench_sim2real(args)
    assert out['seed'] == [0, 1] and set(out['per_seed']) == {'0', '1'}
    for res in out['per_seed'].values():
        for label in ('nominal_trained', 'injection_trained'):
            r = res[label]
            assert r['eval_nominal']['episodes'] == 8 and r['eval_real']['episodes'] == 8
            assert 0.0 <= r['eval_real']['success'] <= 1.0
    # Means and minima are over the per-seed figures.
    per = [res['success_real_injection_trained'] for res in out['per_seed'].values()]
    assert out['success_real_injection_trained_mean'] == pytest.approx(np.mean(per), abs=1e-4)
    assert out['success_real_injection_trained_min'] == pytest.approx(min(per), abs=1e-4)
    assert isinstance(out['target_met'], bool)
    assert pathlib.Path(out['plot']).stat().st_size > 0
