# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""DisturbedTask on the real arm model: command path, state path, model terms, logging."""

import numpy as np
from pydantic import ValidationError
import pytest
from unilab_bridge.tasks import make_task
from unilab_bridge.tasks.arm6_reach import Arm6Reach
from unilab_bridge.tasks.disturbed import DisturbedTask
from unilab_core.config import DisturbancesSection

OFF = {'imu': {'enabled': False}, 'encoder': {'enabled': False},
       'actuator': {'enabled': False}, 'network': {'enabled': False},
       'dynamics': {'enabled': False}}


def _cfg(**blocks):
    data = {'enabled': True, **{k: dict(v) for k, v in OFF.items()}}
    for k, v in blocks.items():
        data[k] = {'enabled': True, **v}
    return data


def _rollout(task, steps, seed=3):
    rng = np.random.default_rng(seed)
    out = [task.reset(seed=0).joint_position]
    for _ in range(steps):
        out.append(task.step(rng.uniform(-0.5, 0.5, (task.num_envs, 6))).joint_position)
    return np.array(out)


def test_off_by_default_returns_the_plain_task():
    assert isinstance(make_task('arm6_reach', 1, disturbances={}), Arm6Reach)
    assert isinstance(make_task('arm6_reach', 1), Arm6Reach)


def test_same_seed_same_trajectory_with_every_term_on():
    cfg = {'enabled': True, 'network': {'action_drop_prob': 0.1, 'observation_drop_prob': 0.1},
           'actuator': {'jitter_prob': 0.3}}
    runs = []
    for _ in range(2):
        task = make_task('arm6_reach', 3, seed=5, disturbances=cfg, max_episode_steps=10)
        assert isinstance(task, DisturbedTask)
        runs.append(_rollout(task, 25))
        task.close()
    np.testing.assert_array_equal(runs[0], runs[1])
    with make_task('arm6_reach', 3, seed=5, max_episode_steps=10) as plain:
        assert not np.allclose(_rollout(plain, 25), runs[0])


def test_dropped_action_is_not_applied_last_one_held():
    task = make_task('arm6_reach', 2, disturbances=_cfg(
        network={'action_drop_prob': 1.0, 'observation_delay_steps': [0, 0]}))
    task.reset(seed=0)
    first = np.full((2, 6), 0.3)
    task.step(first)  # the first packet of an episode is always delivered
    for _ in range(3):
        task.step(np.full((2, 6), -0.3))
        np.testing.assert_allclose(task.sim.data[0].ctrl, first[0])
    assert task.current_params(0)['actions_dropped'] == 3


def test_action_delay_applies_the_command_of_k_steps_ago():
    task = make_task('arm6_reach', 2, disturbances=_cfg(actuator={
        'delay_steps': [2, 2], 'kp_scale': [1, 1], 'kd_scale': [1, 1]}))
    task.reset(seed=0)
    held = task.sim.data[1].ctrl.copy()
    cmds = [np.full((2, 6), 0.1 * (k + 1)) for k in range(5)]
    for k, c in enumerate(cmds):
        task.step(c)
        expected = held if k < 2 else cmds[k - 2][1]
        np.testing.assert_allclose(task.sim.data[1].ctrl, expected)


def test_gain_and_dynamics_scaling_written_to_per_env_models():
    task = make_task('arm6_reach', 2, disturbances=_cfg(
        actuator={'delay_steps': [0, 0], 'kp_scale': [2, 2], 'kd_scale': [0.5, 0.5]},
        dynamics={'mass_scale': [1.5, 1.5], 'damping_scale': [3, 3], 'push_interval_s': 0}))
    task.reset(seed=0)
    nominal, m = task.inner.model, task.sim.models[1]
    assert m is not nominal
    np.testing.assert_allclose(m.actuator_gainprm[:, 0], 2 * nominal.actuator_gainprm[:, 0])
    np.testing.assert_allclose(m.actuator_biasprm[:, 1], 2 * nominal.actuator_biasprm[:, 1])
    np.testing.assert_allclose(m.actuator_biasprm[:, 2], 0.5 * nominal.actuator_biasprm[:, 2])
    np.testing.assert_allclose(m.body_mass, 1.5 * nominal.body_mass)
    np.testing.assert_allclose(m.dof_damping, 3 * nominal.dof_damping)


def test_pushes_kick_joint_velocities_at_the_interval():
    task = make_task('arm6_reach', 2, disturbances=_cfg(dynamics={
        'mass_scale': [1, 1], 'friction_scale': [1, 1], 'damping_scale': [1, 1],
        'push_interval_s': 0.04, 'push_velocity': 1.0}))  # every 2 control steps
    task.reset(seed=0)
    for _ in range(5):
        task.step(np.zeros((2, 6)))
    assert task.current_params(0)['pushes'] == 2


def test_encoder_offset_and_episode_log():
    task = make_task('arm6_reach', 2, seed=1, max_episode_steps=4, disturbances=_cfg(
        encoder={'position_noise': 0.0, 'velocity_noise': 0.0, 'position_offset': 0.05}))
    state = task.reset(seed=1)
    raw = task.inner._batch.qpos
    np.testing.assert_allclose(state.joint_position - raw, task.encoder.offset)
    for _ in range(4):
        task.step(np.zeros((2, 6)))
    log = task.pop_episode_log()
    assert [r['env'] for r in log] == [0, 1]
    assert log[0]['length'] == 4 and len(log[0]['encoder_offset']) == 6
    assert task.pop_episode_log() == []


def test_unsupported_terms_are_noted_for_gym_tasks():
    pytest.importorskip('gymnasium')
    task = make_task('InvertedPendulum-v5', 1, disturbances={'enabled': True})
    try:
        assert any('dynamics' in n for n in task.notes)
        assert task.domain is None
        task.reset(seed=0)
        task.step(np.zeros((1, task.action_dim)))
    finally:
        task.close()


@pytest.mark.parametrize('bad, key', [
    ({'network': {'action_drop_prob': -0.1}}, 'network.action_drop_prob'),
    ({'imu': {'gyro_noise_density': -1.0}}, 'imu.gyro_noise_density'),
    ({'actuator': {'delay_steps': [3, 1]}}, 'actuator.delay_steps'),
    ({'dynamics': {'mass': [1, 2]}}, 'dynamics.mass'),
])
def test_bad_config_names_the_key(bad, key):
    with pytest.raises(ValidationError, match=key.replace('.', r'\.')):
        DisturbancesSection.model_validate(bad)
