# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Derive ros2_control joint_limits entries from a MuJoCo model."""

import mujoco
import numpy as np

# ros2_control's JointLimits leaves values of absent limits as NaN; do the same.
_UNSET = float('nan')


def actuated_joints(model):
    """Return (actuator ids, joint ids) of actuators that drive a single joint, in order."""
    actuator_ids, joint_ids = [], []
    for act in range(model.nu):
        if int(model.actuator_trntype[act]) in (int(mujoco.mjtTrn.mjTRN_JOINT),
                                                int(mujoco.mjtTrn.mjTRN_JOINTINPARENT)):
            actuator_ids.append(act)
            joint_ids.append(int(model.actuator_trnid[act, 0]))
    return actuator_ids, joint_ids


def is_position_actuator(model, act):
    """Return True if the actuator is a position servo (affine bias with -kp on qpos)."""
    return (int(model.actuator_biastype[act]) == int(mujoco.mjtBias.mjBIAS_AFFINE)
            and model.actuator_biasprm[act, 1] < 0)


def is_velocity_actuator(model, act):
    """Return True if the actuator is a velocity servo (affine bias with -kv on qvel only)."""
    return (int(model.actuator_biastype[act]) == int(mujoco.mjtBias.mjBIAS_AFFINE)
            and model.actuator_biasprm[act, 1] == 0 and model.actuator_biasprm[act, 2] < 0)


def joint_limits_from_model(model, actuator_ids, joint_ids, max_velocity=None):
    """
    Return {joint name: ros2_control limits} for the given actuator/joint pairs.

    Position limits come from the joint range. Effort limits come from the actuator force range
    for position and velocity servos and from the ctrl range for torque actuators, whose
    command is the effort itself. Velocity limits are only reported when ``max_velocity`` is
    given (a sequence aligned with ``joint_ids``), since MuJoCo models carry no such data.
    Values of absent limits are NaN, as in ros2_control.
    """
    limits = {}
    for k, (act, jnt) in enumerate(zip(actuator_ids, joint_ids)):
        has_pos = bool(model.jnt_limited[jnt])
        lo, hi = (float(v) for v in model.jnt_range[jnt])
        if is_position_actuator(model, act) or is_velocity_actuator(model, act):
            has_eff = bool(model.actuator_forcelimited[act])
            eff_range = model.actuator_forcerange[act]
        else:
            has_eff = bool(model.actuator_ctrllimited[act])
            eff_range = model.actuator_ctrlrange[act]
        vel = None if max_velocity is None else float(max_velocity[k])
        limits[mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, jnt)] = {
            'has_position_limits': has_pos,
            'min_position': lo if has_pos else _UNSET,
            'max_position': hi if has_pos else _UNSET,
            'has_velocity_limits': vel is not None,
            'max_velocity': vel if vel is not None else _UNSET,
            'has_acceleration_limits': False,
            'max_acceleration': _UNSET,
            'has_effort_limits': has_eff,
            'max_effort': float(np.max(np.abs(eff_range))) if has_eff else _UNSET,
        }
    return limits
