# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The ROS-free training path (bench train, sim2real): gate and disturbances as in the graph."""

import pathlib

import numpy as np
import pytest
from unilab_bringup.direct import make_gate, train_direct
from unilab_bringup.paths import default_config_files
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
    plain.filter(np.zeros((2, 6)), state_position=measured, measured=measured)
    assert plain.pid_rows == 0
    pid = make_gate(_cfg(**{'safety.pid_kp': [2.0]}), tmp_path)
    out = pid.filter(np.zeros((2, 6)), state_position=measured, measured=measured).command
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
    from unilab_policy.networks import load_trained
    cfg = _cfg(**{'model.action_history': 2})
    out = train_direct(cfg, tmp_path / 'hist')
    assert out['steps'] >= 1024
    bundle = load_trained(tmp_path / 'hist').bundle
    # arm6_reach: 6 joints -> obs 6 + 6 + 9 extras, plus two 6-dim actions.
    assert bundle.actor_critic.obs_dim == 21 + 2 * 6
    assert bundle.obs_normalizer.mean.shape[-1] == 33


def test_train_direct_keeps_the_history_the_policy_node_keeps(tmp_path, monkeypatch):
    # Record, through the real class, each step's network input and the action pushed
    # after it (bootstrap inputs at chunk ends are observed but not followed by a push).
    import unilab_bringup.direct as direct
    import unilab_policy.actor as actor_module
    from unilab_policy.history import ActionHistory
    steps, pushed, bounds = [], [], []

    class Recording(ActionHistory):
        def __init__(self, *args):
            super().__init__(*args)
            bounds.append((self.low, self.high))

        def observe(self, obs):
            self.last = super().observe(obs)
            return self.last

        def push(self, action):
            steps.append(self.last.copy())
            pushed.append(np.clip(action, self.low, self.high))
            super().push(action)

    acted = []  # what the policy sent to the safety gate, step by step
    real_gate = direct.build_gate

    def recording_gate(spec):
        gate = real_gate(spec)
        filter_ = gate.filter

        def record(action, **kw):
            acted.append(np.array(action))
            return filter_(action, **kw)
        gate.filter = record
        return gate

    monkeypatch.setattr(actor_module, 'ActionHistory', Recording)
    monkeypatch.setattr(direct, 'build_gate', recording_gate)
    train_direct(_cfg(**{'model.action_history': 2}), tmp_path / 'hist')
    assert len(steps) >= 128 and steps[0].shape == (8, 21 + 12)
    # The history records the actions the policy sent, clipped to the actuator range.
    for t in range(128):
        np.testing.assert_allclose(pushed[t], np.clip(acted[t], *bounds[0]), atol=1e-6)
    q = slice(0, 6)  # arm6_reach observes [q, qd, extras]; its drives hold q at a start
    for t in range(128):
        obs, h1, h2 = steps[t], steps[t][:, 21:27], steps[t][:, 27:33]
        if t % 100 == 0:  # an episode (100 steps, every env in step) starts
            held = np.clip(obs[:, q], *bounds[0])  # the actuator range, like every command
            np.testing.assert_allclose(h1, held, atol=1e-6)
            np.testing.assert_allclose(h2, held, atol=1e-6)
            continue
        np.testing.assert_allclose(h1, pushed[t - 1], atol=1e-6)
        want2 = pushed[t - 2] if t % 100 > 1 else steps[t - 1][:, 21:27]
        np.testing.assert_allclose(h2, want2, atol=1e-6)
