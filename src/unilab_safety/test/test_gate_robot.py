# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The gate's robot-only rules on hand-computed values: envelope, tracking, tool speed."""

import math
import tracemalloc

import numpy as np
import pytest
from unilab_core.kinematics import SiteKinematics

from unilab_safety.gate import SafetyGate
from unilab_safety.limits import load_joint_limits
from unilab_safety.tool_speed import AIM_MARGIN, ToolSpeedLimit

LIMITS = load_joint_limits({'joint_limits': {
    'j0': {'min_position': -1.0, 'max_position': 1.0, 'max_velocity': 1.0},
    'j1': {'min_position': 0.5, 'max_position': 2.0, 'max_velocity': 1.0},
}}, ['j0', 'j1'])
S = np.array([0.0, 1.0])
#: The same range without a slew limit worth the name (the tool-speed limit acts alone).
FAST = load_joint_limits({'joint_limits': {
    'j0': {'min_position': -1.0, 'max_position': 1.0, 'max_velocity': 100.0},
    'j1': {'min_position': 0.5, 'max_position': 2.0, 'max_velocity': 100.0},
}}, ['j0', 'j1'])

#: j0 turns the tool about z on a 1 m arm, j1 slides it along z: tool = (cos q0, sin q0, q1).
MJCF = """<mujoco><worldbody><body name="arm">
  <joint name="j0" type="hinge" axis="0 0 1"/><geom type="sphere" size="0.01"/>
  <body name="slider"><joint name="j1" type="slide" axis="0 0 1"/>
    <geom type="sphere" size="0.01"/><site name="tool" pos="1 0 0"/></body>
</body></worldbody></mujoco>"""


def _envelope_gate():
    # Trained range j0 [-0.5, 0.5] (narrower), j1 [0, 3] (wider than the driver: no effect).
    return SafetyGate(LIMITS, 'position', None, envelope=([-0.5, 0.0], [0.5, 3.0]))


def test_envelope_is_the_intersection_with_the_driver_limits():
    lo, hi = _envelope_gate().envelope
    np.testing.assert_array_equal(lo, [-0.5, 0.5])
    np.testing.assert_array_equal(hi, [0.5, 2.0])


def test_envelope_clamps_counted_apart_from_driver_clamps():
    g = _envelope_gate()
    r = g.filter(np.array([[0.8, 1.0], [2.0, 1.0], [0.2, 2.5], [0.1, 1.2]]),
                 state_position=S)
    # 0.8 and 2.0 are inside / beyond the driver range, both beyond the envelope: 0.5;
    # j1 2.5 is the driver's clamp alone (the envelope does not narrow j1).
    np.testing.assert_array_equal(r.command, [[0.5, 1.0], [0.5, 1.0], [0.2, 2.0], [0.1, 1.2]])
    assert g.robot_counters['envelope_clamps'] == 2
    assert g.counters['clamped'] == 3 and g.counters['passed'] == 1


def test_envelope_is_soft_towards_a_reference_outside_it():
    # The robot starts at j0 = 0.9, outside the trained 0.5: no jump to 0.5, no further out.
    g = _envelope_gate()
    r = g.filter(np.array([[1.0, 1.0]]), state_position=np.array([0.9, 1.0]))
    np.testing.assert_array_equal(r.command, [[0.9, 1.0]])
    g.reset()
    r = g.filter(np.array([[0.7, 1.0]]), state_position=np.array([0.9, 1.0]))
    np.testing.assert_array_equal(r.command, [[0.7, 1.0]])  # back in: allowed
    assert g.robot_counters['envelope_clamps'] == 1


def test_envelope_outside_the_driver_limits_is_refused():
    with pytest.raises(ValueError, match=r"\['j0'\]"):
        SafetyGate(LIMITS, 'position', None, envelope=([1.5, 0.0], [2.0, 3.0]))
    with pytest.raises(ValueError, match='position interface'):
        SafetyGate(LIMITS, 'velocity', None, envelope=([-1, 0], [1, 3]))


def test_tracking_bound_pulls_then_holds_until_the_robot_catches_up():
    g = SafetyGate(LIMITS, 'position', None, tracking_error=0.1, tracking_hold_cycles=2)
    far = np.array([[0.5, 1.0]])
    # Robot at 0 and stalled: the command may lead it by 0.1 at most.
    assert g.filter(far, state_position=S).command[0, 0] == pytest.approx(0.1)
    assert g.filter(far, state_position=S).command[0, 0] == pytest.approx(0.1)
    c = g.robot_counters
    assert (c['tracking_clamps'], c['tracking_holds']) == (2, 0)
    # Third pulled cycle in a row (> 2): held at the last command, 0.1.
    assert g.filter(far, state_position=S).command[0, 0] == pytest.approx(0.1)
    assert g.robot_counters['tracking_holds'] == 1
    # Held while the last command is more than 0.05 from the robot, whatever is asked.
    r = g.filter(np.array([[-0.5, 1.0]]), state_position=S)
    assert r.command[0, 0] == pytest.approx(0.1)
    assert g.robot_counters['tracking_holds'] == 2
    # Robot at 0.08 (within 0.05 of 0.1): released; -0.5 is pulled to 0.08 - 0.1.
    r = g.filter(np.array([[-0.5, 1.0]]), state_position=np.array([0.08, 1.0]))
    assert r.command[0, 0] == pytest.approx(-0.02)
    assert g.robot_counters['tracking_holds'] == 2


def test_tracking_without_a_measured_position_holds():
    g = SafetyGate(LIMITS, 'position', None, tracking_error=0.1)
    g.filter(np.array([[0.05, 1.0]]), state_position=S)
    r = g.filter(np.array([[0.5, 1.5]]), state_position=np.array([np.nan, 1.0]))
    np.testing.assert_array_equal(r.command, [[0.05, 1.0]])
    assert g.robot_counters['tracking_holds'] == 1


@pytest.fixture
def tool_kin(tmp_path):
    path = tmp_path / 'tool.xml'
    path.write_text(MJCF)
    return SiteKinematics(str(path), ['j0', 'j1'], 'tool')


def test_tool_speed_linear_step_is_scaled_exactly(tool_kin):
    # 1 m/s over dt 0.1 s: 0.1 m per step. A 0.3 m slide becomes 0.1 m (q1 1.0 -> 1.1);
    # half a step of time (step_share 0.5) allows 0.05 m.
    g = SafetyGate(FAST, 'position', 0.1,
                   tool_speed=ToolSpeedLimit(tool_kin, 1.0, 0.1))
    # (A pass that lands a rounding error outside is followed by one AIM_MARGIN inside.)
    r = g.filter(np.array([[0.0, 1.3]]), state_position=S)
    np.testing.assert_allclose(r.command, [[0.0, 1.1]], atol=0.1 * AIM_MARGIN)
    assert r.command[0, 1] <= 1.1
    first = r.command[0, 1]
    r = g.filter(np.array([[0.0, 1.5]]), step_share=0.5)
    np.testing.assert_allclose(r.command, [[0.0, first + 0.05]], atol=0.05 * AIM_MARGIN)
    assert r.command[0, 1] <= first + 0.05
    assert g.robot_counters['tool_speed_clamps'] == 2


def test_tool_speed_rotation_meets_the_chord(tool_kin):
    # Turning j0 by t moves the tool 2 sin(t / 2) (chord of the unit circle): 0.5 rad is
    # 0.4948 m; the limit 0.1 m allows t = 2 asin(0.05) = 0.1000417 rad.
    g = SafetyGate(FAST, 'position', 0.1,
                   tool_speed=ToolSpeedLimit(tool_kin, 1.0, 0.1))
    r = g.filter(np.array([[0.5, 1.0]]), state_position=S)
    t = r.command[0, 0]
    assert 2 * math.sin(t / 2) <= 0.1 + 1e-12
    # The second pass aims AIM_MARGIN inside the limit (the chord lands a hair outside it).
    assert t == pytest.approx(2 * math.asin(0.05), rel=2 * AIM_MARGIN)
    assert r.command[0, 1] == 1.0
    # A slow step passes unchanged and is not counted.
    r = g.filter(np.array([[t + 0.05, 1.0]]))
    assert r.command[0, 0] == pytest.approx(t + 0.05)
    assert g.robot_counters['tool_speed_clamps'] == 1


def test_tool_speed_scales_a_ur5e_step_onto_the_limit_and_never_holds_it():
    # A UR5e's tool path along a joint step is curved: a step scaled onto the limit landed a
    # hair outside it pass after pass, and the row was held at its reference (the arm froze
    # at the start of each motion, issue 38). Every scaled row now moves, within the limit.
    from unilab_bridge.tasks.ur5e_reach import ASSET
    names = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
             'wrist_2_joint', 'wrist_3_joint']
    fk = SiteKinematics(str(ASSET), names, 'ee_site')
    dt, speed = 0.02, 1.0
    limit = ToolSpeedLimit(fk, speed, dt)
    rng = np.random.default_rng(0)
    n = 200
    ref = np.array([0.0, -1.57, 1.57, -1.57, -1.57, 0.0]) + rng.uniform(-1, 1, (n, 6))
    cmd = ref + rng.uniform(-0.06, 0.06, (n, 6))  # up to one slew step on every joint
    tool = fk.positions(ref)
    asked = np.linalg.norm(fk.positions(cmd) - tool, axis=1)
    out = np.zeros(n, bool)
    count = limit.limit(cmd, ref, np.ones(n, bool), 1.0, out)
    got = np.linalg.norm(fk.positions(cmd) - tool, axis=1)
    fast = asked > speed * dt
    assert fast.sum() > n // 4 and count == fast.sum()
    np.testing.assert_array_equal(out, fast)
    assert np.all(got <= speed * dt * (1 + 1e-12))
    # Scaled onto the limit (a pass may land a little inside it), not held at the reference.
    assert np.all(got[fast] >= 0.95 * speed * dt)
    assert np.mean(got[fast]) >= 0.99 * speed * dt


def test_robot_rules_allocate_nothing_in_the_loop(tool_kin):
    g = SafetyGate(FAST, 'position', 0.1, envelope=([-0.5, 0.0], [0.5, 3.0]),
                   tracking_error=0.1, tracking_hold_cycles=3,
                   tool_speed=ToolSpeedLimit(tool_kin, 1.0, 0.1))
    n = 1024  # one [N, J] float64 array is 16 KiB
    action = np.tile([0.4, 1.2], (n, 1))
    state = np.tile([0.0, 1.0], (n, 1))
    g.filter(action, state_position=state)
    tracemalloc.start()
    g.filter(action, state_position=state, step_share=0.5)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 4096
    c = g.robot_counters
    # The first call's commands are pulled to the bound; in the second the tool-speed limit
    # (applied first) already keeps the half-period step within it.
    assert c['envelope_clamps'] == 0 and c['tracking_clamps'] == n
    assert c['tool_speed_clamps'] > 0


def _arm6_spec(**flat):
    import pathlib

    import unilab_bridge
    from spec_helpers import spec
    root = pathlib.Path(__file__).resolve().parents[3]
    names = ['shoulder_pan_joint', 'shoulder_lift_joint', 'elbow_joint', 'wrist_1_joint',
             'wrist_2_joint', 'wrist_3_joint']
    model = pathlib.Path(unilab_bridge.__file__).parent / 'assets' / 'arm6.xml'
    base = dict(joint_names=names, dt=0.02, tool_model_file=str(model), tool_site='ee_site',
                joint_limits_file=str(root / 'config' / 'robots' / 'arm6_joint_limits.yaml'))
    return spec(**{**base, **flat})


def test_the_spec_switches_the_robot_rules_on_for_a_robot_only():
    from unilab_safety.build import build_gate
    train = build_gate(_arm6_spec())
    assert train.tracking_error is None and train.tool_speed is None
    assert train.envelope is None
    robot = build_gate(_arm6_spec(robot_rules=True, envelope_low=[-1.0] * 6,
                                  envelope_high=[1.0] * 6, max_tracking_error_rad=0.12,
                                  max_tool_speed_mps=0.5))
    assert robot.tracking_error == 0.12 and robot.tracking_hold_cycles == 25
    assert robot.tool_speed.max_speed == 0.5 and robot.tool_speed.dt == 0.02
    np.testing.assert_array_equal(robot.envelope[0], [-1.0] * 6)
    with pytest.raises(ValueError, match='tool_model_file'):
        build_gate(_arm6_spec(robot_rules=True, tool_model_file=''))
    assert build_gate(_arm6_spec(robot_rules=True, tool_model_file='',
                                 max_tool_speed_mps=0.0)).tool_speed is None


def test_the_arm6_tool_is_kept_under_its_speed_on_the_real_model():
    # Every joint at its slew limit (3.14 rad/s * 0.02 s) from home moves the arm6 tool
    # faster than 1 m/s; the gate keeps the step's tool displacement at 0.02 m.
    from unilab_safety.build import build_gate
    g = build_gate(_arm6_spec(robot_rules=True, max_tracking_error_rad=1.0,
                              max_tool_speed_mps=1.0))
    home = np.zeros(6)
    fk = g.tool_speed.fk
    r = g.filter(np.full((1, 6), 1.0), state_position=home)
    p0, p1 = fk.positions(home[None])[0], fk.positions(r.command)[0]
    assert np.linalg.norm(p1 - p0) <= 0.02 + 1e-9
    assert np.linalg.norm(p1 - p0) > 0.019
    assert g.robot_counters['tool_speed_clamps'] == 1


def test_a_rehearsal_gates_on_a_shadow_and_leaves_the_robots_gate_as_it_was():
    """InlineBackend.rehearse: the next command and every counter as without it."""
    from unilab_safety.loop import ActionIn
    from unilab_safety.thread_backend import InlineBackend
    # Lock-step: every command a full step (off it, the step share follows the wall clock).
    flat = dict(robot_rules=True, lockstep=True, watchdog_timeout_s=5.0, rt_priority=0,
                mlockall=False, max_tool_speed_mps=0.5)
    home = np.zeros((1, 6))
    steps = [np.full((1, 6), 0.05 * k, np.float32) for k in (1, 2, 3)]
    out = {}
    for rehearsing in (False, True):
        backend = InlineBackend(_arm6_spec(**flat))
        backend.start()
        try:
            assert not backend.rehearse()  # nothing gated yet
            backend.put_state(home)
            commands = []
            for seq, a in enumerate(steps):
                backend.put(ActionIn(seq, 1, seq, a, None, True, 0))
                commands.append(backend.pop().command.copy())
                if rehearsing:
                    before = backend.counters()
                    assert backend.rehearse()
                    assert backend.counters() == before
            out[rehearsing] = commands
        finally:
            backend.stop()
            backend.close()
    np.testing.assert_array_equal(out[True], out[False])
    # The shadow had work to do: the tool-speed limit acted on these steps.
    assert not np.array_equal(out[True][-1], steps[-1])
