# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Foxglove on the live graph without ROS: a foxglove-sdk WebSocket server (no ROS types).

Channels are JSON (Foxglove's ``json`` encoding): ``/joint_states``, ``/goal_pose``,
``/diagnostics`` and ``/command`` as plain objects, ``/tf`` as
``foxglove.FrameTransforms`` built from the URDF and the joint states
(``unilab_view.model``), so Foxglove's 3D panel places the robot's frames without tf2,
and the graph's TensorBatch topics as arrays (``unilab_view.tensor_channels``, which
passes its ``listener`` to learn what the clients watch). One server per view; the view
calls it at the screen rate, never per message.

``mcap``: the same channels, message for message, also go to an MCAP file (the SDK's
MCAP writer on the same context), so a recording opens in Foxglove with the layout made
on the live graph. It is written under a temporary name beside the file and renamed
over it on ``close`` (a reader never sees half a file; a killed view leaves the
temporary one, readable up to its last chunk).
"""

from __future__ import annotations

import contextlib
import json
import pathlib

import foxglove
from unilab_core.atomic import atomic_path

from unilab_view.model import quaternion_xyzw, RobotModel

OBJECT = {'type': 'object'}


def _schema(name: str) -> foxglove.Schema:
    return foxglove.Schema(name=name, encoding='jsonschema',
                           data=json.dumps(OBJECT).encode())


class FoxgloveBridge:
    """The view's channels on a WebSocket server (Foxglove's protocol) and/or an MCAP file."""

    def __init__(self, port: int | None = 8765, host: str = '127.0.0.1', listener=None,
                 mcap: str | pathlib.Path | None = None):
        self.context = foxglove.Context()
        self.server = None if port is None else foxglove.start_server(
            name='unilab', host=host, port=port, context=self.context,
            server_listener=listener)
        self.channels = {}
        self._files = contextlib.ExitStack()
        self.mcap = None
        if mcap is not None:
            tmp = self._files.enter_context(atomic_path(mcap))
            self.mcap = foxglove.open_mcap(tmp, allow_overwrite=True, context=self.context)

    @property
    def port(self) -> int:
        """Return the port the server listens on (the one given, or the one chosen for 0)."""
        return self.server.port

    def advertise(self, topic: str, schema: str):
        """Return ``topic``'s channel, advertised to the clients the first time."""
        channel = self.channels.get(topic)
        if channel is None:
            channel = self.channels[topic] = foxglove.Channel(
                topic, schema=_schema(schema), message_encoding='json', context=self.context)
        return channel

    def log(self, topic: str, schema: str, msg: dict, stamp_ns: int) -> None:
        """Send ``msg`` (a JSON object) on ``topic``'s channel, stamped ``stamp_ns``."""
        self.advertise(topic, schema).log(msg, log_time=stamp_ns)

    def robot(self, ns: str, model: RobotModel, moved: bool, commanded, goal,
              stamp_ns: int) -> None:
        """
        Send what a frame has of one robot.

        ``moved``: new joints in ``model`` (its joint state and frames are sent);
        ``commanded``: ``(names or None, positions)`` of the last command, or None;
        ``goal``: ``(x, y, z)`` in the model's base link, or None.
        """
        if moved:
            self.joint_states(ns, model.joint_names, model.q, stamp_ns)
            self.frames(ns, model, stamp_ns)
        if commanded is not None:
            self.command(ns, commanded[0] or model.joint_names, commanded[1], stamp_ns)
        if goal is not None:
            self.goal(ns, model.base_link, goal, stamp_ns)

    def joint_states(self, ns: str, names, positions, stamp_ns: int) -> None:
        """Send one joint state (names and positions)."""
        self.log(f'{ns}/joint_states', 'sensor_msgs/JointState',
                 {'name': list(names), 'position': [float(p) for p in positions]}, stamp_ns)

    def command(self, ns: str, names, positions, stamp_ns: int) -> None:
        """Send the last command seen (joint names and positions)."""
        self.log(f'{ns}/command', 'unilab/Command',
                 {'name': list(names), 'position': [float(p) for p in positions]}, stamp_ns)

    def goal(self, ns: str, frame: str, xyz, stamp_ns: int) -> None:
        """Send the goal as ``foxglove.PoseInFrame``."""
        self.log(f'{ns}/goal_pose', 'foxglove.PoseInFrame', {
            'timestamp': _time(stamp_ns), 'frame_id': frame,
            'pose': {'position': dict(zip('xyz', map(float, xyz))),
                     'orientation': {'x': 0.0, 'y': 0.0, 'z': 0.0, 'w': 1.0}}}, stamp_ns)

    def workspace(self, ns: str, frame: str, box, stamp_ns: int) -> None:
        """Send the workspace box as a ``foxglove.SceneUpdate``: its 12 edges, in ``frame``."""
        lo, hi = box[:3], box[3:]
        corners = [(x, y, z) for x in (lo[0], hi[0]) for y in (lo[1], hi[1])
                   for z in (lo[2], hi[2])]
        # Two corners share an edge where they differ in one coordinate.
        edges = [(a, b) for i, a in enumerate(corners) for b in corners[i + 1:]
                 if sum(u != v for u, v in zip(a, b)) == 1]
        points = [dict(zip('xyz', map(float, c))) for edge in edges for c in edge]
        self.log(f'{ns}/workspace', 'foxglove.SceneUpdate', {'deletions': [], 'entities': [{
            'timestamp': _time(stamp_ns), 'frame_id': _prefix(ns) + frame, 'id': 'workspace',
            'lifetime': {'sec': 0, 'nsec': 0}, 'frame_locked': True, 'metadata': [],
            'arrows': [], 'cubes': [], 'spheres': [], 'cylinders': [], 'triangles': [],
            'texts': [], 'models': [],
            'lines': [{'type': 2, 'pose': _IDENTITY, 'thickness': 0.004,
                       'scale_invariant': False, 'points': points,
                       'color': {'r': 0.16, 'g': 0.63, 'b': 0.24, 'a': 1.0},
                       'colors': [], 'indices': []}]}]}, stamp_ns)

    def diagnostics(self, statuses: list[dict], stamp_ns: int) -> None:
        """Send the statuses of one ``/diagnostics`` message (name, level, message, values)."""
        self.log('/diagnostics', 'diagnostic_msgs/DiagnosticArray', {'status': statuses},
                 stamp_ns)

    def frames(self, ns: str, model: RobotModel, stamp_ns: int) -> None:
        """Send every joint's transform at the model's current joints as FrameTransforms."""
        prefix = _prefix(ns)
        transforms = []
        for parent, child, t in model.joint_transforms():
            x, y, z = (float(v) for v in t[:3, 3])
            qx, qy, qz, qw = quaternion_xyzw(t[:3, :3])
            transforms.append({
                'timestamp': _time(stamp_ns), 'parent_frame_id': prefix + parent,
                'child_frame_id': prefix + child,
                'translation': {'x': x, 'y': y, 'z': z},
                'rotation': {'x': qx, 'y': qy, 'z': qz, 'w': qw}})
        self.log('/tf', 'foxglove.FrameTransforms', {'transforms': transforms}, stamp_ns)

    def close(self) -> None:
        """Stop the server; finish the MCAP file and put it in place."""
        if self.server is not None:
            self.server.stop()
        if self.mcap is not None:
            self.mcap.close()
            self.mcap = None
            self._files.close()


_IDENTITY = {'position': {'x': 0.0, 'y': 0.0, 'z': 0.0},
             'orientation': {'x': 0.0, 'y': 0.0, 'z': 0.0, 'w': 1.0}}


def _prefix(ns: str) -> str:
    """Return a namespace's frame prefix (``robot0/``; none outside a fleet)."""
    return ns.strip('/') + '/' if ns.strip('/') else ''


def _time(stamp_ns: int) -> dict:
    return {'sec': stamp_ns // 1_000_000_000, 'nsec': stamp_ns % 1_000_000_000}
