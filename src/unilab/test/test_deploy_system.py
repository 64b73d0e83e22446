# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab deploy`` as a robot sees it: separate processes over DDS, the robot's own topics.

The robot is either the robot double (``unilab robot-sim``) or, where a test needs
to control the joint states exactly, a broadcaster in this process that publishes
fixed joint positions. This process also plays the operator (the goal) and
listens on the controller's topic and on ``/diagnostics``. The model is a freshly
initialised network written as a run and exported to ONNX: what is checked here
(message type, names, order, limits, arming, holds, errors, .pt = ONNX) does not
depend on training.
"""

import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

from conftest import cli
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
from unilab_bringup.graphs import policy_params
from unilab_bringup.paths import default_config_files, profile_path
from unilab_bringup.prepare import task_info
from unilab_core.config import dump_config, load_run_config
from unilab_core.robot_profile import load_profile
from unilab_policy.checkpoint import save_checkpoint
from unilab_policy.networks import bundle_from_params
import yaml

ARM6 = load_profile(profile_path('arm6'))
LIMITS = yaml.safe_load((profile_path('arm6').parent / 'arm6_joint_limits.yaml').read_text())
#: Distinct positions per joint, so that a command in the wrong order is seen as such.
Q = [0.3, -0.6, 0.9, -1.2, 0.5, 0.7]
GOAL = (0.35, 0.15, 0.35)
WAIT_S = 90.0  # start-up of a deploy process (imports, network, discovery) on a busy machine


def _fresh_run(run: pathlib.Path, task: str) -> pathlib.Path:
    """Write a run of a freshly initialised network for ``task`` into ``run``; return it."""
    cfg = load_run_config(list(default_config_files()), {'run.task': task,
                                                         'model.hidden_sizes': [32, 32]})
    params = policy_params(cfg, task_info(task)[0])
    run.mkdir()
    dump_config(cfg, run / 'config.yaml')
    (run / 'graph_params.yaml').write_text(yaml.safe_dump(
        {'policy': {'ros__parameters': params.model_dump(mode='python')}}))
    save_checkpoint(run / 'checkpoints' / 'latest.pt',
                    {'bundle': bundle_from_params(params, seed=3).state_dict()})
    return run


@pytest.fixture(scope='module')
def model(tmp_path_factory):
    """Return (run directory, its ONNX export) of a fresh arm6_reach network."""
    run = _fresh_run(tmp_path_factory.mktemp('deploy') / 'run', 'arm6_reach')
    cli('export', run, '--format', 'onnx', check=True)
    return run, run / 'policy.onnx'


class Operator:
    """This process on the ROS graph: goal, optional fake broadcaster, listeners."""

    def __init__(self, command_type=Float64MultiArray, command_topic=ARM6.command.topic,
                 joint_names=None):
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('deploy_test_operator', context=self.context)
        self.commands: list[tuple[float, object]] = []
        self.safety: dict[str, str] = {}
        self.policy: dict[str, str] = {}
        self.perception: dict[str, str] = {}
        self.goal = GOAL
        self.names = joint_names
        self.publishing = joint_names is not None
        self.node.create_subscription(command_type, command_topic,
                                      lambda m: self.commands.append((time.monotonic(), m)), 10)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 10)
        self.goal_pub = self.node.create_publisher(PoseStamped, ARM6.task_inputs.goal_topic, 10)
        self.js_pub = self.node.create_publisher(JointState, '/joint_states', 10)
        self.node.create_timer(0.2, self._goal)
        self.node.create_timer(0.01, self._joint_states)  # 100 Hz, like a broadcaster
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def _on_diag(self, msg: DiagnosticArray) -> None:
        for s in msg.status:
            if s.name == '/safety':
                self.safety = {kv.key: kv.value for kv in s.values}
            elif s.name == '/policy':
                self.policy = {kv.key: kv.value for kv in s.values}
            elif s.name == '/perception':
                self.perception = {kv.key: kv.value for kv in s.values}

    def _goal(self) -> None:
        msg = PoseStamped()
        msg.header.frame_id = 'base_link'
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = self.goal
        msg.pose.orientation.w = 1.0
        self.goal_pub.publish(msg)

    def _joint_states(self) -> None:
        if not self.publishing:
            return
        msg = JointState()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        # Reversed: a driver promises no order; deployment maps by name.
        pairs = [(n, q) for n, q in zip(ARM6.joint_names, Q) if n in self.names][::-1]
        msg.name = [n for n, _ in pairs]
        msg.position = [q for _, q in pairs]
        msg.velocity = [0.0] * len(pairs)
        msg.effort = [0.0] * len(pairs)
        self.js_pub.publish(msg)

    def wait(self, what, timeout_s=WAIT_S, proc=None) -> None:
        end = time.monotonic() + timeout_s
        while not what():
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f'the deploy process exited ({proc.returncode}):\n'
                                     + proc.output())
            assert time.monotonic() < end, (
                f'timed out waiting; /safety: {self.safety}; /policy: {self.policy}; '
                f'/perception: {self.perception}; {len(self.commands)} commands'
                + ('' if proc is None else '; deploy output:\n' + proc.output()[-4000:]))
            time.sleep(0.05)

    def counter(self, key: str) -> int:
        return int(self.safety.get(key, 0))

    def close(self) -> None:
        self.executor.shutdown()
        self._thread.join(timeout=5)
        self.node.destroy_node()
        self.context.try_shutdown()


class Process(subprocess.Popen):
    """A CLI process whose output is collected by a thread (never blocks on a full pipe)."""

    def __init__(self, *args):
        env = dict(os.environ, PYTHONUNBUFFERED='1')
        super().__init__([sys.executable, '-m', 'unilab.cli', *map(str, args)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.stdout),
                                        daemon=True)
        self._reader.start()

    def output(self) -> str:
        return ''.join(self.lines)

    def stop(self) -> None:
        if self.poll() is None:
            self.send_signal(signal.SIGINT)
            try:
                self.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()
                self.wait()
        self._reader.join(timeout=5)


@pytest.fixture
def operator():
    made = []

    def make(**kwargs):
        made.append(Operator(**kwargs))
        return made[-1]
    yield make
    for op in made:
        op.close()


def node_pid(run_dir: pathlib.Path, executable: str) -> int:
    """Return the pid of one node process of a ``--multiprocess`` deployment."""
    needle = str(run_dir / 'graph_params.yaml')
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            cmd = pathlib.Path(f'/proc/{pid}/cmdline').read_bytes().decode().split('\0')
        except OSError:
            continue
        if any(c.endswith(executable) for c in cmd) and needle in cmd:
            return int(pid)
    raise AssertionError(f'no {executable} process of {run_dir}')


def _within_limits(values) -> bool:
    lim = LIMITS['joint_limits']
    return all(lim[j]['min_position'] <= v <= lim[j]['max_position']
               for j, v in zip(ARM6.controller_joints, values))


@pytest.mark.system
def test_on_the_double_nothing_moves_before_arming_and_a_silent_policy_means_hold(
        model, operator, tmp_path):
    run, _ = model
    op = operator()
    double = Process('robot-sim', '--robot', 'arm6')
    deploy = Process('deploy', run, '--robot', 'arm6', '--multiprocess', '--run-dir',
                     tmp_path / 'd')
    try:
        # The policy acts, the gate refuses while disarmed: nothing reaches the robot.
        op.wait(lambda: op.counter('unarmed_actions') >= 20, proc=deploy)
        assert op.commands == [] and op.counter('published_command') == 0
        armed = cli('arm', '--timeout', '20')
        assert armed.returncode == 0, armed.stdout + armed.stderr
        op.wait(lambda: len(op.commands) >= 20, proc=deploy)
        for _, msg in op.commands:
            assert len(msg.data) == 6 and np.all(np.isfinite(msg.data))
            assert _within_limits(msg.data)
        # The policy process hangs: the gate's watchdog holds the last command.
        policy = node_pid(tmp_path / 'd', 'policy_node')
        os.kill(policy, signal.SIGSTOP)
        stopped = time.monotonic()
        op.wait(lambda: len([t for t, _ in op.commands if t > stopped + 0.5]) >= 3,
                proc=deploy)
        # Then it dies: the deployment notices and stops its other nodes.
        os.kill(policy, signal.SIGKILL)
        deploy.wait(timeout=60)
    finally:
        deploy.stop()
        double.stop()
    stats = yaml.safe_load((tmp_path / 'd' / 'safety_stats.json').read_text())
    assert stats['published_fallback'] >= 1 and stats['stale_events'] >= 1, stats
    # Past the in-flight actions, only the hold reaches the robot, unchanged.
    after = [m.data for t, m in op.commands if t > stopped + 0.5]
    assert len(after) >= 3, 'no hold reached the robot after the policy hung'
    assert all(np.array_equal(a, after[-1]) for a in after)
    assert deploy.returncode == 1 and 'exited early' in deploy.output()
    assert 'Traceback' not in deploy.output()


@pytest.mark.system
def test_names_order_stale_states_and_pt_equals_onnx(model, operator, tmp_path):
    run, onnx = model
    # A profile whose controller takes the joints in another order, by trajectory.
    profile = yaml.safe_load(profile_path('arm6').read_text())
    r = profile['robot']
    r['command'] = {'type': 'joint_trajectory', 'topic': '/arm_controller/joint_trajectory',
                    'interface': 'position', 'joints': list(reversed(r['joint_names']))}
    r['joint_limits_file'] = str(profile_path('arm6').parent / r['joint_limits_file'])
    path = tmp_path / 'arm6_jtc.yaml'
    path.write_text(yaml.safe_dump(profile))
    firsts = {}
    for name, model_file in (('pt', run), ('onnx', onnx)):
        op = operator(command_type=JointTrajectory, command_topic=r['command']['topic'],
                      joint_names=ARM6.joint_names)
        deploy = Process('deploy', model_file, '--robot', path, '--armed', '--run-dir',
                         tmp_path / name)
        try:
            op.wait(lambda: len(op.commands) >= 12, proc=deploy)
            firsts[name] = [m for _, m in op.commands[:12]]
            if name == 'pt':
                # A checkpoint on a CPU acts through onnxruntime (exported in memory).
                op.wait(lambda: op.policy.get('onnx_active') == '1', proc=deploy)
                assert op.policy['onnx_exports'] == '1' and op.policy['onnx_failed'] == '0'
                # The joint states stop: stale after joint_state_timeout_s -> hold.
                op.publishing = False
                stopped = time.monotonic()
                op.wait(lambda: op.counter('published_fallback') >= 1, proc=deploy)
                # Holds repeat every watchdog period while the silence lasts.
                op.wait(lambda: op.commands[-1][0] > stopped + 0.5, proc=deploy)
                assert op.counter('stale_state_actions') + op.counter('stale_events') >= 1
                # What arrives once the last action in flight has been answered: one hold.
                after = [m.points[0].positions for t, m in op.commands if t > stopped + 0.1]
                assert len(after) >= 2
                assert all(np.array_equal(a, after[-1]) for a in after)
        finally:
            deploy.stop()
            op.close()
    for msg in firsts['pt']:
        assert list(msg.joint_names) == list(reversed(ARM6.joint_names))
        # Stamped with the time it was made (the controller drops one that arrives late).
        made = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        assert made > 0 and abs(made - time.time()) < 600
        (point,) = msg.points
        assert point.time_from_start.nanosec == 20_000_000  # one control period
        assert _within_limits(list(reversed(point.positions)))
    # Rate-limited from the measured positions: the first command is next to them, by name.
    first = dict(zip(firsts['pt'][0].joint_names, firsts['pt'][0].points[0].positions))
    assert np.allclose([first[j] for j in ARM6.joint_names], Q, atol=0.07)
    # The checkpoint and its ONNX export command the same, step for step.
    np.testing.assert_allclose([m.points[0].positions for m in firsts['onnx']],
                               [m.points[0].positions for m in firsts['pt']], atol=1e-4)


@pytest.mark.system
def test_a_joint_the_robot_does_not_publish_is_named_and_nothing_moves(model, operator,
                                                                       tmp_path):
    run, _ = model
    op = operator(joint_names=ARM6.joint_names[:-1])
    deploy = Process('deploy', run, '--robot', 'arm6', '--armed', '--run-dir', tmp_path / 'd')
    try:
        op.wait(lambda: 'wrist_3_joint' in deploy.output(), proc=deploy)
        op.wait(lambda: op.counter('loop_cycles') > 0, proc=deploy)
    finally:
        deploy.stop()
    text = deploy.output()
    line = next(li for li in text.splitlines() if 'wrist_3_joint' in li)
    assert 'lacks 1 expected joint' in line, line
    assert op.commands == []


@pytest.fixture(scope='module')
def enveloped(model, tmp_path_factory):
    """Return a copy of the model's run whose checkpoint carries a trained envelope."""
    import shutil
    from unilab_policy.checkpoint import load_checkpoint
    run = tmp_path_factory.mktemp('enveloped') / 'run'
    shutil.copytree(model[0], run)
    state = load_checkpoint(run / 'checkpoints' / 'latest.pt')
    workspace = list(task_info('arm6_reach')[0].workspace)
    state['envelope'] = {'samples': 100, 'joint_low': [-0.4] * 6, 'joint_high': [0.4] * 6,
                         'workspace': workspace, 'workspace_frame': 'base_link'}
    save_checkpoint(run / 'checkpoints' / 'latest.pt', state)
    return run


@pytest.mark.system
def test_a_far_goal_is_refused_the_envelope_holds_and_ctrl_c_exits_130(
        enveloped, operator, tmp_path):
    op = operator()
    op.goal = (5.0, 5.0, 5.0)  # far outside the task's workspace (the goal)
    double = Process('robot-sim', '--robot', 'arm6')
    deploy = Process('deploy', enveloped, '--robot', 'arm6', '--armed', '--run-dir',
                     tmp_path / 'd')
    try:
        # Refused and counted; with no valid goal yet there is no observation: no command.
        op.wait(lambda: int(op.perception.get('goals_refused_workspace', 0)) >= 3,
                proc=deploy)
        assert op.perception['goals_accepted'] == '0' and op.commands == []
        # Every refusal / clamp counter of the robot rules is on /diagnostics.
        op.wait(lambda: 'envelope_clamps' in op.safety, proc=deploy)
        for key in ('envelope_clamps', 'tracking_clamps', 'tracking_holds',
                    'tool_speed_clamps'):
            assert key in op.safety, sorted(op.safety)
        op.goal = GOAL  # inside: accepted, the policy acts
        op.wait(lambda: len(op.commands) >= 30, proc=deploy)
        # Within the trained range plus the 0.1 rad margin, whatever the network asks.
        for _, msg in op.commands:
            assert np.all(np.abs(msg.data) <= 0.5 + 1e-9), msg.data
    finally:
        deploy.stop()
        double.stop()
    assert deploy.returncode == 130, deploy.output()  # Ctrl-C, as docs/safety.md says
    assert double.returncode == 130, double.output()
    assert 'warning' not in deploy.output()  # the model carries its envelope
    summary = yaml.safe_load((tmp_path / 'd' / 'summary.json').read_text())
    assert summary['node_counters']['perception']['goals_refused_workspace'] >= 3
    assert summary['safety']['passed'] + summary['safety']['clamped'] >= 30
    # The chain ran once before each control step was due (run.deploy_rehearse_lead_ms),
    # every step of it without an error (docs/deploy.md).
    perception = summary['node_counters']['perception']
    assert perception['rehearsals'] > 0 and perception['rehearsal_errors'] == 0, perception
    assert 'goals_refused_workspace' in deploy.output()


def _stopped(commands) -> bool:
    """Return whether the last command reaching the controller is zero on every joint."""
    return bool(commands) and len(commands[-1][1].data) == 6 \
        and not np.any(commands[-1][1].data)


def _ctrl_c(op, deploy) -> None:
    """Stop ``deploy`` as Ctrl-C does; wait until the controller's last command is zeros."""
    deploy.send_signal(signal.SIGINT)
    deploy.wait(timeout=60)
    op.wait(lambda: _stopped(op.commands), timeout_s=10)  # the last one in flight


def _exited_on_ctrl_c(deploy) -> None:
    """Assert that ``deploy`` ended as Ctrl-C should end it: 130, no traceback."""
    assert deploy.returncode == 130, deploy.output()
    assert 'Traceback' not in deploy.output()


def _moving(commands, since: float) -> bool:
    """Return whether a non-zero command has reached the controller after ``since``."""
    return any(np.any(m.data) for t, m in commands if t > since)


@pytest.mark.system
def test_on_a_velocity_robot_every_stop_leaves_it_commanded_to_zero(operator, tmp_path):
    """
    Disarm, e-stop and deploy exit each end with zeros on the velocity controller.

    ros2_control's forward command controllers keep their last command: on a velocity
    interface silence would keep the joints moving at it.
    """
    run = _fresh_run(tmp_path / 'run', 'arm6_reach_velocity')
    topic = '/forward_velocity_controller/commands'
    # A silent policy latches the e-stop. The deploy default watchdog (3 control periods,
    # 60 ms) latched it on a loaded 2-core VM with no SIGSTOP at all (a scheduling stall of
    # the policy process, 79 ms), and disarm / arm do not clear a latch: the wait for a
    # moving command after arming then never ended. Here the policy is stopped until the
    # latch is seen, so a 1 s watchdog still latches on it, and no stall comes near 1 s.
    estop = tmp_path / 'estop.yaml'
    estop.write_text('safety: {watchdog_fallback: estop, watchdog_timeout_s: 1.0}\n')
    op = operator(command_topic=topic)
    double = Process('robot-sim', '--robot', 'arm6_velocity')
    deploy = Process('deploy', run, '--robot', 'arm6_velocity', '--armed', '--multiprocess',
                     '--config', estop, '--run-dir', tmp_path / 'd')
    try:
        op.wait(lambda: _moving(op.commands, 0.0), proc=deploy)
        # Disarm: one stop (zeros on every joint), then the gate falls silent.
        disarmed = cli('disarm', '--timeout', '20')
        assert disarmed.returncode == 0, disarmed.stdout + disarmed.stderr
        op.wait(lambda: _stopped(op.commands), proc=deploy)
        count = len(op.commands)
        op.wait(lambda: op.counter('unarmed_actions') >= 10, proc=deploy)
        assert len(op.commands) == count and _stopped(op.commands)
        armed = cli('arm', '--timeout', '20')
        assert armed.returncode == 0, armed.stdout + armed.stderr
        t = time.monotonic()
        op.wait(lambda: _moving(op.commands, t), proc=deploy)
        # E-stop: the policy falls silent, the watchdog latches, the hold is zeros.
        policy = node_pid(tmp_path / 'd', 'policy_node')
        os.kill(policy, signal.SIGSTOP)
        op.wait(lambda: op.counter('estopped') == 1 and _stopped(op.commands), proc=deploy)
        os.kill(policy, signal.SIGCONT)
        client = op.node.create_client(Trigger, '/safety/reset_estop')
        assert client.wait_for_service(timeout_sec=WAIT_S)
        reply = client.call(Trigger.Request(), timeout_sec=WAIT_S)
        assert reply is not None and reply.success, reply
        t = time.monotonic()
        op.wait(lambda: _moving(op.commands, t), proc=deploy)
        # Deploy exit (Ctrl-C): the safety node's close path publishes zeros.
        _ctrl_c(op, deploy)
    finally:
        deploy.stop()
        double.stop()
    _exited_on_ctrl_c(deploy)


@pytest.mark.system
def test_ctrl_c_on_a_composed_deploy_leaves_a_velocity_robot_at_zero(operator, tmp_path):
    """
    ``unilab deploy`` runs its nodes in one process by default: Ctrl-C there ends in zeros too.

    rclpy's own signal handler would shut the context down before the safety node's close
    path, and the last command the forward controller kept would be a moving one.
    """
    run = _fresh_run(tmp_path / 'run', 'arm6_reach_velocity')
    op = operator(command_topic='/forward_velocity_controller/commands')
    double = Process('robot-sim', '--robot', 'arm6_velocity')
    deploy = Process('deploy', run, '--robot', 'arm6_velocity', '--armed',
                     '--run-dir', tmp_path / 'd')
    try:
        op.wait(lambda: _moving(op.commands, 0.0), proc=deploy)
        _ctrl_c(op, deploy)
    finally:
        deploy.stop()
        double.stop()
    _exited_on_ctrl_c(deploy)
