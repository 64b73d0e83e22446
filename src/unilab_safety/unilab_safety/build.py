# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Build the gate and loop from one plain spec (a JSON-able dict).

The node validates a spec by building it in its own process (so a bad value
is a start-up ConfigError naming the key) and the real-time process builds
the same spec again: one construction path for both modes. Imports nothing
from ROS, so the real-time process stays small.
"""

from __future__ import annotations

from unilab_safety.gate import SafetyGate
from unilab_safety.limits import load_joint_limits

#: Spec keys and their defaults (the node's parameters of the same names).
SPEC_DEFAULTS = {
    'joint_limits_file': '', 'joint_names': [], 'allow_unlimited_joints': False,
    'interface': 'position', 'dt': 0.02, 'max_delta': 0.0, 'fallback': 'hold',
    'workspace_box': [], 'workspace_model_file': '', 'lookahead_s': 0.1,
    'lookahead_model': 'velocity', 'lookahead_joint_limits': False,
    'pid_kp': [], 'pid_ki': [], 'pid_kd': [], 'pid_i_max': [],
    'num_envs': 1, 'watchdog_timeout_s': 0.02, 'watchdog_fallback': 'hold', 'lockstep': False,
    'rate_hz': 1000.0, 'busy_wait_us': 0.0, 'rt_priority': 80, 'cpu_affinity': [],
    'mlockall': True,
}


def pid_enabled(spec):
    """Return True if the spec asks for PID compensation (any gain list given)."""
    return any(len(spec.get(k) or ()) for k in ('pid_kp', 'pid_ki', 'pid_kd'))


def build_gate(spec):
    """Return the SafetyGate of ``spec``; raise LimitsError / ValueError on bad values."""
    names = list(spec['joint_names'])
    limits = load_joint_limits(spec['joint_limits_file'], names,
                               allow_unlimited=spec['allow_unlimited_joints'])
    box = list(spec.get('workspace_box') or [])
    lookahead = None
    if box or spec.get('lookahead_joint_limits'):
        if box and not spec.get('workspace_model_file'):
            raise ValueError('parameter `workspace_box` needs `workspace_model_file` '
                             '(the MJCF model for forward kinematics)')
        from unilab_safety.lookahead import WorkspaceLookahead
        lookahead = WorkspaceLookahead(spec.get('workspace_model_file'), names, box or None,
                                       spec['lookahead_s'], spec['dt'], limits.pos_lo,
                                       limits.pos_hi, model=spec.get('lookahead_model',
                                                                     'velocity'))
    pid = None
    if pid_enabled(spec):
        from unilab_safety.pid import PidCompensator
        j = len(names)
        gains = {}
        for key in ('pid_kp', 'pid_ki', 'pid_kd', 'pid_i_max'):
            v = list(spec.get(key) or [])
            if v and len(v) not in (1, j):
                raise ValueError(f'parameter `{key}` needs 1 or {j} values (one per joint), '
                                 f'got {len(v)}')
            gains[key] = v or None
        pid = PidCompensator(gains['pid_kp'] or 0.0, gains['pid_ki'] or 0.0,
                             gains['pid_kd'] or 0.0, spec['dt'], gains['pid_i_max'], n_joints=j)
    return SafetyGate(limits, spec['interface'], spec['dt'],
                      max_delta=spec['max_delta'] or None, fallback=spec['fallback'],
                      lookahead=lookahead, pid=pid)


def build_loop(spec, slot, ring, state=None):
    """Return a SafetyLoop over ``slot`` / ``ring`` with the gate of ``spec``."""
    from unilab_safety.loop import SafetyLoop
    return SafetyLoop(build_gate(spec), spec['num_envs'], slot, ring,
                      spec['watchdog_timeout_s'], spec['watchdog_fallback'], spec['lockstep'],
                      state=state)
