# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
arm6_reach_velocity: the arm6 reach task commanded in joint velocities (rad/s).

The robot a ``forward_velocity_controller`` drives: each drive is a MuJoCo velocity
servo (force ``kv * (command - qdot)``, within the drive's force range) instead of a
position servo, commands are absolute velocities within +-MAX_JOINT_VELOCITY, and a
drive with no command left holds zero velocity. It exists so that what a velocity
interface needs of the safety gate and of deployment (every stop a zero command:
ros2_control's forward command controllers keep their last command) is exercised on
the robot double; it is not tuned for learning.
"""

from unilab_bridge.tasks.arm6_reach import Arm6Reach
from unilab_bridge.tasks.joint_limits import actuated_joints, is_position_actuator

#: Velocity gain of each drive, as a share of its position servo's stiffness kp
#: (N m s/rad per N m/rad): big drives kv 500 against joint damping 60, small ones kv
#: 50 against damping 5, so a drive reaches about 90 % of its command unloaded.
KV_PER_KP = 0.5


def to_velocity_servos(model) -> None:
    """Turn ``model``'s position servos into velocity servos in place (ctrl in rad/s)."""
    for act in actuated_joints(model)[0]:
        if not is_position_actuator(model, act):
            raise ValueError(f'actuator {model.actuator(act).name} is not a position servo')
        kv = KV_PER_KP * model.actuator_gainprm[act, 0]
        model.actuator_gainprm[act, 0] = kv
        model.actuator_biasprm[act, :3] = (0.0, 0.0, -kv)
        model.actuator_ctrlrange[act] = (-Arm6Reach.MAX_JOINT_VELOCITY,
                                         Arm6Reach.MAX_JOINT_VELOCITY)
    model.actuator_ctrllimited[:] = 1


class Arm6ReachVelocity(Arm6Reach):
    """Reach with the arm6 model; commands are joint velocities in rad/s (zero: stand)."""

    NAME = 'arm6_reach_velocity'
    COMMAND_INTERFACE = 'velocity'
    # The commanded tool's speed is forward kinematics of position commands: not defined.
    COMMAND_TOOL_SPEED_SCALE = 0.0

    def _load_model(self):
        """Return the arm6 model with velocity servos."""
        model = super()._load_model()
        to_velocity_servos(model)
        return model
