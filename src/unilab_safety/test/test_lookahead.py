# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Workspace look-ahead: forward kinematics of a hand-checkable arm, and of arm6."""

import importlib.util
import pathlib

import numpy as np
import pytest

from unilab_safety.gate import SafetyGate
from unilab_safety.limits import load_joint_limits

mujoco = pytest.importorskip('mujoco')
from unilab_safety.lookahead import WorkspaceLookahead  # noqa: E402

# Two 1 m links in the x-y plane, hinges about z: the tip is at
# (cos q1 + cos(q1 + q2), sin q1 + sin(q1 + q2), 0).
PLANAR = """
<mujoco>
  <worldbody>
    <body name="l1">
      <joint name="q1" type="hinge" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 1 0 0" size="0.01"/>
      <body name="l2" pos="1 0 0">
        <joint name="q2" type="hinge" axis="0 0 1"/>
        <geom type="capsule" fromto="0 0 0 1 0 0" size="0.01"/>
        <site name="tip" pos="1 0 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""
BOX = [-3.0, -3.0, -1.0, 1.5, 3.0, 1.0]  # x <= 1.5


@pytest.fixture
def planar(tmp_path):
    path = tmp_path / 'planar.xml'
    path.write_text(PLANAR)
    return path


def test_violation_is_the_distance_outside_the_box(planar):
    la = WorkspaceLookahead(planar, ['q1', 'q2'], BOX, horizon_s=0.0, dt=0.1)
    assert la.violation(np.array([0.0, np.pi / 2])) == 0.0  # tip (1, 1): inside
    # Straight arm: tip at x = 2 (0.5 outside); l2's origin at x = 1 is inside.
    assert la.violation(np.zeros(2)) == pytest.approx(0.5)


def test_motion_toward_the_wall_is_stopped_before_it(planar):
    # From tip (1, 1) (q2 = 90 deg) toward a straight arm: one 0.1 rad step of q2
    # keeps the tip inside, but 5 more steps at that speed (horizon 0.5 s) cross x = 1.5.
    la = WorkspaceLookahead(planar, ['q1', 'q2'], BOX, horizon_s=0.5, dt=0.1)
    ref = np.array([[0.0, np.pi / 2], [0.0, np.pi / 2]])
    cmd = np.array([[0.0, np.pi / 2 - 0.1], [0.0, np.pi / 2 + 0.1]])
    n = la.stop_rows(cmd, ref, np.array([True, True]))
    assert n == 1
    np.testing.assert_array_equal(cmd[0], ref[0])  # stopped: held
    np.testing.assert_allclose(cmd[1], [0.0, np.pi / 2 + 0.1])  # bending away: allowed


def test_recovering_from_outside_is_allowed(planar):
    la = WorkspaceLookahead(planar, ['q1', 'q2'], BOX, horizon_s=0.5, dt=0.1)
    ref = np.array([[0.0, 0.2]])  # tip slightly outside
    cmd = np.array([[0.0, 0.3]])  # bending: less outside than the reference
    assert la.stop_rows(cmd, ref.copy(), np.array([True])) == 0


def test_gate_counts_workspace_stops_as_clamps(planar):
    limits = load_joint_limits({'joint_limits': {
        'q1': {'min_position': -3.0, 'max_position': 3.0},
        'q2': {'min_position': -3.0, 'max_position': 3.0}}}, ['q1', 'q2'])
    la = WorkspaceLookahead(planar, ['q1', 'q2'], BOX, 0.5, 0.1, limits.pos_lo, limits.pos_hi)
    gate = SafetyGate(limits, 'position', 0.1, lookahead=la)
    gate.filter(np.array([[0.0, np.pi / 2]]), state_position=np.array([0.0, np.pi / 2]))
    r = gate.filter(np.array([[0.0, np.pi / 2 - 0.1]]))
    np.testing.assert_array_equal(r.command, [[0.0, np.pi / 2]])
    assert r.clamped_mask.tolist() == [True] and gate.workspace_stops == 1
    with pytest.raises(ValueError, match='position'):
        SafetyGate(limits, 'velocity', 0.1, lookahead=la)


def test_bad_box_and_unknown_joint_are_errors(planar):
    with pytest.raises(ValueError, match='min < max'):
        WorkspaceLookahead(planar, ['q1', 'q2'], [0, 0, 0, 0, 1, 1], 0.1, 0.1)
    with pytest.raises(ValueError, match="'wrist'"):
        WorkspaceLookahead(planar, ['q1', 'wrist'], BOX, 0.1, 0.1)


def test_arm6_model_forward_kinematics():
    spec = importlib.util.find_spec('unilab_bridge')
    if spec is None:
        pytest.skip('unilab_bridge (arm6 model) not installed')
    model = pathlib.Path(spec.submodule_search_locations[0]) / 'assets' / 'arm6.xml'
    joints = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
              'wrist_2_joint', 'wrist_3_joint']
    # Home pose (all zero): forearm forward along +x, the tool about 0.4-0.6 m out.
    la = WorkspaceLookahead(model, joints, [-1, -1, 0.0, 1, 1, 1.2], 0.1, 0.02)
    assert la.violation(np.zeros(6)) == 0.0
    tight = WorkspaceLookahead(model, joints, [-1, -1, 0.0, 0.3, 1, 1.2], 0.1, 0.02)
    assert tight.violation(np.zeros(6)) > 0.0


def _one_joint_lookahead(horizon_s, model):
    # Range [-1, 1], dt 0.1: horizon 0.3 s = 3 steps. No box: joint limits only.
    return WorkspaceLookahead(None, ['q'], None, horizon_s, 0.1, np.array([-1.0]),
                              np.array([1.0]), model=model)


def test_multi_step_velocity_prediction_stops_before_the_joint_limit():
    la = _one_joint_lookahead(0.3, 'velocity')
    assert la.steps == 3
    ok = np.array([True])
    # ref 0.5 -> cmd 0.6: v = 0.1, q_3 = 0.9 < 1: passes.
    cmd = np.array([[0.6]])
    assert la.stop_rows(cmd, np.array([[0.5]]), ok) == 0 and cmd[0, 0] == 0.6
    # ref 0.5 -> cmd 0.7: v = 0.2, q_2 = 1.1 > 1: stopped, held at 0.5.
    cmd = np.array([[0.7]])
    assert la.stop_rows(cmd, np.array([[0.5]]), ok) == 1 and cmd[0, 0] == 0.5
    # A one-step horizon (the old behaviour at 0.1 s) would have let it through: q_1 = 0.9.
    cmd = np.array([[0.7]])
    assert _one_joint_lookahead(0.1, 'velocity').stop_rows(cmd, np.array([[0.5]]), ok) == 0


def test_constant_acceleration_prediction_by_hand():
    ok = np.array([True])
    prev, ref = np.array([[0.5]]), np.array([[0.55]])
    # v = 0.65 - 0.55 = 0.1, a = 0.1 - 0.05 = 0.05: q_1 = 0.8, q_2 = 1.0, q_3 = 1.25.
    la = _one_joint_lookahead(0.3, 'acceleration')
    np.testing.assert_allclose(la.predict(np.array([0.65]), ref[0], prev[0]),
                               [[0.8], [1.0], [1.25]])
    cmd = np.array([[0.65]])
    assert la.stop_rows(cmd, ref, ok, prev, np.array([True])) == 1 and cmd[0, 0] == 0.55
    # Constant velocity sees q_3 = 0.95 and lets it pass.
    cmd = np.array([[0.65]])
    assert _one_joint_lookahead(0.3, 'velocity').stop_rows(cmd, ref, ok, prev) == 0
    # Without a previous output the acceleration is taken as zero.
    cmd = np.array([[0.65]])
    assert la.stop_rows(cmd, ref, ok, prev, np.array([False])) == 0


def test_first_command_and_rejected_rows_are_not_extrapolated():
    la = _one_joint_lookahead(0.3, 'velocity')
    cmd = np.array([[0.9], [0.9]])
    ref = np.array([[0.0], [0.0]])  # v = 0.9 would cross, but row 0 has no reference yet
    assert la.stop_rows(cmd, ref, np.array([True, False]), has_ref=np.array([False, True])) == 0


def test_box_is_checked_at_every_step_of_the_horizon(planar):
    # Tip at (1, 1) with q2 = 90 deg; steps of -0.1 rad on q2 swing the tip toward +x.
    # Horizon 0.2 s = 2 steps: q2 = pi/2 - 0.3 at step 2, tip x = 1 + cos(pi/2 - 0.3)
    # = 1.296 < 1.5: inside. Horizon 0.6 s = 6 steps: q2 = pi/2 - 0.7, x = 1.644: out.
    ref, cmd = np.array([[0.0, np.pi / 2]]), np.array([[0.0, np.pi / 2 - 0.1]])
    short = WorkspaceLookahead(planar, ['q1', 'q2'], BOX, 0.2, 0.1)
    assert short.steps == 2 and short.stop_rows(cmd.copy(), ref, np.array([True])) == 0
    long = WorkspaceLookahead(planar, ['q1', 'q2'], BOX, 0.6, 0.1)
    assert long.stop_rows(cmd.copy(), ref, np.array([True])) == 1


def test_lookahead_config_errors():
    with pytest.raises(ValueError, match='model'):
        WorkspaceLookahead(None, ['q'], None, 0.3, 0.1, np.array([-1.0]), np.array([1.0]),
                           model='jerk')
    with pytest.raises(ValueError, match='joint position limits'):
        WorkspaceLookahead(None, ['q'], None, 0.3, 0.1)
