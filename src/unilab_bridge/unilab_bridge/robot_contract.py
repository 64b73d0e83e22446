# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab check-robot``: does a live robot expose the standard topics its profile names.

A deployed policy talks to a robot only through what ros2_control robots already
expose (see ``unilab_core.robot_profile``), so that is what is checked:
``/joint_states`` from ``joint_state_broadcaster`` (type, rate, every profile joint
present by name), a subscriber on the controller's command topic with its type,
the IMU / point cloud / odometry topics the profile uses, and, optionally,
``robot_description``. The training graph's private topics are not part of it.
When the robot publishes its URDF and the profile computes the tool position
from its model (``task_inputs.kind: reach``), the model's convention is checked
too: the frames both name must agree within 1 mm at a set of joint poses
(``unilab_core.kinematics.compare_with_urdf``), or the policy would be told a
tool position the robot does not have. A legged robot whose driver runs the PD
itself (``legged`` profile, ``position`` interface) must declare its gains in the
URDF's ``<ros2_control>`` block (``<param name="kp">`` / ``kd`` of each joint), and
they must be the training's (``legged.kp`` / ``kd``): other gains make another robot
than the one the policy learned on (``check_gains``).
Pure: the check works on a ``GraphSnapshot`` (topic types, publisher/subscriber
nodes, measured rates, sampled joint names), which ``robot_probe.py`` fills from a
live ROS graph and tests fabricate by hand.
"""

from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET

from unilab_core.kinematics import compare_with_urdf
from unilab_core.robot_profile import namespaced, RobotProfile

# A measured rate may fall this far below the nominal one (timer jitter, short window).
RATE_TOLERANCE = 0.8

#: Message type of each command controller (as the ROS graph reports types).
COMMAND_TYPES = {'forward_command': 'std_msgs/msg/Float64MultiArray',
                 'joint_trajectory': 'trajectory_msgs/msg/JointTrajectory'}


@dataclasses.dataclass(frozen=True)
class ContractItem:
    """One topic the robot publishes (``role='publish'``) or must read (``'subscribe'``)."""

    key: str
    topic: str
    msg_type: str  # ROS 2 type name as the graph reports it, e.g. sensor_msgs/msg/Imu
    role: str
    required: bool
    min_rate_hz: float = 0.0  # nominal rate; 0 = no rate requirement
    names: tuple[str, ...] = ()  # JointState: joint names every message must carry
    note: str = ''


@dataclasses.dataclass
class GraphSnapshot:
    """What a probe saw: topic -> types, publisher / subscriber nodes, rates, joint names."""

    types: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    publishers: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    subscribers: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    rates_hz: dict[str, float] = dataclasses.field(default_factory=dict)
    names: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    nodes: list[str] = dataclasses.field(default_factory=list)
    window_s: float = 0.0
    robot_description: str = ''  # the URDF the robot published ('' = none received)


@dataclasses.dataclass(frozen=True)
class ItemResult:
    """The verdict on one contract item; ``problems`` is empty when it is met."""

    item: ContractItem
    problems: tuple[str, ...]

    @property
    def met(self) -> bool:
        """Return whether the item is satisfied."""
        return not self.problems


def profile_contract(profile: RobotProfile, namespace: str = '') -> list[ContractItem]:
    """Return the items of ``profile``'s robot (under ``namespace``, e.g. ``/robot0``)."""
    def topic(name):
        return namespaced(namespace, name)
    kind = profile.task_inputs.kind
    items = [
        ContractItem(
            'joint_states', topic(profile.joint_states_topic), 'sensor_msgs/msg/JointState',
            'publish', True, profile.joint_state_rate_hz, tuple(profile.joint_names),
            'joint_state_broadcaster: position and velocity of every profile joint, by name '
            '(any order, other joints allowed)'),
        ContractItem(
            'command', topic(profile.command.topic), COMMAND_TYPES[profile.command.type],
            'subscribe', True, note=f'the {profile.command.type} controller '
            f'({profile.command.interface}) of joints {profile.controller_joints}'),
    ]
    if profile.imu_topic:
        items.append(ContractItem(
            'imu', topic(profile.imu_topic), 'sensor_msgs/msg/Imu', 'publish', True,
            profile.control_rate_hz, note='gyro, specific force, orientation (REP-145)'))
    if profile.points_topic:
        items.append(ContractItem(
            'points', topic(profile.points_topic), 'sensor_msgs/msg/PointCloud2', 'publish',
            True, 1.0, note='lidar sweeps (Velodyne XYZIRT layout)'))
    if kind == 'walk':
        items.append(ContractItem(
            'odom', topic(profile.task_inputs.odom_topic), 'nav_msgs/msg/Odometry', 'publish',
            True, profile.control_rate_hz, note='base pose and twist (twist in the base frame)'))
    if kind == 'legged' and profile.task_inputs.estimate_topic:
        items.append(ContractItem(
            'estimate', topic(profile.task_inputs.estimate_topic), 'nav_msgs/msg/Odometry',
            'publish', True, profile.control_rate_hz,
            note='state estimate: trunk velocity (base frame) and height, for adaptation'))
    gains = declares_gains(profile)
    items.append(ContractItem(
        'robot_description', topic('robot_description'), 'std_msgs/msg/String', 'publish',
        gains, note='URDF (transient local) for robot_state_publisher / RViz'
        + ('; its <ros2_control> block declares the driver\'s kp / kd' if gains else '')))
    return items


def declares_gains(profile: RobotProfile) -> bool:
    """Return whether the robot's driver runs the PD (its gains must then be checked)."""
    return profile.legged is not None and profile.command.interface == 'position'


def driver_gains(urdf_text: str) -> dict[str, dict[str, float]]:
    """Return ``{joint: {kp, kd}}`` from a URDF's ``<ros2_control>`` joints' params."""
    root = ET.fromstring(urdf_text)
    out = {}
    for joint in root.iter('joint'):
        params = {p.get('name'): p.text for p in joint.findall('param')}
        found = {}
        for key in ('kp', 'kd'):
            if key in params:
                try:
                    found[key] = float(params[key])
                except (TypeError, ValueError):
                    found[key] = math.nan
        if found and joint.get('name'):
            out[joint.get('name')] = found
    return out


def check_gains(profile: RobotProfile, urdf_text: str, namespace: str = '') -> ItemResult:
    """Check that the driver declares the training's kp / kd for every profile joint."""
    leg = profile.legged
    item = ContractItem('gains', namespaced(namespace, 'robot_description'),
                        'std_msgs/msg/String', 'publish', True,
                        note=f'driver PD gains = training\'s (kp {leg.kp:g}, kd {leg.kd:g})')
    try:
        declared = driver_gains(urdf_text)
    except ET.ParseError as exc:
        return ItemResult(item, (f'the robot_description is not readable XML: {exc}',))
    problems = []
    for name in profile.joint_names:
        got = declared.get(name, {})
        for key, want in (('kp', leg.kp), ('kd', leg.kd)):
            if key not in got:
                problems.append(f'{name}: the driver declares no {key} (<ros2_control> '
                                f'<joint name="{name}"><param name="{key}">)')
            elif not math.isclose(got[key], want, rel_tol=1e-6, abs_tol=1e-9):
                problems.append(f'{name}: driver {key} {got[key]:g}, trained with {want:g}')
    if len(problems) > 4:
        problems = problems[:4] + [f'... {len(problems) - 4} more']
    return ItemResult(item, tuple(problems))


def _fmt_hz(hz: float) -> str:
    return f'{hz:.1f} Hz'


def check_item(item: ContractItem, snap: GraphSnapshot) -> ItemResult:
    """Check one item against a snapshot."""
    problems = []
    types = snap.types.get(item.topic, [])
    if item.role == 'publish':
        if not snap.publishers.get(item.topic):
            return ItemResult(item, (f'no publisher on {item.topic}',))
        if item.msg_type not in types:
            problems.append(f'type {", ".join(types) or "?"} (expected {item.msg_type})')
        rate = snap.rates_hz.get(item.topic)
        if item.min_rate_hz > 0:
            if not rate:
                problems.append(f'no message received in {snap.window_s:g} s')
            elif rate < RATE_TOLERANCE * item.min_rate_hz:
                problems.append(f'rate {_fmt_hz(rate)} < {_fmt_hz(item.min_rate_hz)}')
        if item.names and snap.names.get(item.topic):
            seen = set(snap.names[item.topic])
            missing = [n for n in item.names if n not in seen]
            if missing:
                problems.append(f'joints missing from the messages: {missing} (they name '
                                f'{sorted(seen)[:8]})')
    else:
        readers = snap.subscribers.get(item.topic, [])
        if not readers:
            return ItemResult(item, (f'nothing subscribes to {item.topic}',))
        if item.msg_type not in types:
            problems.append(f'type {", ".join(types) or "?"} (expected {item.msg_type})')
    return ItemResult(item, tuple(problems))


def check_convention(profile: RobotProfile, urdf_text: str,
                     namespace: str = '') -> ItemResult:
    """
    Check the profile's model against the robot's URDF: same frames at the same joint poses.

    The poses: zero and 19 random ones in the model's joint ranges (within +-pi). A URDF
    that cannot be read, or names no frame of the model, is a problem too.
    """
    def item(note):
        return ContractItem('kinematics', namespaced(namespace, 'robot_description'),
                            'std_msgs/msg/String', 'publish', True, note=note)
    try:
        result = compare_with_urdf(profile.model_file, urdf_text, profile.joint_names)
    except ValueError as exc:
        return ItemResult(item('model vs URDF'), (f'convention check impossible: {exc}',))
    if result.ok:
        return ItemResult(item(result.describe()), ())
    return ItemResult(item('model vs URDF'), (
        f'{result.describe()}: the model\'s joint zeros, axes or signs are not the '
        'robot\'s',))


def check_contract(items: list[ContractItem], snap: GraphSnapshot,
                   profile: RobotProfile | None = None) -> list[ItemResult]:
    """Check every item (and the model's convention, given ``profile``); see contract_ok."""
    results = [check_item(item, snap) for item in items]
    if profile is not None and snap.robot_description and profile.model_file \
            and profile.task_inputs.kind == 'reach':
        ns = next((i.topic[:-len('/robot_description')] for i in items
                   if i.key == 'robot_description'), '')
        results.append(check_convention(profile, snap.robot_description, ns))
    if profile is not None and declares_gains(profile):
        ns = next((i.topic[:-len('/robot_description')] for i in items
                   if i.key == 'robot_description'), '')
        results.append(check_gains(profile, snap.robot_description, ns) if
                       snap.robot_description else ItemResult(ContractItem(
                           'gains', namespaced(ns, 'robot_description'),
                           'std_msgs/msg/String', 'publish', True, note='driver PD gains'),
                           ('no robot_description received: the driver\'s gains cannot be '
                            'checked against the training\'s',)))
    return results


def contract_ok(results: list[ItemResult]) -> bool:
    """Return whether every required item is met."""
    return all(r.met for r in results if r.item.required)


def format_report(results: list[ItemResult], snap: GraphSnapshot) -> str:
    """Return the human-readable report the check command prints."""
    lines = []
    for r in results:
        wrong = r.item.key in ('kinematics', 'gains')
        status = 'ok     ' if r.met else ('WRONG  ' if wrong else
                                          'MISSING' if r.item.required else 'absent ')
        kind = 'required' if r.item.required else 'optional'
        rate = snap.rates_hz.get(r.item.topic)
        measured = f', measured {_fmt_hz(rate)}' if rate else ''
        if r.item.key in ('kinematics', 'gains'):
            lines.append(f'{status} {r.item.topic} {r.item.key} [{r.item.note}]')
        else:
            lines.append(f'{status} {r.item.topic} [{r.item.msg_type}, {r.item.role}, {kind}'
                         f'{measured}]')
        lines += [f'          - {p}' for p in r.problems]
    if any(n.endswith('/robot_double') for n in snap.nodes):
        lines.append('note: the robot double is running; this robot is a simulation')
    missing = [r.item.key for r in results if r.item.required and not r.met]
    lines.append('robot ok' if not missing else f'robot NOT ok: {", ".join(missing)}')
    return '\n'.join(lines)
