# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Reward terms of the reach task, combined through a scale dict, and its success."""

import numpy as np

# Per-step weights; with these a good policy earns about +0.9 per step and a frozen arm
# about -0.4, so returns stay O(1) per step as PPO value functions like.
REWARD_SCALES = {
    'distance': -1.0,
    'near_target': 1.0,
    'action_rate': -0.01,
    'joint_velocity': -0.001,
    'tool_speed': 0.0,
    'command_tool_speed': 0.0,
    'lead': 0.0,
}

#: Tool speed (m/s) above which the ``tool_speed`` term costs: below the gate's Cartesian
#: limit (``safety.max_tool_speed_mps``, 1.0 m/s by default) with room for a robot that
#: follows a little late (issue 38: a policy at UR's 1.5 m/s limit stops the robot).
TOOL_SPEED_SOFT_MPS = 0.7

#: Lead (rad) of a joint's command over its measured position above which the ``lead`` term
#: costs: half the bench's tracking target (0.1 rad) and a third of the gate's tracking bound
#: (``safety.max_tracking_error_rad``, 0.15 rad), so a robot that lags a step still follows
#: within the bound.
LEAD_SOFT_RAD = 0.05

#: Final tool-to-target distance (m) counted as a successful reach (the seed's 5 cm).
SUCCESS_M = 0.05

# Length scale (m) of the near-target bonus: it is worth having within a few cm.
NEAR_TARGET_SCALE = 0.1


def reach_terms(ee_pos, target_pos, command, prev_command, joint_velocity,
                tool_speed=None, command_tool_speed=None, lead=None):
    """
    Return unscaled reward terms, each an [N] array.

    ``tool_speed`` [N] (m/s, the tool's displacement over the control step / dt)
    feeds the ``tool_speed`` term, a squared hinge above TOOL_SPEED_SOFT_MPS:
    free below it, so the policy may move at a speed a robot's Cartesian limit
    allows, and ever more costly above it. ``command_tool_speed`` [N] (m/s, the
    commanded tool's step between consecutive commands / dt: what a robot's gate
    limits, ``unilab_safety.tool_speed``) feeds ``command_tool_speed``, a linear
    hinge above the same speed: linear, because exploration noise makes the
    commanded step of a fresh policy large, and a squared cost of it drowns the
    task (tried: no success at all). ``lead`` [N, J] (rad, the command minus
    the measured joint position it was sent from: what a robot's gate bounds,
    ``safety.max_tracking_error_rad``) feeds ``lead``, a squared hinge per joint
    above LEAD_SOFT_RAD, summed: a command far ahead of the arm, or pushing a
    joint against its limit, costs. None costs nothing.
    """
    dist = np.linalg.norm(target_pos - ee_pos, axis=1)
    over = (np.zeros_like(dist) if tool_speed is None
            else np.maximum(np.asarray(tool_speed, dtype=np.float64) - TOOL_SPEED_SOFT_MPS, 0.0))
    cmd_over = (np.zeros_like(dist) if command_tool_speed is None else np.maximum(
        np.asarray(command_tool_speed, dtype=np.float64) - TOOL_SPEED_SOFT_MPS, 0.0))
    lead_over = (np.zeros_like(dist) if lead is None else np.sum(np.square(np.maximum(
        np.abs(np.asarray(lead, dtype=np.float64)) - LEAD_SOFT_RAD, 0.0)), axis=1))
    return {
        'distance': dist,
        # Bounded and smooth, so it sharpens the gradient near the target without ever
        # dominating the return.
        'near_target': 1.0 - np.tanh(dist / NEAR_TARGET_SCALE),
        'action_rate': np.sum(np.square(command - prev_command), axis=1),
        'joint_velocity': np.sum(np.square(joint_velocity), axis=1),
        'tool_speed': np.square(over),
        'command_tool_speed': cmd_over,
        'lead': lead_over,
    }


def combine(terms, scales):
    """Return the [N] float32 reward sum(scales[k] * terms[k])."""
    total = sum(scales[k] * terms[k] for k in scales)
    return np.asarray(total, dtype=np.float32)


def final_distance(task, finished) -> np.ndarray | None:
    """
    Return the tool-to-target distance [m] of the episodes in ``finished`` at their last step.

    Read from the distance term of the step just taken (computed before the
    auto-reset; a disturbed task is looked through). None for a task without a
    distance term: it defines no reach success.
    """
    inner = getattr(task, 'inner', task)
    terms = getattr(inner, 'reward_terms', None) or {}
    scale = getattr(inner, 'reward_scales', {}).get('distance')
    if 'distance' not in terms or not scale:
        return None
    return np.abs(np.asarray(terms['distance'])[finished] / scale)


def tool_position(task) -> np.ndarray | None:
    """Return a copy of the tool positions [N, 3] (m) after the last step (None: no reach)."""
    inner = getattr(task, 'inner', task)
    batch = getattr(inner, '_batch', None)
    if final_distance(task, np.zeros(0, bool)) is None or batch is None:
        return None
    return np.array(batch.site_pos[:, 0], dtype=np.float64)


def episode_success(task, finished) -> np.ndarray | None:
    """Return which episodes in ``finished`` ended within ``SUCCESS_M`` (None: undefined)."""
    dist = final_distance(task, finished)
    return None if dist is None else dist < SUCCESS_M
