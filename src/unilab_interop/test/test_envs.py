# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Our tasks as rsl_rl and gymnasium environments: shapes, gate, time-outs, env checker."""

import gymnasium
from gymnasium.utils.env_checker import check_env
import numpy as np
import pytest
from rsl_rl.env import VecEnv
import torch
import unilab_interop
from unilab_interop.vecenv import make_vec_env, OBS_GROUPS


@pytest.fixture(scope='module')
def env(tmp_path_factory):
    e = make_vec_env('arm6_reach', 4, 0, tmp_path_factory.mktemp('env'))
    yield e
    e.close()


def test_observations_are_rsl_rl_groups_of_the_task_observation(env):
    assert isinstance(env, VecEnv)
    obs = env.get_observations()
    assert set(obs.keys()) == {'policy', 'critic'} == {g for v in OBS_GROUPS.values()
                                                       for g in v}
    assert obs['policy'].shape == (4, env.task.obs_dim)
    # The observation leads with the joint positions (arm6_reach: q, qd, extras).
    np.testing.assert_allclose(obs['policy'][:, :6].numpy(),
                               env.state.joint_position.astype(np.float32))


def test_zero_action_holds_the_measured_pose_through_the_gate(env):
    # arm6_reach acts relative to the measured joints: action 0 commands q itself.
    q = env.state.joint_position.copy()
    np.testing.assert_allclose(env.commands(np.zeros((4, 6), np.float32)), q, atol=1e-6)


def test_a_large_action_is_limited_by_the_gate(env):
    q = env.state.joint_position.copy()
    raw = env.action_map.command(env._obs, np.full((4, 6), 100.0, np.float32))
    gated = env.commands(np.full((4, 6), 100.0, np.float32))
    assert np.all(np.abs(gated - q) < np.abs(raw - q))  # the gate clamped every joint


def test_episodes_end_in_time_outs_that_rsl_rl_bootstraps(tmp_path):
    e = make_vec_env('arm6_reach', 2, 0, tmp_path)
    try:
        limit = e.max_episode_length
        for t in range(limit):
            _, rew, dones, extras = e.step(torch.zeros(2, 6))
            assert rew.shape == (2,) and dones.shape == (2,)
            if t < limit - 1:
                assert not dones.any()
        # The time limit truncates: every env is done and every done is a time-out.
        assert dones.all() and extras['time_outs'].all()
        assert int(e.episode_length_buf.max()) == 0
    finally:
        e.close()


@pytest.mark.parametrize('gym_id', sorted(unilab_interop.GYM_IDS))
def test_gymnasium_env_checker_passes(gym_id):
    env = gymnasium.make(gym_id)
    try:
        check_env(env.unwrapped, skip_render_check=True)
        obs, _ = env.reset(seed=5)
        assert env.observation_space.contains(obs)
        obs2, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs2) and np.isfinite(reward)
    finally:
        env.close()


def test_the_action_history_is_kept_as_our_actor_keeps_it(tmp_path):
    # go2_walk's preset appends the last command (model.action_history 1): the rsl_rl side
    # sees it too, started from the measured joints and then the commands sent.
    from unilab_policy.history import ActionHistory
    e = make_vec_env('go2_walk', 3, 0, tmp_path)
    try:
        # The actor's group: the task's observation less its privileged columns (the
        # critic's only), then the history; the critic's group has everything.
        private = e.task.critic_only_extras
        assert e.history.length == 1 and e.obs_dim == e.task.obs_dim - private + 12
        groups = e.get_observations()
        obs = groups['policy'].numpy()
        assert obs.shape == (3, e.obs_dim)
        assert groups['critic'].shape == (3, e.task.obs_dim + 12)
        np.testing.assert_array_equal(obs[:, :-12], groups['critic'].numpy()[:, :-12 - private])
        np.testing.assert_allclose(obs[:, -12:], obs[:, :12])  # the fill: measured joints
        actions = np.full((3, 12), 0.4, np.float32)
        sent = np.clip(e.action_map.command(e._obs, actions), e.task.action_low,
                       e.task.action_high)
        obs2 = e.step(torch.from_numpy(actions))[0]['policy'].numpy()
        done = e.state.terminated | e.state.truncated
        np.testing.assert_allclose(obs2[~done, -12:], sent[~done].astype(np.float32))
        # The same bookkeeping as the actor's own history object.
        ours = ActionHistory(3, 12, 1, e.task.action_low, e.task.action_high)
        ours.push(sent)
        np.testing.assert_allclose(obs2[~done, -12:], ours.buf[~done, 0])
    finally:
        e.close()
