# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Build the gate and loop from one ``SafetySpec`` (``params.py``).

The node validates a spec by building it in its own process (so a bad value
is a start-up ConfigError naming the key) and the real-time process builds
the same spec again from its plain data: one construction path for both
modes and for every loop without ROS. Imports nothing from ROS, so the
real-time process stays small.
"""

from __future__ import annotations

from unilab_core.kinematics import SiteKinematics
from unilab_safety.gate import SafetyGate
from unilab_safety.limits import load_joint_limits
from unilab_safety.loop import SafetyLoop
from unilab_safety.params import SafetySpec
from unilab_safety.tool_speed import ToolSpeedLimit


def as_spec(spec) -> SafetySpec:
    """Return ``spec`` as a SafetySpec (it may come as plain data, e.g. from JSON)."""
    return spec if isinstance(spec, SafetySpec) else SafetySpec.model_validate(spec)


def pid_enabled(spec) -> bool:
    """Return True if the spec asks for PID compensation (any gain list given)."""
    s = as_spec(spec).safety
    return bool(s.pid_kp or s.pid_ki or s.pid_kd)


def build_gate(spec) -> SafetyGate:
    """Return the SafetyGate of ``spec``; raise LimitsError / ValueError on bad values."""
    spec = as_spec(spec)
    s = spec.safety
    if not s.joint_limits_file:
        raise ValueError('parameter `safety.joint_limits_file` is required (the resolved '
                         'ros2_control joint_limits YAML)')
    names = list(spec.joint_names)
    limits = load_joint_limits(s.joint_limits_file, names,
                               allow_unlimited=s.allow_unlimited_joints)
    lookahead = None
    if s.workspace_box or s.lookahead_joint_limits:
        if s.workspace_box and not s.workspace_model_file:
            raise ValueError('parameter `safety.workspace_box` needs '
                             '`safety.workspace_model_file` (the MJCF model for forward '
                             'kinematics)')
        from unilab_safety.lookahead import WorkspaceLookahead
        lookahead = WorkspaceLookahead(s.workspace_model_file, names, s.workspace_box or None,
                                       s.lookahead_s, spec.dt, limits.pos_lo, limits.pos_hi,
                                       model=s.lookahead_model)
    pid = None
    if pid_enabled(spec):
        from unilab_safety.pid import PidCompensator
        j = len(names)
        gains = {}
        for key in ('pid_kp', 'pid_ki', 'pid_kd', 'pid_i_max'):
            v = list(getattr(s, key))
            if v and len(v) not in (1, j):
                raise ValueError(f'parameter `safety.{key}` needs 1 or {j} values (one per '
                                 f'joint), got {len(v)}')
            gains[key] = v or None
        pid = PidCompensator(gains['pid_kp'] or 0.0, gains['pid_ki'] or 0.0,
                             gains['pid_kd'] or 0.0, spec.dt, gains['pid_i_max'], n_joints=j)
    envelope = (spec.envelope_low, spec.envelope_high) if spec.envelope_low else None
    # Robot-only rules (the deploy graph sets robot_rules; training leaves them off). They
    # bound position commands against the measured pose: a velocity or effort robot has none.
    position_rules = spec.robot_rules and spec.interface == 'position'
    tracking = s.max_tracking_error_rad if position_rules else None
    tool = None
    if position_rules and s.max_tool_speed_mps > 0:
        if not spec.tool_model_file or not spec.tool_site:
            raise ValueError('parameter `safety.max_tool_speed_mps` needs `tool_model_file` '
                             'and `tool_site` (the robot profile\'s model_file and '
                             'task_inputs.tool_site); 0 switches the limit off')
        tool = ToolSpeedLimit(SiteKinematics(spec.tool_model_file, names, spec.tool_site),
                              s.max_tool_speed_mps, spec.dt)
    return SafetyGate(limits, spec.interface, spec.dt, max_delta=s.max_delta or None,
                      fallback=s.fallback, lookahead=lookahead, pid=pid, envelope=envelope,
                      tracking_error=tracking, tracking_hold_cycles=s.tracking_hold_cycles,
                      tool_speed=tool)


def build_loop(spec, slot, ring, state=None):
    """Return a SafetyLoop over ``slot`` / ``ring`` with the gate of ``spec``."""
    spec = as_spec(spec)
    s = spec.safety
    return SafetyLoop(build_gate(spec), spec.num_envs, slot, ring, s.watchdog_timeout_s,
                      s.watchdog_fallback, spec.lockstep, state=state,
                      state_timeout_s=spec.state_timeout_s, armed=spec.armed,
                      jitter_allowance=s.jitter_allowance)
