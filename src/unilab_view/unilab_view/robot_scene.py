# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
One robot of the view: its last messages and its nodes in the page's 3D scene.

``RobotView.load`` builds the robot from its URDF (viser's ``ViserUrdf``): the measured
robot, the commanded pose as a translucent ghost (hidden until a command is seen), the
goal sphere and a text field per joint; ``draw_workspace`` adds the trained workspace box
as a wireframe in its frame. A fleet's robots stand ``FLEET_SPACING`` apart along y.
"""

from __future__ import annotations

import math

from unilab_view.gate import GateState
from unilab_view.model import quaternion_xyzw, RobotModel
from unilab_view.workspace import box_geometry
from viser.extras import ViserUrdf

#: metres between the robots of a fleet along y
FLEET_SPACING = 1.0


class RobotView:
    """One robot's last messages and its scene nodes."""

    def __init__(self, ns: str, index: int):
        self.ns = ns
        self.root = f'/robot{index}'
        self.offset = (0.0, FLEET_SPACING * index, 0.0)
        self.urdf_text = None
        self.model: RobotModel | None = None
        self.measured = None  # (names, positions)
        self.commanded = None  # (names, positions)
        self.goal = None  # (x, y, z)
        self.drawn = None  # (ViserUrdf measured, ViserUrdf ghost, goal handle)
        self.joint_fields = {}
        self.gate = GateState()
        self.gate_before = None
        self.gate_html = None
        self.workspace = None  # (box, frame): given, or from the live graph
        self.live_workspace = None  # LiveWorkspace while the box is asked of the graph
        self.workspace_box = None  # the scene's box, once drawn
        self.workspace_tried = False
        self.workspace_due = 0.0  # when the box next goes to Foxglove

    def load(self, server, urdf_text: str, logger) -> None:
        """Build the robot's scene from ``urdf_text`` (an unreadable URDF is logged, kept out)."""
        try:
            self.model = RobotModel(urdf_text)
        except ValueError as exc:
            logger.error(str(exc))
            self.urdf_text = None
            return
        scene = server.scene
        scene.add_frame(self.root, show_axes=False, position=self.offset)
        ghost_root = scene.add_frame(f'{self.root}/command', show_axes=False)
        shown = ViserUrdf(server, self.model.urdf, root_node_name=f'{self.root}/robot')
        ghost = ViserUrdf(server, RobotModel(urdf_text).urdf, root_node_name=ghost_root.name,
                          mesh_color_override=(0.3, 0.8, 1.0, 0.35))
        # No command seen yet (a training graph's commands stay in the transport): no
        # ghost, rather than one at the zero pose.
        ghost.show_visual = False
        goal = scene.add_icosphere(f'/goal{self.root}', radius=0.03, color=(220, 40, 40),
                                   visible=False)
        with server.gui.add_folder(f'Joints {self.ns or "/"}'):
            for name in self.model.joint_names:
                self.joint_fields[name] = server.gui.add_text(name, initial_value='',
                                                              disabled=True)
        self.drawn = (shown, ghost, goal)

    def draw_workspace(self, server, logger) -> None:
        """Draw the workspace box (wireframe) in its frame, at the robot's pose now."""
        box, frame_name = self.workspace
        if frame_name not in self.model.urdf.link_map:
            logger.warning(f'workspace frame {frame_name!r} is no link of the robot: the box '
                           'is not drawn')
            return
        logger.info(f'workspace {list(box)} in {frame_name}')
        centre, dims = box_geometry(box)
        frame = self.model.link_pose(frame_name)
        x, y, z, w = quaternion_xyzw(frame[:3, :3])
        server.scene.add_frame(f'{self.root}/workspace', show_axes=False,
                               position=tuple(frame[:3, 3]), wxyz=(w, x, y, z))
        self.workspace_box = server.scene.add_box(
            f'{self.root}/workspace/box', color=(40, 160, 60), dimensions=dims,
            position=centre, wireframe=True)


def finite_point(p):
    """Return ``(x, y, z)``, or None for a point with a non-finite coordinate (not drawn)."""
    xyz = (p.x, p.y, p.z)
    return xyz if all(math.isfinite(v) for v in xyz) else None
