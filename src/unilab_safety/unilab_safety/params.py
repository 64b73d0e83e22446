# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The safety gate's specification: the config's ``safety`` section plus what the robot says.

One typed model is the safety node's parameters, the real-time process's
start-up argument (as plain data) and the input of ``build.build_gate`` in
every loop without ROS. The ``safety`` section is the user's configuration
(with ``joint_limits_file`` resolved to the file in force); the other fields
come from the task or the robot profile. No ROS import.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator
from unilab_core import topics
from unilab_core.config import SafetySection, Section
from unilab_core.health import HealthParams
from unilab_core.robot_profile import LeggedSection


class OutputSection(Section):
    """Where the safe commands go: the graph's tensor topic, or a robot's controller."""

    type: Literal['tensor_batch', 'forward_command', 'joint_trajectory'] = Field(
        'tensor_batch', description='tensor_batch: unilab_interfaces/TensorBatch (training, '
        'simulation); forward_command: std_msgs/Float64MultiArray for a '
        'forward_command_controller; joint_trajectory: a one-point '
        'trajectory_msgs/JointTrajectory (time_from_start = dt) for a '
        'joint_trajectory_controller.')
    topic: str = Field(topics.SAFE_COMMAND, min_length=1, description='The output topic.')
    joints: list[str] = Field(
        default_factory=list, description='The controller\'s joint order ([] = '
        'joint_names).')
    stamp: Literal['now', 'zero'] = Field(
        'now', description='joint_trajectory header.stamp: now = when the command was made '
        '(the controller drops a command that arrives after its time_from_start); zero = '
        '"start on receipt" (clocks not in sync).')


class SafetySpec(Section):
    """Everything the gate, its loop and the safety node are built from."""

    joint_names: list[str] = Field(
        default_factory=list, min_length=1,
        description='Commanded joints, in the action\'s column order.')
    interface: Literal['position', 'velocity', 'effort'] = Field(
        'position', description='Command interface of the joints (ros2_control naming).')
    dt: float = Field(0.02, gt=0.0, description='Control period [s] (rate limits per step).')
    num_envs: int = Field(1, ge=1, description='Rows per command batch (envs or robots).')
    lockstep: bool = Field(
        False, description='Simulation in lock-step: the consumer steps on `command` outputs '
        'only, so watchdog fallbacks are published but never applied.')
    run_dir: str = Field('', description='Write safety_stats.json here ("" = do not).')
    armed: bool = Field(
        True, description='Commands may reach the actuators from the start; false = only '
        'after the ~/arm service (a robot: nothing moves until someone arms it).')
    arm_after_nodes: list[str] = Field(
        default_factory=list, description='A legged robot armed at start stands up only once '
        'these nodes (full names, e.g. /adapter) are on the graph with their subscriptions: '
        'processes joining the graph later make every participant handle their discovery, '
        'which stalled the control loop\'s inputs past the fall stop\'s bound.')
    state_timeout_s: float = Field(
        0.0, ge=0.0, description='Joint states older than this: actions are not answered '
        'and the watchdog holds (0 = not checked; lock-step simulation).')
    robot_rules: bool = Field(
        False, description='Apply the robot-only rules: tracking bound and tool-speed limit '
        '(safety.max_tracking_error_rad, max_tool_speed_mps). The deploy graph sets it; '
        'training does not.')
    envelope_low: list[float] = Field(
        default_factory=list, description='Lower end of the trained joint range the '
        'position limits are narrowed to, margin included ([] = the driver\'s limits only).')
    envelope_high: list[float] = Field(
        default_factory=list, description='Upper end of the trained joint range.')
    tool_model_file: str = Field(
        '', description='MJCF model for the tool-speed limit\'s forward kinematics.')
    tool_site: str = Field('', description='Site (or body) of tool_model_file that is the '
                           'tool.')
    output: OutputSection = Field(default_factory=OutputSection)
    legged_interface: Literal['', 'effort', 'position'] = Field(
        '', description='A legged robot (legged.py): the gated position targets go to the '
        'supervisor, which sends torques (effort: the PD at the motor rate) or targets '
        '(position: the driver\'s PD) to the output; "" = an arm, the gate\'s output as is.')
    legged: LeggedSection = Field(default_factory=LeggedSection,
                                  description='The legged supervisor\'s settings.')
    imu_topic: str = Field('', description='sensor_msgs/Imu of a legged robot (its tilt).')
    motor_model_file: str = Field(
        '', description='MJCF model whose motors give the torque limits and torque-speed '
        'curve of a legged robot\'s PD.')
    safety: SafetySection = Field(default_factory=SafetySection)
    health: HealthParams = Field(default_factory=HealthParams)

    @model_validator(mode='after')
    def _controller_output(self):
        o = self.output
        if o.type != 'tensor_batch':
            if self.num_envs != 1:
                raise ValueError(f'output.type {o.type} drives one robot: num_envs must be 1, '
                                 f'got {self.num_envs}')
            if o.joints and sorted(o.joints) != sorted(self.joint_names):
                raise ValueError(f'output.joints {o.joints} must name the joints of '
                                 f'joint_names {self.joint_names}')
        return self

    @model_validator(mode='after')
    def _legged(self):
        if not self.legged_interface:
            return self
        if self.interface != 'position' or self.output.type != 'forward_command':
            raise ValueError('a legged robot gates position targets (interface: position) '
                             'and drives a forward_command controller')
        if not self.imu_topic or not self.motor_model_file:
            raise ValueError('a legged robot needs imu_topic (its tilt) and motor_model_file '
                             '(its motors)')
        j = len(self.joint_names)
        if len(self.legged.stand_pose) != j or len(self.legged.lie_pose) != j:
            raise ValueError(f'legged.stand_pose and legged.lie_pose need {j} values each')
        return self

    @model_validator(mode='after')
    def _envelope(self):
        lo, hi, j = self.envelope_low, self.envelope_high, len(self.joint_names)
        if (lo or hi) and (len(lo) != j or len(hi) != j):
            raise ValueError(f'envelope_low and envelope_high need {j} values each (one per '
                             f'joint), got {len(lo)} and {len(hi)}')
        if any(not (a <= b) for a, b in zip(lo, hi)):
            raise ValueError(f'envelope_low must be <= envelope_high, got {lo}, {hi}')
        return self

    @field_validator('joint_names')
    @classmethod
    def _names(cls, v):
        if any(not n for n in v) or len(set(v)) != len(v):
            raise ValueError(f'joint names must be distinct and non-empty, got {v}')
        return v
