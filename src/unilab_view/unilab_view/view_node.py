# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The live view node: the robot, its command, the goal and the gate in a browser (viser).

Per namespace (``''`` or ``/robot<k>`` of a fleet) it subscribes ``robot_description``
(transient local, as robot_state_publisher latches it), ``joint_states``, the two
command topics the robot double and ros2_control take
(``forward_position_controller/commands``, ``scaled_joint_trajectory_controller/
joint_trajectory``), ``goal_pose`` and ``/diagnostics``. Callbacks only store the last
message. The view takes messages at the screen rate (``rate_hz``), not at the graph's:
``spin_frames`` sleeps a frame, serves what arrived (``ViewNode.frame``: the state and
command topics keep only their newest message, ``STATE_QOS``), then draws: the measured
robot, the commanded pose as a translucent ghost, the goal as a sphere, the workspace box
(given, or asked of the graph: ``unilab_view.live_workspace``) and the gate's panel
(``unilab_view.gate``). A joint state wakes the control loop; a view woken by every
joint state too competed with it for the CPU at exactly that moment (docs/view.md).
Nothing here publishes on the graph; with ``allow_arm`` the page has Arm / Disarm
buttons that call ``<ns>/safety/arm`` and ``<ns>/safety/disarm`` (std_srvs/Trigger, the
services ``unilab arm`` calls). The page listens on 127.0.0.1 unless ``host`` says
otherwise; on any other address a click arms or disarms only with the token typed into the
page's own "Arm token" field (``unilab_view.access``: why a field and not the URL). With
a Foxglove port, the same frame feeds the Foxglove server (``unilab_view.foxglove_bridge``)
and the graph's TensorBatch topics a Foxglove client watches
(``unilab_view.tensor_channels``).

Beside ``unilab train``: ``joint_states`` and ``description`` name the topics (the
training graph's ``topics.SIM_VIEW_JOINT_STATES`` and ``SIM_ROBOT_DESCRIPTION``), and a
batched JointState (names ``env<i>/<joint>``) is shown as env ``env``
(``unilab_core.joint_names.env_joints``), with env 0's goal and command from the bridge
(``goal`` and ``command`` name ``topics.SIM_GOAL_POSE`` and ``SIM_COMMAND``: it publishes
them at a screen's rate while the view listens); the trainer's status on ``/diagnostics`` adds
a Training folder with the return, success-rate and clamp-share curves
(``unilab_view.curves``), one point per PPO update.
"""

from __future__ import annotations

import argparse
import html
import os
import sys
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rclpy.utilities import remove_ros_args
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
from unilab_core import stop
from unilab_core.joint_names import env_joints
from unilab_core.robot_profile import namespaced
from unilab_core.ros.qos import DESCRIPTION_QOS
from unilab_core.ros.runtime import keep_context_on_stop, rclpy_signal_options, restore_handlers
from unilab_view.access import ArmAccess, DEFAULT_HOST, page_url, parse_host
from unilab_view.curves import CURVES, TrainingCurves
from unilab_view.foxglove_bridge import FoxgloveBridge
from unilab_view.gate import gate_state, is_gate_status
from unilab_view.live_workspace import LiveWorkspace
from unilab_view.robot_scene import finite_point, RobotView
from unilab_view.tensor_channels import TensorChannels, Watchers
import viser

FORWARD_TOPIC = 'forward_position_controller/commands'
TRAJECTORY_TOPIC = 'scaled_joint_trajectory_controller/joint_trajectory'
#: The state, command and goal topics: only the newest message waits for the next frame
#: (the ones before it are dropped by DDS, never handed to Python).
STATE_QOS = QoSProfile(depth=1)
#: /diagnostics: every node publishes its own array, about once a second; the training
#: curves want each trainer status.
DIAGNOSTICS_DEPTH = 10
#: seconds between two sends of the workspace box to Foxglove (it does not change; a client
#: that connects later has it within this)
WORKSPACE_PERIOD_S = 1.0
#: the training curves' titles, per name (``unilab_view.curves.CURVES``)
CURVE_TITLES = {'charts/mean_return': 'return (mean of the last episodes)',
                'episodes/success_rate': 'success rate', 'safety/clamp_share': 'clamp share'}


class ViewNode(Node):
    """Subscribes the robots' topics and draws them in a viser server at screen rate."""

    def __init__(self, namespaces: list[str], port: int = 8080, host: str = DEFAULT_HOST,
                 rate_hz: float = 20.0, allow_arm: bool = False,
                 foxglove_port: int | None = None, joint_states: str = 'joint_states',
                 env: int = 0, description: str = 'robot_description',
                 workspace: tuple[float, ...] = (),
                 workspace_frame: str = 'base_link', goal: str = 'goal_pose',
                 command: str = '', mcap: str | None = None, mcap_tensors: bool = False):
        super().__init__('unilab_view')
        self.lock = threading.Lock()
        self.rate_hz = float(rate_hz)
        self.received = 0  # messages taken (``frame`` drains until none is left)
        self.allow_arm = allow_arm
        self.closing = False  # set by ``close``: clicks still in flight are dropped
        self.access = ArmAccess(host)  # off loopback, Arm / Disarm need its token
        self.token_fields = {}  # client id -> that page's own "Arm token" field
        self.refused_html = None
        self.joint_states, self.env, self.description = joint_states, env, description
        # ``command`` '' : the two controllers' topics; a topic: Float64MultiArray on it, in
        # the URDF's joint order (the training graph's ``topics.SIM_COMMAND``).
        self.goal_topic, self.command_topic = goal, command
        self.workspace, self.workspace_frame = tuple(workspace), workspace_frame
        # A training run's curves (the trainer's status on /diagnostics), drawn once the
        # first update came; ``curve_plots`` holds the page's plots then.
        self.curves = TrainingCurves()
        self.curves_new = False
        self.curve_plots = None
        self.server = viser.ViserServer(host=host, port=port, verbose=False)
        self.server.scene.set_up_direction('+z')
        self.server.initial_camera.position = (1.4, -1.4, 1.0)  # an arm's workspace in view
        self.server.initial_camera.look_at = (0.0, 0.0, 0.3)
        self.bridge = self.tensors = None
        if foxglove_port is not None or mcap is not None:
            # Foxglove's channels: to its clients, and/or into an MCAP file.
            watchers = Watchers()
            self.bridge = FoxgloveBridge(foxglove_port, listener=watchers, mcap=mcap)
            self.tensors = TensorChannels(self, self.bridge, watchers, STATE_QOS,
                                          self._count_message, record_all=mcap_tensors)
        if allow_arm and self.access.needs_token:
            self._token_panel()
        self.diagnostics = {}  # status name -> the last status since the last draw (bridge)
        self.robots = [RobotView(ns.rstrip('/'), k) for k, ns in enumerate(namespaces)]
        for robot in self.robots:
            self._subscribe(robot)
            self._panel(robot)
            # The box given (``--model RUN``), else the one the live graph holds.
            if self.workspace:
                robot.workspace = (self.workspace, self.workspace_frame)
            else:
                robot.live_workspace = LiveWorkspace(self, robot.ns)
        self.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics,
                                 DIAGNOSTICS_DEPTH)
        # At most one message per state topic, plus the diagnostics and service replies
        # (and one per TensorBatch topic a Foxglove client watches: ``frame`` adds them).
        self._drain_budget = 5 * len(self.robots) + DIAGNOSTICS_DEPTH + 4
        self.get_logger().info(f'view on {page_url(host, self.server.get_port())} (listening '
                               f'on {host}; {", ".join(r.ns or "/" for r in self.robots)})')

    # -- graph ----------------------------------------------------------------------
    def _subscribe(self, robot: RobotView) -> None:
        def store(field, value):
            with self.lock:
                setattr(robot, field, value)
                self.received += 1
        ns = robot.ns
        self.create_subscription(String, namespaced(ns, self.description),
                                 lambda m: store('urdf_text', m.data), DESCRIPTION_QOS)
        self.create_subscription(
            JointState, namespaced(ns, self.joint_states),
            lambda m: store('measured', (list(m.name), list(m.position))), STATE_QOS)
        self.create_subscription(
            Float64MultiArray, namespaced(ns, self.command_topic or FORWARD_TOPIC),
            lambda m: store('commanded', (None, list(m.data))), STATE_QOS)
        if not self.command_topic:
            self.create_subscription(
                JointTrajectory, namespaced(ns, TRAJECTORY_TOPIC),
                lambda m: store('commanded', (list(m.joint_names), list(m.points[-1].positions))
                                if m.points else robot.commanded), STATE_QOS)
        self.create_subscription(
            PoseStamped, namespaced(ns, self.goal_topic),
            lambda m: store('goal', finite_point(m.pose.position)), STATE_QOS)

    def _count_message(self) -> None:
        with self.lock:
            self.received += 1

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        with self.lock:
            self.received += 1
        if self.bridge is not None:
            with self.lock:
                self.diagnostics.update({st.name: {
                    'name': st.name, 'level': st.level[0] if isinstance(st.level, bytes)
                    else int(st.level), 'message': st.message,
                    'values': {kv.key: kv.value for kv in st.values}} for st in msg.status})
        for st in msg.status:
            values = {kv.key: kv.value for kv in st.values}
            with self.lock:
                new_point = self.curves.observe(st.name, values)
                self.curves_new |= new_point
            if new_point:
                continue
            if not is_gate_status(values):
                continue
            with self.lock:
                for robot in self.robots:
                    # The gate's node name carries its namespace (``/robot0/safety...``).
                    own = robot.ns.strip('/') + '/'
                    if robot.ns and not st.name.lstrip('/').startswith(own):
                        continue
                    was = robot.gate
                    robot.gate = gate_state(st.level[0] if isinstance(st.level, bytes)
                                            else int(st.level), st.message, values,
                                            robot.gate_before)
                    robot.gate_before = values
                    if was.mode != robot.gate.mode:
                        # Arming, disarming and e-stops in the view's own log as well.
                        self.get_logger().info(
                            f'gate {robot.ns or "/"}: {was.mode} -> {robot.gate.mode}')

    # -- page -----------------------------------------------------------------------
    def _panel(self, robot: RobotView) -> None:
        gui = self.server.gui
        with gui.add_folder(f'Robot {robot.ns or "/"}'):
            robot.gate_html = gui.add_html(self._gate_html(robot))
            if self.allow_arm:
                for action in ('arm', 'disarm'):
                    button = gui.add_button(action.capitalize())
                    button.on_click(lambda e, a=action: self._clicked(robot, a, e.client_id))

    def _token_panel(self) -> None:
        """Add the Arm folder: each page's own token field, and the refusals so far."""
        folder = self.server.gui.add_folder('Arm', order=-1.0)  # above the robots
        with folder:
            self.refused_html = self.server.gui.add_html(self._refused_html())

        def connected(client) -> None:
            # Client-scoped: what one page types reaches the server only, not other pages.
            with folder:
                field = client.gui.add_text('Arm token', '', hint='the token the terminal '
                                            'that started the view printed')
            with self.lock:
                self.token_fields[client.client_id] = field

        def gone(client) -> None:
            with self.lock:
                self.token_fields.pop(client.client_id, None)
        self.server.on_client_connect(connected)
        self.server.on_client_disconnect(gone)

    def _refused_html(self) -> str:
        return (f'<div class="unilab-arm-refused" data-refused="{self.access.refused}">'
                f'Arm / Disarm need the token here. Refused (no or wrong token): '
                f'<b>{self.access.refused}</b></div>')

    def _clicked(self, robot: RobotView, action: str, client_id: int | None) -> None:
        """Carry out a click on Arm / Disarm if the page that sent it may (its token)."""
        with self.lock:
            field = self.token_fields.get(client_id)
        if not self.access.allows(None if field is None else field.value):
            self.get_logger().warning(
                f'{action} for {robot.ns or "/"} refused: no or wrong token from page '
                f'{client_id} ({self.access.refused} refused so far)')
            if self.refused_html is not None:
                self.refused_html.content = self._refused_html()
            return
        self._call(robot, action)

    def _gate_html(self, robot: RobotView) -> str:
        g = robot.gate
        text = (f'gate: <b>{g.state}</b> · clamped {100 * g.clamped_share:.0f}% · '
                f'refused {g.refused}<br><small>{html.escape(g.message)}</small>')
        return (f'<div class="unilab-gate" data-state="{g.state}" '
                f'style="background:{g.colour};color:white;padding:6px;border-radius:4px">'
                f'{text}</div>')

    def _call(self, robot: RobotView, action: str) -> None:
        try:
            client = self.create_client(Trigger, namespaced(robot.ns, f'safety/{action}'))
            if not client.wait_for_service(timeout_sec=2.0):
                self.get_logger().warning(f'no service {client.srv_name} (is deploy running?)')
                return
            client.call_async(Trigger.Request()).add_done_callback(
                lambda f: self.get_logger().info(f'{client.srv_name}: {f.result().message}'))
        except Exception:
            # A click still waiting when the view stops: its node is gone (rclpy's
            # InvalidHandle); nothing was called, and nobody is left to tell.
            if self.closing:
                return
            raise

    def frame(self, executor) -> None:
        """Serve what arrived since the last frame, the newest of each topic; then draw."""
        watched = len(self.tensors.subscriptions) if self.tensors is not None else 0
        for _ in range(self._drain_budget + watched):
            before = self.received
            executor.spin_once(timeout_sec=0.0)
            if self.received == before:
                break
        self._draw()

    def _draw(self) -> None:
        stamp_ns = self.get_clock().now().nanoseconds
        with self.lock:
            diagnostics, self.diagnostics = self.diagnostics, {}
            todo = [(r, r.urdf_text, r.measured, r.commanded, r.goal, r.gate)
                    for r in self.robots]
            curves_new, self.curves_new = self.curves_new, False
        if self.bridge is not None and diagnostics:
            self.bridge.diagnostics(list(diagnostics.values()), stamp_ns)
        if self.tensors is not None:
            self.tensors.update()
        if curves_new:
            self._draw_curves()
        for robot, urdf_text, measured, commanded, goal, gate in todo:
            if urdf_text is not None and robot.model is None:
                robot.load(self.server, urdf_text, self.get_logger())
            content = self._gate_html(robot)
            if robot.gate_html.content != content:
                robot.gate_html.content = content
            if robot.workspace is None and robot.live_workspace is not None:
                robot.workspace = robot.live_workspace.poll()
            if robot.model is None:
                continue
            if robot.workspace is not None and not robot.workspace_tried:
                robot.workspace_tried = True
                robot.draw_workspace(self.server, self.get_logger())
            shown, ghost, goal_handle = robot.drawn
            if measured is not None:
                # A training graph's batched JointState: env ``self.env``'s joints.
                measured = env_joints(*measured, self.env)
                q = robot.model.set_joints(*measured)
                shown.update_cfg(q)
                for name, value in zip(robot.model.joint_names, q):
                    text = f'{value:+.3f}'
                    if robot.joint_fields[name].value != text:
                        robot.joint_fields[name].value = text
            if commanded is not None:
                names = commanded[0] or robot.model.joint_names
                ghost_q = dict(zip(robot.model.joint_names, robot.model.q))
                ghost_q.update({n: v for n, v in zip(names, commanded[1])
                                if np.isfinite(v)})
                ghost.update_cfg(np.array([ghost_q[n] for n in robot.model.joint_names]))
                if not ghost.show_visual:
                    ghost.show_visual = True
            if self.bridge is not None:
                self.bridge.robot(robot.ns, robot.model, measured is not None, commanded,
                                  goal, stamp_ns)
                if robot.workspace is not None and time.monotonic() >= robot.workspace_due:
                    robot.workspace_due = time.monotonic() + WORKSPACE_PERIOD_S
                    self.bridge.workspace(robot.ns, robot.workspace[1], robot.workspace[0],
                                          stamp_ns)
            if goal is not None:
                goal_handle.position = tuple(np.add(goal, robot.offset))
                goal_handle.visible = True

    def _draw_curves(self) -> None:
        """Draw the training curves (the plots appear with the first update)."""
        with self.lock:
            series = {name: self.curves.series(name) for name in CURVES}
        if self.curve_plots is None:
            self.curve_plots = {}
            with self.server.gui.add_folder('Training'):
                for name, data in series.items():
                    self.curve_plots[name] = self.server.gui.add_uplot(
                        data, ({'label': 'env steps'},
                               {'label': CURVE_TITLES[name], 'stroke': '#1f77b4'}),
                        title=CURVE_TITLES[name], aspect=2.0,
                        scales={'x': {'time': False}})  # env steps, not a date
            return
        for name, data in series.items():
            self.curve_plots[name].data = data

    def close(self) -> None:
        """Stop the web server (and the Foxglove bridge)."""
        self.closing = True
        self.server.stop()
        if self.bridge is not None:
            self.bridge.close()


def spin_frames(node: ViewNode, executor) -> None:
    """Run ``node.frame`` at the screen rate until a stop signal or the context ends."""
    period = 1.0 / node.rate_hz
    due = time.monotonic()
    while rclpy.ok(context=node.context) and not stop.STOP_SIGNALS:
        try:
            node.frame(executor)
        except Exception:  # noqa: B902 - a stop signal landed inside a take (Ctrl-C)
            # A stop signal's KeyboardInterrupt raised while a frame takes a message comes
            # out of the bindings as a RuntimeError ("Unable to convert call argument"), and
            # a context shut down under a take as ExternalShutdownException. Either is a
            # stop (recorded in ``stop.STOP_SIGNALS``), not an error.
            if stop.STOP_SIGNALS or not rclpy.ok(context=node.context):
                return
            raise
        due += period
        left = due - time.monotonic()
        if left > 0:
            time.sleep(left)
        else:  # a slow frame: the next one a period from now, no burst to catch up
            due = time.monotonic()


def main(args=None) -> None:
    """Run the view until interrupted, below the control loop's priority."""
    parser = argparse.ArgumentParser(prog='view_node')
    parser.add_argument('--namespace', action='append', default=[])
    parser.add_argument('--port', type=int, default=8080)
    parser.add_argument('--host', default=DEFAULT_HOST)
    parser.add_argument('--allow-arm', action='store_true')
    parser.add_argument('--foxglove-port', type=int, default=None)
    parser.add_argument('--joint-states', default='joint_states')
    parser.add_argument('--env', type=int, default=0)
    parser.add_argument('--description', default='robot_description')
    parser.add_argument('--workspace', type=float, nargs=6, default=())
    parser.add_argument('--workspace-frame', default='base_link')
    parser.add_argument('--goal', default='goal_pose')
    parser.add_argument('--command', default='')
    parser.add_argument('--mcap', default=None)
    parser.add_argument('--mcap-tensors', action='store_true')
    argv = remove_ros_args(sys.argv if args is None else args)[1:]
    opts = parser.parse_args(argv)
    try:
        host = parse_host(opts.host)
    except ValueError as exc:
        print(f'view_node: {exc}', file=sys.stderr, flush=True)
        sys.exit(2)
    try:
        # The view yields the CPU to the control graph, but still gets its share: under
        # SCHED_IDLE it starved on a busy machine (on the 2-core VM with the test suite
        # running, a disarm did not reach the page in 30 s), and an operator's view of the
        # gate must not freeze when the machine is loaded.
        os.nice(10)
    except OSError:
        pass
    # Ctrl-C and SIGTERM are recorded and raised by our handler (the context stays up for
    # the close path), so a stop that lands inside a take is known for what it is.
    held = keep_context_on_stop()
    rclpy.init(args=args, signal_handler_options=rclpy_signal_options(held))
    node = ViewNode(opts.namespace or [''], port=opts.port, host=host,
                    allow_arm=opts.allow_arm,
                    foxglove_port=opts.foxglove_port, joint_states=opts.joint_states,
                    env=opts.env, description=opts.description, workspace=opts.workspace,
                    workspace_frame=opts.workspace_frame, goal=opts.goal,
                    command=opts.command, mcap=opts.mcap, mcap_tensors=opts.mcap_tensors)
    node.get_logger().info(f'view at nice {os.nice(0)}')
    if opts.allow_arm and node.access.needs_token:
        # Printed once, here only (not on the command line: ``ps`` shows that to every user).
        print(f'unilab: view: Arm / Disarm from the page need this token in its "Arm token" '
              f'field: {node.access.token}', flush=True)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        spin_frames(node, executor)
    except KeyboardInterrupt:
        pass
    finally:
        executor.shutdown()
        node.close()
        node.destroy_node()
        rclpy.try_shutdown()
        restore_handlers(held)


if __name__ == '__main__':
    main()
