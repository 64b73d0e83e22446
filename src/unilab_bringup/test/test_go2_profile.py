# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The Go2 profiles against Unitree's own data and the task they deploy (no ROS)."""

import pytest
from unilab_bringup.paths import profile_path
from unilab_bringup.prepare import task_info
from unilab_core.robot_profile import load_profile
from unilab_safety.limits import load_joint_limits

#: unitree_ros go2_description's joint names in its URDF order (FL, FR, RL, RR legs).
URDF_ORDER = [f'{leg}_{part}_joint' for leg in ('FL', 'FR', 'RL', 'RR')
              for part in ('hip', 'thigh', 'calf')]
#: unitree_sdk2's motor order on a Go2's LowCmd / LowState: FR, FL, RR, RL (0-11).
SDK_ORDER = [f'{leg}_{part}_joint' for leg in ('FR', 'FL', 'RR', 'RL')
             for part in ('hip', 'thigh', 'calf')]


@pytest.mark.parametrize('name,interface', [('go2', 'position'), ('go2_effort', 'effort')])
def test_names_orders_and_gains_are_unitrees_and_the_trainings(name, interface):
    p = load_profile(profile_path(name))
    assert p.joint_names == URDF_ORDER and p.controller_joints == SDK_ORDER
    assert p.command.interface == interface and p.task == 'go2_walk'
    info, _ = task_info('go2_walk')
    assert list(info.joint_names) == URDF_ORDER
    # unitree_rl_gym go2_config: stiffness 20, damping 0.5 (the gains go2_walk trains with)
    assert set(info.motor_kp) == {p.legged.kp} == {20.0}
    assert set(info.motor_kd) == {p.legged.kd} == {0.5}


def test_the_limits_file_is_the_tasks_target_limits():
    p = load_profile(profile_path('go2'))
    shipped = load_joint_limits(p.joint_limits_file, p.joint_names)
    _, task_limits = task_info('go2_walk')
    for k, name in enumerate(p.joint_names):
        want = task_limits[name]
        assert shipped.pos_lo[k] == pytest.approx(want['min_position'], abs=1e-6)
        assert shipped.pos_hi[k] == pytest.approx(want['max_position'], abs=1e-6)
        assert shipped.vel_max[k] == pytest.approx(want['max_velocity'], abs=1e-6)
