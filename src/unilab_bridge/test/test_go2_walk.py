# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""go2_walk: what the actor observes, the motor path, commands and the randomised world."""

import mujoco
import numpy as np
import pytest
from unilab_bridge.tasks import make_task, observation
from unilab_bridge.tasks.go2_walk import (ACTION_SCALE, EXTRAS_NAMES, Go2Walk, HOME,
                                          PRIVILEGED_NAMES)
from unilab_bridge.tasks.terrain import RoughTerrain, TERRAIN
from unilab_core.actuator import DEFAULT_KD, DEFAULT_KP

#: What a real Go2 gives a policy through ROS 2: /joint_states (position, velocity),
#: /imu/data (angular velocity; orientation -> the gravity direction in the trunk frame),
#: /cmd_vel (the command). Nothing else may reach the actor.
MEASURABLE = ('joint_position', 'joint_velocity', 'imu_gyro_', 'projected_gravity_',
              'command_')
#: unitree_rl_gym go2_config default_joint_angles, by joint name.
UNITREE_DEFAULTS = {'FL_hip_joint': 0.1, 'RL_hip_joint': 0.1, 'FR_hip_joint': -0.1,
                    'RR_hip_joint': -0.1, 'FL_thigh_joint': 0.8, 'RL_thigh_joint': 1.0,
                    'FR_thigh_joint': 0.8, 'RR_thigh_joint': 1.0, 'FL_calf_joint': -1.5,
                    'RL_calf_joint': -1.5, 'FR_calf_joint': -1.5, 'RR_calf_joint': -1.5}


@pytest.fixture(scope='module')
def task():
    with Go2Walk(16, seed=3) as t:
        t.reset()
        yield t


def test_the_actor_observes_only_what_a_real_go2_measures(task):
    state = task.reset()
    obs = observation(state, task)
    assert obs.shape == (16, 2 * 12 + len(EXTRAS_NAMES) + len(PRIVILEGED_NAMES))
    assert obs.shape == (16, task.obs_dim)
    assert task.extras_dim == len(task.extras_names) == state.extras.shape[1]
    # The extras the actor reads: everything before the critic's privileged columns.
    private = task.critic_only_extras
    assert private == len(PRIVILEGED_NAMES) and task.extras_names[-private:] == PRIVILEGED_NAMES
    actor_names = task.extras_names[:-private]
    for name in actor_names:
        assert name.startswith(MEASURABLE), f'{name} is not measured by a real Go2'
    for banned in ('lin_vel', 'height', 'contact', 'friction', 'payload', 'push'):
        assert not any(banned in n for n in actor_names)
    # The extras are the columns they say they are: gravity points down when standing,
    # the command columns are the command.
    g = state.extras[:, 3:6]
    assert np.all(g[:, 2] < -0.95)
    np.testing.assert_allclose(state.extras[:, 6:9], task._cmd, atol=1e-6)


def test_joint_order_is_the_model_s_and_the_default_pose_is_unitree_s_by_name(task):
    assert task.joint_names == [f'{leg}_{part}_joint' for leg in ('FL', 'FR', 'RL', 'RR')
                                for part in ('hip', 'thigh', 'calf')]
    for name, offset in zip(task.joint_names, task.action_offset):
        assert offset == pytest.approx(UNITREE_DEFAULTS[name])
    assert task.action_scale == (ACTION_SCALE,) * 12 and task.action_mode == 'offset'
    # Targets are the PD's: they may lie beyond the joint's range by as far as the PD
    # needs to reach the motor's torque limit (kp 20: 23.7 / 20 = 1.185 rad for hip and
    # thigh, 45.43 / 20 = 2.2715 rad for the calf), and the gate's limits say so.
    m = task.model
    for k, name in enumerate(task.joint_names):
        reach = 45.43 / 20 if 'calf' in name else 23.7 / 20
        lo, hi = m.jnt_range[m.joint(name).id]
        np.testing.assert_allclose((task.action_low[k], task.action_high[k]),
                                   (lo - reach, hi + reach))
        assert task.joint_limits[name]['min_position'] == pytest.approx(lo - reach)
        assert task.joint_limits[name]['max_position'] == pytest.approx(hi + reach)


def test_torques_come_from_the_motor_pd_within_the_motor_limits():
    with Go2Walk(4, seed=0, max_delay_s=0.0, ranges={'motor_strength': (1.0, 1.0),
                                                     'push_interval_s': 0.0}) as t:
        t.reset()
        q0, qd0 = t.sim.qpos.copy(), t.sim.qvel.copy()
        target = np.tile(HOME, (4, 1)) + 0.3
        t._target[:] = np.clip(target, t.action_low, t.action_high)
        tau = t._motor(q0, qd0).copy()
        by_hand = DEFAULT_KP * (t._target - q0) - DEFAULT_KD * qd0
        limit = t.pd.limits.torque_limit
        np.testing.assert_allclose(tau, np.clip(by_hand, -limit, limit), rtol=1e-12)
        # A full control step: what the physics applied stays within the motors' limits.
        state = t.step(target)
        assert np.all(np.abs(state.joint_effort) <= limit + 1e-9)


def test_a_command_delay_holds_the_old_target_for_its_ticks():
    with Go2Walk(2, seed=0, ranges={'push_interval_s': 0.0}) as t:
        t.reset()
        t.delay.reset([0, 1], np.tile(HOME, (2, 1)), ticks=[0, 4])  # 0 and 20 ms
        t._target[:] = HOME + 0.2
        q, qd = t.sim.qpos.copy(), t.sim.qvel.copy()
        tau = t._motor(q, qd).copy()
        assert not np.allclose(tau[0], tau[1])  # env 0 acts on the new target at once
        expected_1 = np.clip(DEFAULT_KP * (HOME - q[1]) - DEFAULT_KD * qd[1],
                             -t.pd.limits.torque_limit, t.pd.limits.torque_limit)
        np.testing.assert_allclose(tau[1] / t.domain.strength[1], expected_1, rtol=1e-9)


def test_each_randomisation_lands_inside_its_range():
    with Go2Walk(64, seed=1) as t:
        t.reset()
        r, d = t.ranges, t.domain
        assert np.all((d.friction >= r.friction[0]) & (d.friction <= r.friction[1]))
        assert np.all((d.payload >= r.payload_kg[0]) & (d.payload <= r.payload_kg[1]))
        assert np.all(np.abs(d.com_shift) <= np.asarray(r.com_shift_m))
        assert np.all((d.strength >= r.motor_strength[0]) & (d.strength <= r.motor_strength[1]))
        assert 0 < d.rough.sum() < 64  # both kinds of ground
        assert np.all(t.delay.ticks <= t.delay.max_ticks) and t.delay.max_ticks == 4
        assert len(set(t.delay.ticks.tolist())) > 1
        base = t.model.body('base').id
        terrain = t.model.geom(TERRAIN).id
        for i in range(64):
            m = t.sim.models[i]
            # MuJoCo takes the larger friction of two geoms: every geom carries the draw.
            assert np.all(m.geom_friction[:, 0] == d.friction[i])
            assert m.body_mass[base] == pytest.approx(t.model.body_mass[base] + d.payload[i])
            assert m.geom_conaffinity[terrain] == int(d.rough[i])
        # Values spread over their ranges (not one value repeated).
        assert d.friction.max() - d.friction.min() > 0.5
        assert d.payload.max() - d.payload.min() > 2.0


def test_observation_noise_is_within_legged_gym_scales_and_rewards_see_the_truth():
    with Go2Walk(8, seed=2) as noisy, Go2Walk(8, seed=2, obs_noise=0.0) as clean:
        a, b = noisy.reset(), clean.reset()
        dq = np.abs(a.joint_position - b.joint_position)
        assert 0 < dq.max() <= 0.01
        assert 0 < np.abs(a.joint_velocity - b.joint_velocity).max() <= 1.5
        assert 0 < np.abs(a.extras[:, :3] - b.extras[:, :3]).max() <= 0.2 + 1e-6
        np.testing.assert_array_equal(a.extras[:, 6:], b.extras[:, 6:])  # commands exact


def test_pushes_change_the_trunk_velocity_on_their_interval():
    with Go2Walk(2, seed=0, ranges={'push_interval_s': 0.1, 'push_velocity': 0.5}) as t:
        t.reset()
        assert t.domain.push_every == 5
        v_before = None
        for k in range(6):
            if k == 5:
                v_before = t.sim.root_linvel[:, :2].copy()
            t.step(np.tile(HOME, (2, 1)))
        assert np.all(t.domain.pushes == 1)
        assert np.all(np.abs(t.sim.root_linvel[:, :2] - v_before).max(axis=1) > 0.05)


def test_commands_resample_within_an_episode_and_some_are_stand_still():
    with Go2Walk(64, seed=4, resample_s=0.2, curriculum=False) as t:
        t.reset()
        first = t._cmd.copy()
        seen_zero = np.all(first == 0, axis=1).sum()
        for _ in range(t.resample_steps):
            t.step(np.tile(HOME, (64, 1)))
        assert np.mean(np.any(t._cmd != first, axis=1)) > 0.8
        seen_zero += np.all(t._cmd == 0, axis=1).sum()
        assert seen_zero > 0  # stand-still commands are drawn
        assert np.all(np.abs(t._cmd[:, 0]) <= 1.0) and np.all(np.abs(t._cmd[:, 1]) <= 0.5)
        assert np.all(np.abs(t._cmd[:, 2]) <= 1.0)


def test_the_curriculum_starts_narrow_and_widens_when_tracking_is_good():
    with Go2Walk(16, seed=5, resample_s=0.04) as t:
        t.reset()
        start = t.curriculum_level
        assert start < 1.0
        assert np.all(np.abs(t._cmd[:, 0]) <= start + 1e-9)
        for _ in range(t.resample_steps):  # the level is checked once per resample period
            t._track_ema = 1.0  # as if tracking were perfect
            t.step(np.tile(HOME, (16, 1)))
        assert t.curriculum_level > start


def test_fixed_commands_for_evaluation_are_kept_exactly():
    with Go2Walk(4, seed=0, command_vx=(0.5, 0.5), command_vy=(0.0, 0.0),
                 command_yaw=(0.3, 0.3), stand_share=0.0, curriculum=False) as t:
        t.reset()
        np.testing.assert_array_equal(t._cmd, np.tile([0.5, 0.0, 0.3], (4, 1)))


def test_standing_at_home_on_flat_ground_survives_and_records_its_drift():
    with Go2Walk(4, seed=0, max_episode_steps=100, command_vx=(0, 0), command_vy=(0, 0),
                 command_yaw=(0, 0), terrain=False, obs_noise=0.0,
                 ranges={'push_interval_s': 0.0, 'payload_kg': (0.0, 0.0)}) as t:
        t.reset()
        for _ in range(100):
            t.step(np.tile(HOME, (4, 1)))
        stats = list(t.episode_stats)
        assert len(stats) == 4 and all(s['survived'] for s in stats)
        assert all(s['drift'] is not None and s['drift'] < 0.2 for s in stats)
        assert all(s['vx_error'] is not None for s in stats)


def test_a_fall_ends_the_episode():
    with Go2Walk(1, seed=0, terrain=False) as t:
        t.reset()
        d = t.sim.data[0]
        d.qpos[3:7] = (np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0)  # rolled 90 deg
        mujoco.mj_forward(t.sim.models[0], d)
        t.sim.read_env(0)
        state = t.step(np.tile(HOME, (1, 1)))
        assert state.terminated[0]
        assert t.episode_stats[-1]['survived'] is False


def test_registry_builds_go2_walk_and_the_terrain_is_a_fixed_layout():
    with make_task('go2_walk', 2, seed=0) as t:
        assert isinstance(t, Go2Walk)
    a, b = RoughTerrain().heights(), RoughTerrain().heights()
    np.testing.assert_array_equal(a, b)
    assert a.min() == 0.0 and 0.03 < a.max() <= 0.05


def test_go2_forward_is_go2_walk_with_forward_commands_only_on_flat_ground():
    with make_task('go2_forward', 32, seed=1) as f, make_task('go2_walk', 32, seed=1) as w:
        assert f.name == 'go2_forward' and isinstance(f, Go2Walk)
        # The same spaces: a policy trained on one continues on the other.
        assert (f.obs_dim, f.action_dim, f.extras_names, f.joint_names) == \
            (w.obs_dim, w.action_dim, w.extras_names, w.joint_names)
        assert f.action_offset == w.action_offset and f.joint_limits == w.joint_limits
        f.reset()
        for _ in range(3):
            assert np.all((f._cmd[:, 0] >= 0.5) & (f._cmd[:, 0] <= 1.0))
            assert np.all(f._cmd[:, 1:] == 0.0)
            f._resample(np.arange(32))
        assert not f.domain.rough.any() and f.model.nhfield == 0


def test_a_command_schedule_replaces_the_random_commands_in_turn():
    schedule = [[0.1, 0.5, 0.0, 0.0], [0.06, 0.0, 0.0, 0.8]]  # 5 steps, then 3 steps
    with Go2Walk(2, seed=0, command_schedule=schedule) as t:
        t.reset()
        assert not t.curriculum
        seen = [t._cmd[0].tolist()]
        for _ in range(9):
            t.step(np.tile(HOME, (2, 1)))
            seen.append(t._cmd[0].tolist())
        assert seen[:5] == [[0.5, 0.0, 0.0]] * 5
        assert seen[5:8] == [[0.0, 0.0, 0.8]] * 3
        assert seen[8] == [0.5, 0.0, 0.0]  # cycled
    for bad in ([[0.0, 0.5, 0.0, 0.0]], [[1.0, 0.5]], [], [[1.0, float('nan'), 0, 0]]):
        with pytest.raises(ValueError, match='command_schedule'):
            Go2Walk(1, command_schedule=bad)


def test_the_critic_s_privileged_columns_are_simulator_truth():
    # The columns themselves; that the actor's network never reads them:
    # unilab_bringup/test/test_critic_only.py.
    with Go2Walk(4, seed=0, terrain=False) as t:
        state = t.reset()
        lin, _, _ = t._base_frame()
        np.testing.assert_allclose(state.extras[:, 9:12], lin, atol=1e-6)  # exact, no noise
        assert np.all(state.extras[:, 12] > 0.25)  # standing height above the floor
        assert np.all(state.extras[:, 13:17] == 1.0)  # four feet down at the start
