# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The reach tasks' smoothness terms: the tool-speed hinge and the per-task scales."""

import mujoco
import numpy as np
import pytest
from unilab_bridge.tasks import make_task
from unilab_bridge.tasks.reach_reward import (LEAD_SOFT_RAD, reach_terms, REWARD_SCALES,
                                              TOOL_SPEED_SOFT_MPS)


def test_the_tool_speed_term_is_a_squared_hinge_above_the_soft_limit():
    n = 4
    zeros = np.zeros((n, 3))
    speed = np.array([0.0, TOOL_SPEED_SOFT_MPS, TOOL_SPEED_SOFT_MPS + 0.5, 2.7])
    terms = reach_terms(zeros, zeros, np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 6)),
                        speed, speed)
    assert terms['tool_speed'] == pytest.approx([0.0, 0.0, 0.25, (2.7 - 0.7) ** 2])
    # The commanded tool's speed costs linearly above the same speed.
    assert terms['command_tool_speed'] == pytest.approx([0.0, 0.0, 0.5, 2.0])
    # Without speeds (a recording's first step) the terms cost nothing.
    none = reach_terms(zeros, zeros, np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 6)))
    assert not none['tool_speed'].any() and not none['command_tool_speed'].any()
    assert not none['lead'].any()


def test_the_lead_term_is_a_squared_hinge_per_joint_summed():
    zeros = np.zeros((3, 3))
    lead = np.zeros((3, 6))
    lead[1, 0] = LEAD_SOFT_RAD  # at the soft bound: free
    lead[2, 0], lead[2, 5] = 0.15, -0.25  # either sign costs
    terms = reach_terms(zeros, zeros, np.zeros((3, 6)), np.zeros((3, 6)), np.zeros((3, 6)),
                        lead=lead)
    assert terms['lead'] == pytest.approx([0.0, 0.0, (0.15 - 0.05) ** 2 + (0.25 - 0.05) ** 2])


def test_arm6_keeps_the_default_scales_and_ur5e_asks_for_smooth_motion():
    with make_task('arm6_reach', 1) as arm6, make_task('ur5e_reach', 1) as ur5e:
        assert arm6.reward_scales == REWARD_SCALES
        assert arm6.reward_scales['tool_speed'] == 0.0
        assert arm6.reward_scales['command_tool_speed'] == 0.0
        assert ur5e.reward_scales['tool_speed'] == ur5e.TOOL_SPEED_SCALE < 0.0
        assert ur5e.reward_scales['command_tool_speed'] == ur5e.COMMAND_TOOL_SPEED_SCALE < 0.0
        assert ur5e.reward_scales['action_rate'] == ur5e.ACTION_RATE_SCALE \
            < REWARD_SCALES['action_rate']
        assert ur5e.reward_scales['lead'] == ur5e.LEAD_SCALE < 0.0
        # Only the smoothness weights differ.
        assert {k for k in REWARD_SCALES if ur5e.reward_scales[k] != REWARD_SCALES[k]} \
            == {'action_rate', 'tool_speed', 'command_tool_speed', 'lead'}


def test_ur5e_reach_charges_the_commanded_tool_step_the_gate_would_limit():
    with make_task('ur5e_reach', 1, seed=0) as task:
        state = task.reset()
        q = state.joint_position.copy()
        task.step(q)  # holding still: nothing to pay
        assert task.reward_terms['command_tool_speed'] == pytest.approx([0.0])
        cmd = q.copy()
        cmd[0, 0] += 0.06  # one slew step of the shoulder, commanded at once
        task.step(cmd)
        # The commanded tool step, by forward kinematics written here.
        data = mujoco.MjData(task.model)
        tool = []
        for row in (q[0], cmd[0]):
            data.qpos[:6] = row
            mujoco.mj_kinematics(task.model, data)
            tool.append(data.site_xpos[task.model.site('ee_site').id].copy())
        commanded = np.linalg.norm(tool[1] - tool[0]) / task.control_dt
        assert commanded > TOOL_SPEED_SOFT_MPS  # the arm lags: its own speed is lower
        expected = task.COMMAND_TOOL_SPEED_SCALE * (commanded - TOOL_SPEED_SOFT_MPS)
        assert task.reward_terms['command_tool_speed'] == pytest.approx([expected], rel=1e-6)


def test_ur5e_reach_charges_a_command_that_leads_the_measured_joints():
    with make_task('ur5e_reach', 1, seed=0) as task:
        state = task.reset()
        q = state.joint_position.copy()
        task.step(q)
        assert task.reward_terms['lead'] == pytest.approx([0.0])
        q = task.sim.qpos.copy()  # where the arm is now: the lead is measured from here
        cmd = q.copy()
        cmd[0, 1] += 0.12
        task.step(cmd)
        expected = task.LEAD_SCALE * (0.12 - LEAD_SOFT_RAD) ** 2
        assert task.reward_terms['lead'] == pytest.approx([expected], rel=1e-6)
