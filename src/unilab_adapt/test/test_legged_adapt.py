# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Adapting a walking policy: its robot reward, success rule and the legged robot it acts on."""

import numpy as np
import pytest
from unilab_adapt.finetune import chunk_steps, score_versions
from unilab_adapt.legged_robot import LeggedRobot, WALK_COMMANDS
from unilab_adapt.robot_reward import robot_reward, WalkReward
from unilab_bridge.tasks import make_task, observation
from unilab_bridge.tasks.go2_walk import ACTION_SCALE, HOME
from unilab_bringup.paths import profile_path
from unilab_bringup.prepare import task_info
from unilab_core.robot_profile import load_profile


def test_the_walk_reward_is_the_training_rewards_measurable_part():
    """Recomputed from the observations, each measurable term is the one go2_walk paid."""
    rule = WalkReward()
    checked = 0
    with make_task('go2_walk', 2, seed=1, obs_noise=0.0, terrain=False) as task:
        assert rule.dt == pytest.approx(task.control_dt)
        state = task.reset(seed=1)
        rng = np.random.default_rng(0)
        for _ in range(25):
            obs = observation(state, task)
            prev = task._prev_action.copy()
            action = rng.normal(0.0, 0.5, (2, 12))
            state = task.step(HOME + ACTION_SCALE * action)
            paid = task.reward_terms
            got = rule.terms(obs, observation(state, task), action, prev)
            for env in np.flatnonzero(~state.done):
                for key in got:
                    assert got[key][env] == pytest.approx(paid[key][env], rel=1e-3, abs=1e-6), key
                checked += 1
    assert checked >= 40
    # Left out: torques, collisions, feet air time, joint-limit proximity.
    assert set(paid) - set(got) == {'torques', 'collision', 'feet_air_time', 'dof_pos_limits'}


def test_walk_success_is_a_segment_without_a_fall_and_a_fall_ends_for_good():
    """Segments end truncated (walked on) or terminated (a fall): success counts the former."""
    n, k = 12, 12
    width = 2 * n + 17
    obs = np.zeros((k, 1, width), np.float32)
    gravity = WalkReward.columns(n)['gravity']
    obs[:, 0, gravity] = [0.0, 0.0, -1.0]   # upright, standing
    obs[:, 0, WalkReward.columns(n)['height']] = 0.3
    # On a robot a fall ends nothing (a new command does): the trunk pitched 0.8 rad, past
    # the fall stop's bound (0.7), after step 9 fails the episode of steps 9-11.
    obs[10, 0, gravity] = [-np.sin(0.8), 0.0, -np.cos(0.8)]
    ends = {2: 'truncated', 5: 'terminated', 8: 'truncated', 11: 'truncated'}
    tensors = {'obs': obs, 'next_obs': obs[0], 'actions': np.zeros((k, 1, n), np.float32),
               'log_prob': np.zeros((k, 1)), 'values': np.zeros((k, 1)),
               'mu': np.zeros((k, 1, n)), 'sigma': np.ones((k, 1, n)),
               'terminated': np.zeros((k, 1)), 'truncated': np.zeros((k, 1))}
    for i, kind in ends.items():
        tensors[kind][i, 0] = 1.0
    steps = chunk_steps(tensors, 3, robot_reward('go2_walk'))
    assert steps.fell.tolist() == [i == 5 for i in range(k)]
    np.testing.assert_allclose(steps.distance[9], 0.8, atol=1e-6)   # the tilt after step 9
    score = score_versions(steps, robot_reward('go2_walk'))[3]
    # Complete episodes: steps 3-5 (fell), 6-8 (walked on), 9-11 (tilted past the bound).
    assert (score.episodes, score.successes) == (3, 1)
    # A robot whose fall stop allows 0.9 rad (its profile's legged.max_tilt_rad): walked on.
    assert score_versions(steps, robot_reward('go2_walk', max_tilt_rad=0.9))[3].successes == 2
    # Upright but down on the floor (the fall stop's damping after a stale input): a fall.
    obs[7, 0, WalkReward.columns(n)['height']] = 0.08
    steps = chunk_steps(tensors, 3, robot_reward('go2_walk'))
    assert steps.distance[6] == pytest.approx(np.pi)
    assert score_versions(steps, robot_reward('go2_walk'))[3].successes == 0
    with pytest.raises(ValueError, match='no reward computable on a robot'):
        robot_reward('quad12_walk')


@pytest.fixture(scope='module')
def go2():
    return load_profile(profile_path('go2')), task_info('go2_walk')[0]


def test_the_legged_robot_observes_as_perception_does_and_walks_segment_by_segment(go2):
    profile, info = go2
    robot = LeggedRobot(profile, info, 'slippery', seed=0, segment_s=0.4, shove_mps=0.0)
    state = robot.reset(seed=0)
    extras = state.extras[0]
    rule = WalkReward.columns(12)
    obs = observation(state, robot)[0]
    # Standing (pitched a few degrees at kp 20): gravity down the trunk's z; the first
    # segment's command.
    assert obs[rule['gravity']][2] < -0.98
    np.testing.assert_allclose(obs[rule['command']], WALK_COMMANDS[0], atol=1e-6)
    np.testing.assert_allclose(obs[rule['velocity']], robot.double.ground_truth().linvel,
                               atol=1e-5)
    assert extras[-4:].tolist() == [0.0] * 4   # no foot contacts, as perception sends
    assert robot.double.friction == pytest.approx(0.3)
    hold = np.asarray(HOME)[None]
    for i in range(20):
        state = robot.step(hold)
    assert bool(state.truncated[0]) and not state.terminated[0]
    assert len(robot.tally.segments) == 1 and not robot.tally.segments[0].fell
    np.testing.assert_allclose(observation(state, robot)[0][rule['command']], WALK_COMMANDS[1],
                               atol=1e-6)


def test_a_fall_latches_the_stop_ends_the_segment_terminated_and_the_robot_stands_again(go2):
    profile, info = go2
    robot = LeggedRobot(profile, info, 'slippery', seed=0, segment_s=5.0, shove_mps=0.0)
    robot.reset(seed=0)
    robot.double.push(0.0, 6.0)
    hold = np.asarray(HOME)[None]
    for _ in range(100):
        state = robot.step(hold)
        if state.done[0]:
            break
    assert bool(state.terminated[0]) and not state.truncated[0]
    assert robot.tally.segments[-1].fell and robot.tally.summary()['success'] == 0.0
    assert robot.starts == 2
    assert observation(state, robot)[0][WalkReward.columns(12)['gravity']][2] < -0.98
