# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The UR5e model and ur5e_reach against the maker's DH data (``ur5e_dh``), not our models."""

import itertools
import pathlib

import mujoco
import numpy as np
import pytest
import unilab_bridge
from unilab_bridge.robot_contract import (check_contract, contract_ok, format_report,
                                          GraphSnapshot, profile_contract)
from unilab_bridge.tasks import available_tasks, make_task
from unilab_bridge.tasks.reach_expert import JacobianReachController
from unilab_bridge.tasks.ur5e_reach import ASSET
from unilab_core.kinematics import compare_with_urdf
from unilab_core.robot_profile import load_profile
from ur5e_dh import dh_flange, HOME, JOINTS, ur5e_urdf

ARM6 = pathlib.Path(unilab_bridge.__file__).parent / 'assets' / 'arm6.xml'
PROFILE = pathlib.Path(__file__).resolve().parents[2] / 'unilab_bringup' / 'config' / 'robots' / \
    'ur5e.yaml'


def _model_flange(model_file, q):
    model = mujoco.MjModel.from_xml_path(str(model_file))
    data = mujoco.MjData(model)
    site = model.site('ee_site').id
    data.qpos[[model.jnt_qposadr[model.joint(j).id] for j in JOINTS]] = q
    mujoco.mj_kinematics(model, data)
    return data.site_xpos[site].copy(), data.site_xmat[site].reshape(3, 3).copy()


def test_the_model_is_the_makers_kinematics_at_random_poses():
    rng = np.random.default_rng(7)
    for q in rng.uniform(-np.pi, np.pi, size=(20, 6)):
        pos, rot = _model_flange(ASSET, q)
        want = dh_flange(q)
        assert np.linalg.norm(pos - want[:3, 3]) < 1e-3, q
        assert np.abs(rot - want[:3, :3]).max() < 1e-6, q  # the flange's orientation too


def test_ur_zeros_stretch_the_arm_out_and_home_holds_the_tool_over_the_table():
    # Hand-computed from the DH table: at q = 0 the flange is a2 + a3 = 0.8172 m out
    # (forward in base_link), d4 + d6 = 0.2329 m aside, d1 - d5 = 0.0628 m up.
    pos, _ = _model_flange(ASSET, np.zeros(6))
    np.testing.assert_allclose(pos, [0.8172, 0.2329, 0.0628], atol=1e-6)
    # Home: upper arm up, forearm forward, flange pointing down above the table.
    pos, rot = _model_flange(ASSET, HOME)
    assert 0.4 < pos[0] < 0.6 and pos[2] > 0.4
    np.testing.assert_allclose(rot[:, 2], [0, 0, -1], atol=1e-2)


def test_the_convention_check_passes_the_makers_model_and_fails_arm6s_zeros():
    ok = compare_with_urdf(str(ASSET), ur5e_urdf(), JOINTS)
    assert ok.ok and 'tool0' in ok.frames and ok.max_error_m < 1e-6
    # arm6 has UR5e link lengths but other zeros (UR(q + (0, -pi/2, pi/2, 0, 0, 0)) ~ arm6(q)).
    wrong = compare_with_urdf(str(ARM6), ur5e_urdf(), JOINTS)
    assert not wrong.ok and wrong.max_error_m > 0.1
    assert 'DISAGREE' in wrong.describe() and wrong.worst_frame in wrong.describe()


def _described_robot(profile):
    items = profile_contract(profile)
    snap = GraphSnapshot(
        types={i.topic: [i.msg_type] for i in items},
        publishers={i.topic: ['/driver'] for i in items if i.role == 'publish'},
        subscribers={i.topic: ['/controller'] for i in items if i.role == 'subscribe'},
        rates_hz={profile.joint_states_topic: 500.0},
        names={profile.joint_states_topic: list(JOINTS)}, window_s=1.0,
        robot_description=ur5e_urdf())
    results = check_contract(items, snap, profile)
    return results, format_report(results, snap)


def test_check_robot_compares_the_profiles_model_with_the_published_urdf():
    profile = load_profile(PROFILE)
    results, report = _described_robot(profile)
    assert contract_ok(results), report
    assert any(r.item.key == 'kinematics' and r.met for r in results), report
    # The same robot with arm6's model (the old profile): the check says so, by frame.
    results, report = _described_robot(profile.model_copy(update={'model_file': str(ARM6)}))
    assert not contract_ok(results)
    line = next(x for x in report.splitlines() if 'DISAGREE' in x)
    assert 'mm at q = (' in line and "joint zeros, axes or signs are not the robot's" in line
    assert report.splitlines()[-1] == 'robot NOT ok: kinematics'


def test_ur5e_reach_starts_near_home_with_goals_in_its_workspace():
    assert 'ur5e_reach' in available_tasks()
    with make_task('ur5e_reach', 16, seed=1) as task:
        assert task.joint_names == list(JOINTS)
        assert task.workspace == ((0.25, -0.4, 0.1), (0.65, 0.4, 0.5), 'base_link')
        np.testing.assert_allclose(task.home, HOME)
        state = task.reset(3)
        assert np.abs(state.joint_position - np.array(HOME)).max() <= task.reset_noise + 0.01
        goals = np.vstack([state.extras[:, 3:6], task.sample_targets(500)])
        low, high = np.array(task.workspace.low), np.array(task.workspace.high)
        assert np.all(goals >= low - 1e-6) and np.all(goals <= high + 1e-6)
        assert goals[:, 2].min() > 0.0  # above the mounting plane
        # UR5e speeds: 180 deg/s on every joint, the elbow's range +-pi.
        assert all(v['max_velocity'] == pytest.approx(np.pi) for v in task.joint_limits.values())
        assert task.joint_limits['elbow_joint']['max_position'] == pytest.approx(np.pi, 1e-4)


def test_half_of_the_ur5e_episodes_start_where_the_last_goal_left_the_arm():
    # As on a robot (and in `bench robot`), goal after goal without going home; arm6's
    # episodes all start at home (CHAINED_GOALS 0), so its training is unchanged.
    with make_task('ur5e_reach', 64, seed=2) as task, make_task('arm6_reach', 8) as arm6:
        assert task.CHAINED_GOALS == 0.5 and arm6.CHAINED_GOALS == 0.0
        task.reset(2)
        away = np.array(HOME) + [0.5, 0.2, -0.3, 0.0, 0.0, 0.0]  # a pose the arm goes to
        cmd = np.tile(away, (64, 1))
        for _ in range(task.max_episode_steps - 1):
            before = task.step(cmd)
        q_end, goal_end = before.joint_position, before.extras[:, 3:6]
        state = task.step(cmd)  # every episode ends here (time limit): the next begins
        assert state.truncated.all()
        goal = state.extras[:, 3:6]
        moved = np.abs(state.joint_position - q_end).max(axis=1)
        # Chained: the arm went on from where it was (one more step of motion), no jump
        # home; a new goal each. The others: back near home.
        chained = np.abs(state.joint_position - np.array(HOME)).max(axis=1) > 0.3
        assert np.all(np.abs(q_end - away).max(axis=1) < 0.05)  # every arm got there
        assert 16 <= chained.sum() <= 48
        assert np.all(moved[chained] < 0.05)
        assert np.all(np.linalg.norm(goal - goal_end, axis=1) > 1e-6)
        low, high = np.array(task.workspace.low), np.array(task.workspace.high)
        assert np.all(goal >= low - 1e-6) and np.all(goal <= high + 1e-6)


def test_the_ik_expert_reaches_every_corner_of_the_workspace():
    with make_task('ur5e_reach', 8, seed=0) as task:
        box = zip(task.workspace.low, task.workspace.high)
        corners = np.array(list(itertools.product(*box)))
        task.reset(0)
        for i, corner in enumerate(corners):  # each env's goal is one corner
            task._target[i] = corner
        expert = JacobianReachController(task.sim.model)
        q = task.sim.qpos.copy()
        extras = np.hstack([task.sim.site_pos[:, 0], corners, corners - task.sim.site_pos[:, 0]])
        for _ in range(task.max_episode_steps - 1):
            state = task.step(expert(q, extras))
            q, extras = state.joint_position, state.extras
        assert np.linalg.norm(extras[:, 6:9], axis=1).max() < 0.01


def test_the_ur5e_robot_double_runs_the_makers_model_in_its_real_variant():
    from unilab_bridge.robot_double import RobotDouble
    from unilab_bridge.tasks.disturbed import DisturbedTask
    double = RobotDouble(load_profile(PROFILE), robots=2, seed=4, variant='real')
    try:
        assert isinstance(double.task, DisturbedTask)  # heavier links, delays, drops
        assert double.task.inner.sim.model.nbody == mujoco.MjModel.from_xml_path(
            str(ASSET)).nbody
        rng = np.random.default_rng(0)
        for _ in range(30):
            double.command[:] = double.command + rng.uniform(-0.05, 0.05, size=(2, 6))
            double.state = double.task.step(double.command)
            for q, tool in zip(double.state.joint_position, double.state.extras[:, :3]):
                assert np.linalg.norm(tool - dh_flange(q)[:3, 3]) < 1e-3
    finally:
        double.close()


def test_tool_position_is_the_tool_site_of_the_last_step():
    from unilab_bridge.tasks.reach_reward import tool_position
    with make_task('arm6_reach', 3, seed=2) as task:
        task.reset(2)
        state = task.step(np.zeros((3, 6)) + task.home)
        np.testing.assert_allclose(tool_position(task), state.extras[:, 0:3], atol=1e-6)
    with make_task('quad_walk', 1, seed=0) as task:  # no reach: no tool
        task.reset(0)
        assert tool_position(task) is None
