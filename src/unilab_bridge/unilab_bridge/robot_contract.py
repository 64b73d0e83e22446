# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Real mode: the topic contract a robot's drivers must satisfy to replace the bridge, and its check.

Derived from what the bridge publishes and subscribes (``bridge_node.py``) and what the
perception and safety nodes read (``unilab_core.topics``). Pure: the check works on a
``GraphSnapshot`` (topic types, publisher/subscriber nodes, measured rates, sampled frame
ids), which ``robot_probe.py`` fills from a live ROS graph and tests fabricate by hand.
"""

from __future__ import annotations

import dataclasses
import re

from unilab_core import topics

# A measured rate may fall this far below the nominal one (timer jitter, short window).
RATE_TOLERANCE = 0.8
# Frame ids / joint names carry the env index as a prefix: env<i>/<name>.
ENV_FRAME = r'env\d+/'


@dataclasses.dataclass(frozen=True)
class ContractItem:
    """One topic the drivers publish (``role='publish'``) or must read (``'subscribe'``)."""

    key: str
    topic: str
    msg_type: str  # ROS 2 type name as the graph reports it, e.g. sensor_msgs/msg/Imu
    role: str
    required: bool
    min_rate_hz: float = 0.0  # nominal rate; 0 = no rate requirement
    frame: str = ''  # regex every sampled frame id (JointState: every name) must match
    note: str = ''


@dataclasses.dataclass
class GraphSnapshot:
    """What a probe saw: topic -> types, publisher / subscriber node names, rates, frames."""

    types: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    publishers: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    subscribers: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    rates_hz: dict[str, float] = dataclasses.field(default_factory=dict)
    frames: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    nodes: list[str] = dataclasses.field(default_factory=list)
    window_s: float = 0.0


@dataclasses.dataclass(frozen=True)
class ItemResult:
    """The verdict on one contract item; ``problems`` is empty when it is met."""

    item: ContractItem
    problems: tuple[str, ...]

    @property
    def met(self) -> bool:
        """Return whether the item is satisfied."""
        return not self.problems


def robot_contract(control_hz: float, imu: bool = False, points: bool = False,
                   camera: bool = False) -> list[ContractItem]:
    """
    Return the contract for a task stepped at ``control_hz``.

    ``imu`` / ``points`` / ``camera`` make those sensors required (the perception section
    uses them); otherwise they are listed as optional.
    """
    hz = float(control_hz)
    return [
        ContractItem(
            'joint_states', topics.JOINT_STATES, 'sensor_msgs/msg/JointState', 'publish', True,
            hz, ENV_FRAME, 'position, velocity and effort of every task joint, names '
            'env<i>/<joint> (the task\'s joint names); one message per control step'),
        ContractItem(
            'task_state', topics.TASK_STATE, 'unilab_interfaces/msg/TensorBatch', 'publish',
            True, hz, '', 'kind task_state: extras [N, E] (e.g. end-effector and target '
            'for arm6_reach) plus reward/terminated/truncated; same stamp as /joint_states'),
        ContractItem(
            'safe_command', topics.SAFE_COMMAND, 'unilab_interfaces/msg/TensorBatch',
            'subscribe', True, 0.0, '', 'the drivers apply the safety gate\'s kind '
            '"command" [N, act] (joint position targets in rad for position tasks) and '
            'hold the last one; "fallback" rows are applied too'),
        ContractItem(
            'imu', topics.IMU, 'sensor_msgs/msg/Imu', 'publish', imu, hz, ENV_FRAME,
            'gyro [rad/s], specific force [m/s^2] (+9.81 z at rest), orientation w-x-y-z; '
            'frame_id env<i>/imu; covariances per REP-145'),
        ContractItem(
            'points', topics.POINTS, 'sensor_msgs/msg/PointCloud2', 'publish', points, 10.0,
            ENV_FRAME, 'Velodyne XYZIRT fields (x y z intensity float32, ring uint16, time '
            'float32), sensor frame env<i>/lidar; 10 Hz sweeps'),
        ContractItem(
            'image', topics.IMAGE, 'sensor_msgs/msg/Image', 'publish', camera, 0.0, ENV_FRAME,
            'rgb8, frame_id env<i>/camera'),
    ]


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
        if item.frame:
            bad = [f for f in snap.frames.get(item.topic, []) if not re.match(item.frame, f)]
            if bad:
                problems.append(f'frame/name {bad[0]!r} does not match {item.frame}')
    else:
        readers = snap.subscribers.get(item.topic, [])
        if not readers:
            return ItemResult(item, (f'nothing subscribes to {item.topic}',))
        if item.msg_type not in types:
            problems.append(f'type {", ".join(types) or "?"} (expected {item.msg_type})')
    return ItemResult(item, tuple(problems))


def check_contract(items: list[ContractItem], snap: GraphSnapshot) -> list[ItemResult]:
    """Check every item; see ``contract_ok`` for the overall verdict."""
    return [check_item(item, snap) for item in items]


def contract_ok(results: list[ItemResult]) -> bool:
    """Return whether every required item is met."""
    return all(r.met for r in results if r.item.required)


def format_report(results: list[ItemResult], snap: GraphSnapshot) -> str:
    """Return the human-readable report the check command prints."""
    lines = []
    for r in results:
        status = 'ok     ' if r.met else ('MISSING' if r.item.required else 'absent ')
        kind = 'required' if r.item.required else 'optional'
        rate = snap.rates_hz.get(r.item.topic)
        measured = f', measured {_fmt_hz(rate)}' if rate else ''
        lines.append(f'{status} {r.item.topic} [{r.item.msg_type}, {r.item.role}, {kind}'
                     f'{measured}]')
        lines += [f'          - {p}' for p in r.problems]
    if any(n.endswith('/bridge') or n == 'bridge' for n in snap.nodes):
        lines.append('note: the simulator bridge is running; this graph is the simulator, '
                     'not robot drivers')
    missing = [r.item.key for r in results if r.item.required and not r.met]
    lines.append('contract met' if not missing else f'contract NOT met: {", ".join(missing)}')
    return '\n'.join(lines)
