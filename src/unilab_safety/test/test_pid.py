# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""PID compensation: hand-computed steps, re-clamping in the gate, joint-state mapping."""

import numpy as np
import pytest

from spec_helpers import spec
from unilab_safety.build import build_gate
from unilab_safety.gate import SafetyGate
from unilab_safety.limits import load_joint_limits
from unilab_safety.pid import PidCompensator

LIMITS = load_joint_limits({'joint_limits': {
    'a': {'has_position_limits': True, 'min_position': -1.0, 'max_position': 1.0,
          'has_velocity_limits': True, 'max_velocity': 2.0},
    'b': {'has_position_limits': True, 'min_position': -1.0, 'max_position': 1.0}}},
    ['a', 'b'])


def test_pid_terms_by_hand():
    pid = PidCompensator(kp=[2.0, 0.0], ki=[0.0, 1.0], kd=[0.5, 0.0], dt=0.1)
    cmd = np.array([[0.5, 0.5]])
    # Step 1: e = 0.5 - 0.4 = 0.1 on both. a: kp*e = 0.2, no derivative on the first
    # step -> 0.7. b: integral 0.1*0.1 = 0.01, ki*I = 0.01 -> 0.51.
    pid.apply(cmd, np.array([[0.4, 0.4]]), np.array([True]))
    np.testing.assert_allclose(cmd, [[0.7, 0.51]])
    # Step 2: e = 0.5 - 0.45 = 0.05. a: 2*0.05 + 0.5*(0.05-0.1)/0.1 = 0.1 - 0.25 = -0.15
    # -> 0.35. b: integral 0.01 + 0.005 = 0.015 -> 0.515.
    cmd = np.array([[0.5, 0.5]])
    pid.apply(cmd, np.array([[0.45, 0.45]]), np.array([True]))
    np.testing.assert_allclose(cmd, [[0.35, 0.515]])


def test_integral_is_clamped_and_reset_and_bad_rows_are_left_alone():
    pid = PidCompensator(kp=0.0, ki=1.0, kd=0.0, dt=1.0, i_max=0.3, n_joints=1)
    for _ in range(5):
        cmd = np.array([[1.0], [1.0]])
        pid.apply(cmd, np.array([[0.0], [np.nan]]), np.array([True, True]))
    # Row 0: the integral of e = 1 per step saturates at i_max. Row 1: no measurement.
    np.testing.assert_allclose(cmd, [[1.3], [1.0]])
    pid.reset(np.array([True, False]))
    cmd = np.array([[1.0], [1.0]])
    pid.apply(cmd, np.array([[0.9], [0.9]]), np.array([True, False]))
    np.testing.assert_allclose(cmd, [[1.1], [1.0]])  # integral restarted; row 1 inactive


def test_gate_reclamps_the_compensated_command_and_does_not_count_it_as_clamp():
    pid = PidCompensator(kp=[1.0, 1.0], ki=0.0, kd=0.0, dt=0.1)
    gate = SafetyGate(LIMITS, 'position', 0.1, pid=pid)
    gate.filter(np.array([[0.0, 0.0]]), state_position=np.zeros(2))
    # a: target 0.1 (within 0.2/step), measured 0.0 -> 0.2: still within the step limit.
    # b: target 0.9, measured 0.0 -> 1.8, re-clamped to the hard range 1.0 (a clamp).
    r = gate.filter(np.array([[0.1, 0.9]]), measured=np.array([[0.0, 0.0]]))
    np.testing.assert_allclose(r.command, [[0.2, 1.0]])
    assert r.clamped_mask.tolist() == [True] and gate.joint_clamps.tolist() == [0, 1]
    # a: target 0.3, measured 0.1 -> 0.5, but only 0.2 per step from the last 0.2: 0.4.
    r = gate.filter(np.array([[0.3, 0.5]]), measured=np.array([[0.1, 0.5]]))
    np.testing.assert_allclose(r.command, [[0.4, 0.5]])
    # Without a measurement nothing is compensated and nothing is counted as clamped.
    r = gate.filter(np.array([[0.45, 0.5]]))
    np.testing.assert_allclose(r.command, [[0.45, 0.5]])
    assert not r.clamped_mask.any() and gate.pid_rows == 2


@pytest.mark.parametrize('seed', range(3))
def test_compensated_commands_never_leave_the_limits(seed):
    rng = np.random.default_rng(seed)
    gate = SafetyGate(LIMITS, 'position', 0.1, pid=PidCompensator([5.0, 5.0], 2.0, 0.5, 0.1))
    last = None
    for _ in range(50):
        m = rng.normal(0, 3, (4, 2))
        r = gate.filter(rng.normal(0, 3, (4, 2)), state_position=m, measured=m)
        assert np.all(r.command >= -1.0) and np.all(r.command <= 1.0)
        if last is not None:
            assert np.all(np.abs(r.command[:, 0] - last[:, 0]) <= 0.2 + 1e-12)
        last = r.command.copy()


def test_pid_config_errors_name_the_key(tmp_path):
    import yaml
    path = tmp_path / 'l.yaml'
    path.write_text(yaml.safe_dump(LIMITS.to_dict()))
    flat = {'joint_limits_file': str(path), 'joint_names': ['a', 'b'], 'dt': 0.1,
            'pid_kp': [1.0, 2.0, 3.0]}
    with pytest.raises(ValueError, match='pid_kp'):
        build_gate(spec(**flat))
    flat.update(pid_kp=[1.0], interface='velocity')
    with pytest.raises(ValueError, match='position'):
        build_gate(spec(**flat))
    with pytest.raises(ValueError, match='kd'):
        PidCompensator(1.0, 0.0, -1.0, 0.1, n_joints=2)


@pytest.mark.parametrize('key, value', [('safety.pid_kp', [1.0, -2.0]),
                                        ('safety.rt_mode', 'fiber'),
                                        ('safety.lookahead_model', 'jerk'),
                                        ('safety.pid_gain', [1.0])])
def test_config_keys_are_checked_with_their_names(key, value):
    from unilab_core.config import ConfigError, load_run_config
    with pytest.raises(ConfigError, match=key.split('.')[1]):
        load_run_config(overrides={key: value})
    cfg = load_run_config()
    assert cfg.safety.rt_mode == 'auto' and cfg.safety.pid_kp == []
