# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Robot profiles: how a trained policy maps onto a robot's own ROS 2 interfaces.

A profile (YAML, ``config/robots/<name>.yaml``) names what a ros2_control robot
already exposes: its joint names in the policy's action order, the
``/joint_states`` topic of its joint_state_broadcaster, the controller that
takes the commands (``forward_command_controller``: ``std_msgs/Float64MultiArray``
on ``/<controller>/commands`` in the controller's ``joints`` order, or
``joint_trajectory_controller``: a one-point ``trajectory_msgs/JointTrajectory``
on ``/<controller>/joint_trajectory``), the control rate, the joint limits
(a ros2_control ``joint_limits`` YAML or the ``<limit>`` tags of its URDF), the
model for forward kinematics, optional IMU / point-cloud topics, and where
the task's inputs come from on the robot. Validated like the run
configuration: an unknown key or a bad value is an error naming file and key.
File paths in a profile are relative to the profile's own directory, or
``package://<python package>/<path>`` for files that ship inside a package
(``package://unilab_bridge/assets/arm6.xml``). No ROS import.
"""

from __future__ import annotations

import pathlib
from typing import Literal

from pydantic import Field, field_validator, model_validator, ValidationError

from unilab_core.config import ConfigError, format_errors, read_yaml, Section

#: Profile keys that hold file paths (resolved against the profile's directory).
_FILE_KEYS = ('joint_limits_file', 'urdf_file', 'model_file')


class CommandSection(Section):
    """The controller that takes the robot's commands."""

    type: Literal['forward_command', 'joint_trajectory'] = Field(
        'forward_command', description='forward_command_controller (Float64MultiArray) or '
        'joint_trajectory_controller (one-point JointTrajectory).')
    topic: str = Field('/forward_position_controller/commands', min_length=1,
                       description='The controller\'s command topic.')
    interface: Literal['position', 'velocity', 'effort'] = Field(
        'position', description='The controller\'s command interface.')
    joints: list[str] = Field(
        default_factory=list, description='The controller\'s `joints` parameter, in its '
        'order ([] = the profile\'s joint_names order).')
    stamp: Literal['now', 'zero'] = Field(
        'now', description='joint_trajectory header.stamp: now = the time the command was '
        'made (the controller drops one that arrives after its time_from_start; needs clocks '
        'in sync); zero = start on receipt.')


class TaskInputsSection(Section):
    """Where the observation's task inputs come from on the robot."""

    kind: Literal['none', 'reach', 'walk', 'legged'] = Field(
        'none', description='reach: goal from goal_topic, tool position by forward '
        'kinematics of the measured joints; walk: IMU, odometry and a velocity command; '
        'legged: IMU and a velocity command (v_x, v_y, yaw rate), no odometry.')
    goal_topic: str = Field('/goal_pose', description='geometry_msgs/PoseStamped goals.')
    goal_frame: str = Field(
        'base_link', min_length=1, description='The frame goals must be given in: the '
        'robot\'s base frame, the one the task\'s workspace and the model are in (goals in '
        'another frame, or with an empty frame_id, are refused).')
    tool_site: str = Field('ee_site', description='Site (or body) of model_file whose '
                           'position is the tool position.')
    cmd_vel_topic: str = Field('/cmd_vel', description='geometry_msgs/Twist velocity command.')
    odom_topic: str = Field('/odom', description='nav_msgs/Odometry of the base (walk).')
    estimate_topic: str = Field(
        '', description='legged: nav_msgs/Odometry of a state estimator (the trunk\'s '
        'body-frame velocity and height; on a Go2 its sport-mode state, or motion capture), '
        'put in the critic\'s columns: online adaptation\'s walking reward needs it; the '
        'actor never reads it. Empty: none (zeros there; `unilab adapt` refuses the robot).')
    estimate_timeout_s: float = Field(
        0.1, gt=0.0, description='legged: a state estimate that arrived longer ago than this '
        'at a control step is stale: the step is counted (perception\'s `estimate_stale`, '
        'on /diagnostics) and logged; its critic columns keep the last estimate.')


class LeggedSection(Section):
    """
    A legged robot's supervisor on the gate: stand-up, blend-in, lie-down, fall stop, motor PD.

    Set on a legged robot's profile (``legged:``); absent (None) on arms. docs/legged.md.
    """

    motor_rate_hz: float = Field(
        500.0, ge=100.0, le=2000.0, description='Rate of the supervisor loop: PD torques '
        '(effort) or targets (position) sent to the driver.')
    kp: float = Field(20.0, gt=0.0, description='PD stiffness at the motor (N m/rad): the '
                      'gains of training (effort: the gate applies them; position: the '
                      'driver must declare them).')
    kd: float = Field(0.5, ge=0.0, description='PD damping at the motor (N m s/rad).')
    damping_kd: float = Field(1.0, gt=0.0, description='Damping (N m s/rad) in passive and '
                              'fault: tau = -damping_kd * qd.')
    stand_pose: list[float] = Field(
        default_factory=list, description='Standing pose (rad, joint_names order): stand-up '
        'ends here and the policy is blended in from here.')
    lie_pose: list[float] = Field(
        default_factory=list, description='Lying pose (rad, joint_names order): lie-down on '
        'disarm ends here, then damping.')
    stand_time_s: float = Field(2.0, gt=0.0, description='Stand-up: measured pose to '
                                'stand_pose in this time.')
    lie_time_s: float = Field(2.0, gt=0.0, description='Lie-down: to lie_pose in this time.')
    blend_steps: int = Field(50, ge=1, description='Policy steps over which the policy\'s '
                             'targets are blended in from stand_pose.')
    max_tilt_rad: float = Field(0.7, gt=0.0, lt=1.5708, description='Fall stop: roll or '
                                'pitch beyond this (rad).')
    max_joint_velocity: list[float] = Field(
        default_factory=list, description='Fault stop: a joint faster than this (rad/s; one '
        'value or one per joint; [] = the motors\' no-load speeds from model_file).')
    state_timeout_s: float = Field(0.05, gt=0.0, description='Fault stop: joint states or '
                                   'IMU older than this (s).')
    saturation_time_s: float = Field(0.5, gt=0.0, description='Fault stop: a joint\'s '
                                     'torque at its limit for this long (s).')

    @field_validator('stand_pose', 'lie_pose', 'max_joint_velocity')
    @classmethod
    def _finite(cls, v):
        import math
        if any(not math.isfinite(x) for x in v):
            raise ValueError(f'values must be finite, got {v}')
        return v


class RobotProfile(Section):
    """One robot: its joints, topics, controller, limits and model."""

    name: str = Field('', min_length=1, description='Robot name (namespaces, logs).')
    task: str = Field('', min_length=1, description='The task the policy was trained on '
                      '(its observation layout; the robot double simulates it).')
    joint_names: list[str] = Field(
        default_factory=list, min_length=1,
        description='The robot\'s joint names in the policy\'s action order.')
    joint_states_topic: str = Field('/joint_states', min_length=1,
                                    description='sensor_msgs/JointState of the robot.')
    joint_state_timeout_s: float = Field(
        0.1, gt=0.0, description='Joint states older than this: hold (they are the gate\'s '
        'reference and the policy\'s input).')
    joint_state_rate_hz: float = Field(
        100.0, gt=0.0, description='Rate of joint_state_broadcaster (the robot double '
        'publishes at this rate).')
    control_rate_hz: float = Field(50.0, gt=0.0, le=10000.0,
                                   description='Policy steps per second.')
    command: CommandSection = Field(default_factory=CommandSection)
    joint_limits_file: str = Field(
        '', description='ros2_control joint_limits YAML (UR\'s `!degrees` values load as '
        'they are); "" = the <limit> tags of urdf_file.')
    urdf_file: str = Field('', description='The robot\'s URDF (limits, /robot_description).')
    model_file: str = Field('', description='MJCF model for forward kinematics and the '
                            'safety look-ahead.')
    imu_topic: str = Field('', description='sensor_msgs/Imu topic ("" = none).')
    points_topic: str = Field('', description='sensor_msgs/PointCloud2 topic ("" = none).')
    task_inputs: TaskInputsSection = Field(default_factory=TaskInputsSection)
    legged: LeggedSection | None = Field(
        None, description='A legged robot\'s supervisor and motor PD (None: an arm).')

    @field_validator('joint_names')
    @classmethod
    def _distinct(cls, v):
        if len(set(v)) != len(v) or any(not n for n in v):
            raise ValueError(f'joint names must be distinct and non-empty, got {v}')
        return v

    @model_validator(mode='after')
    def _controller_joints(self):
        joints = self.command.joints
        if joints and sorted(joints) != sorted(self.joint_names):
            raise ValueError(f'command.joints {joints} must name the same joints as '
                             f'joint_names {self.joint_names}')
        if not self.joint_limits_file and not self.urdf_file:
            raise ValueError('set joint_limits_file or urdf_file (the gate needs limits)')
        legged = self.legged
        if legged is not None:
            j = len(self.joint_names)
            for key in ('stand_pose', 'lie_pose'):
                if len(getattr(legged, key)) != j:
                    raise ValueError(f'legged.{key} needs {j} values (one per joint name), '
                                     f'got {len(getattr(legged, key))}')
            if len(legged.max_joint_velocity) not in (0, 1, j):
                raise ValueError(f'legged.max_joint_velocity needs 1 or {j} values')
            if self.command.interface == 'velocity':
                raise ValueError('legged robots take `effort` (the gate runs the PD) or '
                                 '`position` (the driver runs it with legged.kp / kd)')
            if self.command.type != 'forward_command':
                raise ValueError('legged robots take commands through forward_command '
                                 'controllers (command.type: forward_command)')
        return self

    @property
    def control_dt(self) -> float:
        """Return the control period in seconds."""
        return 1.0 / self.control_rate_hz

    @property
    def controller_joints(self) -> list[str]:
        """Return the joints in the order the controller expects them."""
        return list(self.command.joints or self.joint_names)


def resolve_file(value: str, base: pathlib.Path) -> pathlib.Path:
    """Return the file of a profile value: ``package://pkg/path`` or relative to ``base``."""
    if value.startswith('package://'):
        import importlib.util
        pkg, _, rest = value[len('package://'):].partition('/')
        spec = importlib.util.find_spec(pkg) if pkg else None
        if spec is None or not spec.submodule_search_locations:
            raise ConfigError(f'{value}: no Python package `{pkg}`')
        return pathlib.Path(list(spec.submodule_search_locations)[0]) / rest
    return (base / value).resolve()


def load_profile(path: str | pathlib.Path) -> RobotProfile:
    """Load and validate a profile file; file keys become absolute. Errors name file and key."""
    path = pathlib.Path(path)
    data = read_yaml(path)
    wrapped = set(data) == {'robot'}
    if wrapped:
        data = data['robot']
    if not isinstance(data, dict):
        raise ConfigError(f'{path}: `robot` must be a mapping of profile keys')
    try:
        profile = RobotProfile.model_validate(data)
    except ValidationError as exc:
        text = format_errors(exc, str(path))
        raise ConfigError(text.replace('key `', 'key `robot.') if wrapped else text) from None
    base = path.resolve().parent
    updates = {}
    for key in _FILE_KEYS:
        value = getattr(profile, key)
        if value:
            full = resolve_file(value, base)
            if not full.is_file():
                hint = '' if value.startswith('package://') or pathlib.Path(value).is_absolute() \
                    else (f' (relative to the profile\'s directory {base}: a copied profile '
                          'needs its files copied beside it, or absolute paths)')
                raise ConfigError(f'{path}: key `{key}`: {full} not found{hint}')
            updates[key] = str(full)
    return profile.model_copy(update=updates)


def fleet_namespace(robot: int, robots: int) -> str:
    """
    Return robot ``robot``'s namespace in a fleet of ``robots``: '' alone, else ``/robot<k>``.

    A fleet on one ROS graph puts each robot's standard topics under its own
    namespace (``/robot0/joint_states``, ...), k from 0; a single robot keeps the
    plain names. The robot double, its scenario and ``check-robot`` all use this.
    """
    return '' if int(robots) == 1 else f'/robot{int(robot)}'


def namespaced(namespace: str, topic: str) -> str:
    """Return ``topic`` (absolute or relative) under ``namespace`` ('' = unchanged)."""
    if not namespace:
        return topic if topic.startswith('/') else '/' + topic
    return namespace.rstrip('/') + '/' + topic.lstrip('/')
