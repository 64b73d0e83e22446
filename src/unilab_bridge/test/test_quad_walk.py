# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""quad_walk and quad12_walk: contract, falls terminate, time-outs truncate, determinism."""

import numpy as np
import pytest
from unilab_bridge.tasks import available_tasks, make_task, observation
from unilab_bridge.tasks.quad12_walk import Quad12Walk
from unilab_bridge.tasks.quad_walk import EXTRAS_DIM, HOME, quat_rotate_inverse

#: Both quadrupeds: (task, standing pose); the tests below hold for each.
QUADS = pytest.mark.parametrize('name,home', [('quad_walk', HOME),
                                              ('quad12_walk', Quad12Walk.HOME)])


@QUADS
def test_registered_with_the_batched_task_contract(name, home):
    assert name in available_tasks()
    with make_task(name, 3, seed=0) as task:
        s = task.reset(seed=0)
        assert task.action_dim == home.size
        assert task.obs_dim == 2 * home.size + EXTRAS_DIM
        assert observation(s, task).shape == (3, task.obs_dim)
        assert set(task.joint_limits) == set(task.joint_names)
        assert all(lim['has_velocity_limits'] for lim in task.joint_limits.values())
        # Starts upright: gravity along -z of the trunk.
        np.testing.assert_allclose(s.extras[:, 6:9], [[0, 0, -1]] * 3, atol=1e-6)


@QUADS
def test_holding_home_survives_and_truncates(name, home):
    with make_task(name, 2, seed=0, max_episode_steps=50) as task:
        task.reset(seed=0)
        for k in range(50):
            s = task.step(np.tile(home, (2, 1)))
            assert not s.terminated.any()
        assert s.truncated.all() and np.all(s.episode_length == 50)


@QUADS
def test_flailing_falls_and_terminates(name, home):
    with make_task(name, 8, seed=0) as task:
        task.reset(seed=0)
        rng = np.random.default_rng(0)
        fell = False
        for _ in range(200):
            s = task.step(rng.uniform(task.action_low, task.action_high, (8, home.size)))
            fell |= bool(s.terminated.any())
            assert not s.truncated.any()
        assert fell


@QUADS
def test_same_seed_same_trajectory(name, home):
    def run():
        with make_task(name, 2, seed=4) as task:
            task.reset(seed=4)
            rng = np.random.default_rng(1)
            return np.array([task.step(home + rng.normal(0, 0.3, (2, home.size))).extras
                             for _ in range(30)])
    np.testing.assert_array_equal(run(), run())


def test_quat_rotate_inverse_matches_matrix():
    import mujoco
    rng = np.random.default_rng(0)
    q = rng.normal(size=(5, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    v = rng.normal(size=(5, 3))
    for i in range(5):
        mat = np.zeros(9)
        mujoco.mju_quat2Mat(mat, q[i])
        np.testing.assert_allclose(quat_rotate_inverse(q[i:i + 1], v[i:i + 1])[0],
                                   mat.reshape(3, 3).T @ v[i], atol=1e-12)


@QUADS
def test_commands_cover_forward_and_yaw_and_episodes_report_tracking(name, home):
    with make_task(name, 4, seed=1, max_episode_steps=20) as task:
        s = task.reset(seed=1)
        cmd = s.extras[:, 9:11]
        assert np.all((cmd[:, 0] >= 0.0) & (cmd[:, 0] <= 0.8))
        assert np.all(np.abs(cmd[:, 1]) <= 0.5) and np.any(cmd[:, 1] != 0.0)
        for _ in range(20):
            s = task.step(np.tile(home, (4, 1)))
        stats = list(task.episode_stats)
        assert len(stats) == 4 and all(st['survived'] and st['length'] == 20 for st in stats)
        # Standing still: the forward error is about the commanded speed itself.
        for st, c in zip(stats, cmd):
            assert st['command_vx'] == c[0]
            assert abs(st['vx_error'] - c[0]) < 0.2  # settling into the stance moves it a little


@QUADS
def test_the_default_action_map_is_legged_gyms_scaled_targets_around_home(name, home):
    with make_task(name, 1, seed=0) as task:
        assert task.action_mode == 'offset'
        np.testing.assert_allclose(task.action_offset, home)
        assert set(task.action_scale) == {0.25}


def test_quad12_places_its_feet_sideways_with_the_abduction_joints():
    import mujoco
    with make_task('quad12_walk', 1, seed=0) as task:
        assert [n for n in task.joint_names if n.endswith('_abad')] == [
            'fl_abad', 'fr_abad', 'hl_abad', 'hr_abad']
        model = task.sim.models[0]
        foot, abad = model.geom('fl_foot').id, task.joint_names.index('fl_abad')

        def foot_y(q):  # the foot's y in the trunk frame (trunk at the origin, level)
            data = mujoco.MjData(model)
            data.qpos[3] = 1.0
            data.qpos[task._qpos_adr] = q
            mujoco.mj_kinematics(model, data)
            return data.geom_xpos[foot, 1]
        out = task.HOME.copy()
        out[abad] = 0.4  # abduction about +x: the left front foot swings out to +y
        assert foot_y(out) > foot_y(task.HOME) + 0.1
        # The position actuator takes the joint there while the robot stands.
        task.reset(seed=0)
        for _ in range(25):
            s = task.step(out[None])
        assert abs(s.joint_position[0, abad] - 0.4) < 0.05 and not s.terminated.any()
