# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Foxglove on the live graph without ROS: a foxglove-sdk WebSocket server (no ROS types).

Channels are JSON (Foxglove's ``json`` encoding): ``/joint_states``, ``/goal_pose``,
``/diagnostics`` and ``/command`` as plain objects, and ``/tf`` as
``foxglove.FrameTransforms`` built from the URDF and the joint states
(``unilab_view.model``), so Foxglove's 3D panel places the robot's frames without tf2.
One server per view; the view calls it at the screen rate, never per message.
"""

from __future__ import annotations

import json

import foxglove

from unilab_view.model import quaternion_xyzw, RobotModel

OBJECT = {'type': 'object'}


def _schema(name: str) -> foxglove.Schema:
    return foxglove.Schema(name=name, encoding='jsonschema',
                           data=json.dumps(OBJECT).encode())


class FoxgloveBridge:
    """A WebSocket server (Foxglove's protocol) with the view's channels."""

    def __init__(self, port: int = 8765, host: str = '127.0.0.1'):
        self.context = foxglove.Context()
        self.server = foxglove.start_server(name='unilab', host=host, port=port,
                                            context=self.context)
        self.channels = {}

    @property
    def port(self) -> int:
        """Return the port the server listens on (the one given, or the one chosen for 0)."""
        return self.server.port

    def _log(self, topic: str, schema: str, msg: dict, stamp_ns: int) -> None:
        channel = self.channels.get(topic)
        if channel is None:
            channel = self.channels[topic] = foxglove.Channel(
                topic, schema=_schema(schema), message_encoding='json', context=self.context)
        channel.log(msg, log_time=stamp_ns)

    def joint_states(self, ns: str, names, positions, stamp_ns: int) -> None:
        """Send one joint state (names and positions)."""
        self._log(f'{ns}/joint_states', 'sensor_msgs/JointState',
                  {'name': list(names), 'position': [float(p) for p in positions]}, stamp_ns)

    def command(self, ns: str, names, positions, stamp_ns: int) -> None:
        """Send the last command seen (joint names and positions)."""
        self._log(f'{ns}/command', 'unilab/Command',
                  {'name': list(names), 'position': [float(p) for p in positions]}, stamp_ns)

    def goal(self, ns: str, frame: str, xyz, stamp_ns: int) -> None:
        """Send the goal as ``foxglove.PoseInFrame``."""
        self._log(f'{ns}/goal_pose', 'foxglove.PoseInFrame', {
            'timestamp': _time(stamp_ns), 'frame_id': frame,
            'pose': {'position': dict(zip('xyz', map(float, xyz))),
                     'orientation': {'x': 0.0, 'y': 0.0, 'z': 0.0, 'w': 1.0}}}, stamp_ns)

    def diagnostics(self, statuses: list[dict], stamp_ns: int) -> None:
        """Send the statuses of one ``/diagnostics`` message (name, level, message, values)."""
        self._log('/diagnostics', 'diagnostic_msgs/DiagnosticArray', {'status': statuses},
                  stamp_ns)

    def frames(self, ns: str, model: RobotModel, stamp_ns: int) -> None:
        """Send every joint's transform at the model's current joints as FrameTransforms."""
        prefix = ns.strip('/') + '/' if ns.strip('/') else ''
        transforms = []
        for parent, child, t in model.joint_transforms():
            x, y, z = (float(v) for v in t[:3, 3])
            qx, qy, qz, qw = quaternion_xyzw(t[:3, :3])
            transforms.append({
                'timestamp': _time(stamp_ns), 'parent_frame_id': prefix + parent,
                'child_frame_id': prefix + child,
                'translation': {'x': x, 'y': y, 'z': z},
                'rotation': {'x': qx, 'y': qy, 'z': qz, 'w': qw}})
        self._log('/tf', 'foxglove.FrameTransforms', {'transforms': transforms}, stamp_ns)

    def close(self) -> None:
        """Stop the server."""
        self.server.stop()


def _time(stamp_ns: int) -> dict:
    return {'sec': stamp_ns // 1_000_000_000, 'nsec': stamp_ns % 1_000_000_000}
