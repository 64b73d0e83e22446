# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The ROS-free training path (bench train, sim2real): gate and disturbances as in the graph."""

import pathlib

import numpy as np
import pytest
from unilab.direct import make_gate, train_direct
from unilab.paths import default_config_files
from unilab_core.config import load_run_config


def _cfg(**overrides):
    base = {'rollout.num_envs': 8, 'run.total_steps': 1024, 'logging.tensorboard': False,
            'logging.progress': False}
    base.update(overrides)
    return load_run_config(list(default_config_files()), base)


def test_make_gate_follows_the_safety_section(tmp_path):
    plain = make_gate(_cfg(), tmp_path)
    assert plain.pid is None and plain.lookahead is None
    measured = np.full((2, 6), 0.02)
    plain.filter(np.zeros((2, 6)), measured=measured)
    assert plain.pid_rows == 0
    pid = make_gate(_cfg(**{'safety.pid_kp': [2.0]}), tmp_path)
    out = pid.filter(np.zeros((2, 6)), measured=measured).command
    assert pid.pid_rows == 2
    # P on a +0.02 rad error pushes the command below the zero target.
    assert np.all(out < 0.0)
    ahead = make_gate(_cfg(**{'safety.lookahead_joint_limits': True}), tmp_path)
    assert ahead.lookahead is not None
    with pytest.raises(ValueError, match='pid_kp'):
        make_gate(_cfg(**{'safety.pid_kp': [1.0, 2.0]}), tmp_path)


def test_train_direct_trains_and_applies_the_disturbances(tmp_path):
    nominal = train_direct(_cfg(), tmp_path / 'nominal')
    assert nominal['steps'] >= 1024 and nominal['return_last'] is not None
    assert pathlib.Path(nominal['checkpoint']).is_file()
    again = train_direct(_cfg(), tmp_path / 'again')
    assert again['return_last'] == nominal['return_last']  # deterministic given the seed
    disturbed = train_direct(_cfg(**{'disturbances.enabled': True,
                                     'disturbances.network': {'action_drop_prob': 0.5}}),
                             tmp_path / 'disturbed')
    assert disturbed['steps'] >= 1024
    assert disturbed['return_last'] != nominal['return_last']


def test_train_direct_with_action_history_exports_the_wider_network(tmp_path):
    from unilab.bench_sim2real import _load_policy
    cfg = _cfg(**{'model.action_history': 2})
    out = train_direct(cfg, tmp_path / 'hist')
    assert out['steps'] >= 1024
    bundle = _load_policy(cfg, str(tmp_path / 'hist'))
    # arm6_reach: 6 joints -> obs 6 + 6 + 9 extras, plus two 6-dim actions.
    assert bundle.actor_critic.obs_dim == 21 + 2 * 6
    assert bundle.obs_normalizer.mean.shape[-1] == 33
