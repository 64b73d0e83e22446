# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: a short rsl_rl training on arm6_reach through our environment."""

import contextlib
import io

import pytest
from rsl_rl.runners import OnPolicyRunner
import torch
from unilab_interop.convert import rsl_train_cfg
from unilab_interop.vecenv import make_vec_env

#: A tiny rsl_rl run: envs x steps per iteration x iterations.
ENVS, STEPS_PER_ENV, ITERATIONS = 8, 8, 2


@pytest.fixture(scope='module')
def rsl_run(tmp_path_factory):
    """Train rsl_rl briefly on arm6_reach (observation normaliser on); return its files."""
    root = tmp_path_factory.mktemp('rsl')
    torch.manual_seed(0)
    env = make_vec_env('arm6_reach', ENVS, 0, root / 'env')
    cfg = rsl_train_cfg(num_steps_per_env=STEPS_PER_ENV)
    cfg['actor']['obs_normalization'] = True
    cfg['critic']['obs_normalization'] = True
    with contextlib.redirect_stdout(io.StringIO()):
        runner = OnPolicyRunner(env, cfg, log_dir=str(root / 'log'), device='cpu')
        runner.learn(ITERATIONS)
        runner.export_policy_to_onnx(str(root / 'log'), 'policy.onnx')
    yield {'runner': runner, 'env': env, 'root': root,
           'checkpoint': root / 'log' / f'model_{ITERATIONS - 1}.pt',
           'onnx': root / 'log' / 'policy.onnx'}
    env.close()
