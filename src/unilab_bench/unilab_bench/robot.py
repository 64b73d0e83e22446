# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench robot``: a reach policy on a real robot's double, scored as the robot sees it.

A ``ur5e_reach`` policy (trained here with the default configuration and
``--steps`` environment steps, or an existing run directory ``--run``) is
deployed with ``unilab deploy RUN --robot ur5e --armed`` (its own process) on
the robot double in its held-out ``real`` variant (``unilab robot-sim --robot
ur5e --variant real``, another process: the maker's model, UR's joint zeros,
heavier links, command delay, packet loss), which starts at UR's home pose
(plus the task's reset noise, +-0.1 rad per joint). This process is the
operator: it publishes ``--goals`` goals (100) drawn from the task's workspace
on the profile's goal topic one after another, and OUT_GOALS goals outside the
workspace among them (one after every ``goals / OUT_GOALS`` goals, each held
OUT_HOLD_S), and it reads the robot's ``/joint_states`` and the commands the
deploy sends, so every figure is what a robot would see:

- ``success``: goals whose tool (forward kinematics of the measured joints on
  the profile's model) came within SUCCESS_M (2 cm) before TIMEOUT_S (4 s);
- ``below_mount_s``: seconds any link origin or the tool was below the mounting
  plane (z < 0 in ``base_link``), over the whole armed run;
- ``tracking_error_p99_rad``: p99 over commands of max |command - measured| per
  joint (the latest joint state when the command arrives);
- ``tool_speed_p99_mps``: p99 of the tool speed over one control period of the
  measured joints (joint-state stamps);
- ``clamp_share``: command rows the gate clamped (any rule), from the deploy's
  ``summary.json``, with its counters per rule beside it;
- ``goals_refused``: goals the deploy refused (workspace, frame, non-finite);
  every out-of-workspace goal must be;
- ``commands_out_of_trained_range``: commands sent outside the run's trained
  joint envelope widened by ``safety.envelope_margin_rad``.

Targets (issue 38): success >= 0.95, below_mount_s 0, tool_speed_p99 <= 1.0 m/s,
clamp_share <= 0.10, tracking_error_p99 <= 0.1 rad, every out-of-workspace goal
refused, no command outside the trained range.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
import tempfile
import threading
import time

import numpy as np
from unilab_bench.procs import start, stop
from unilab_bench.robot_legged import bench_robot_legged
from unilab_bridge.scenario import sample_reach_goals
from unilab_bringup.paths import profile_path
from unilab_core.config import load_run_config
from unilab_core.kinematics import SiteKinematics
from unilab_core.robot_profile import load_profile

DEFAULT_ROBOT = 'ur5e'
DEFAULT_GOALS = 100
#: Environment steps the bench trains when no ``--run`` is given (the default budget).
DEFAULT_STEPS = 1_500_000
#: Success: the tool within this distance (m) of the goal before the time-out (s).
SUCCESS_M, TIMEOUT_S = 0.02, 4.0
#: Goals outside the workspace sent among the others, and how long each is held (s).
OUT_GOALS, OUT_HOLD_S = 10, 1.0
#: The double's seed (start pose, the real variant's draws) and the goals' seed.
DOUBLE_SEED, GOAL_SEED = 10_007, 20_011
#: Seconds the deploy and the double may take to start (imports, network, discovery).
START_S = 120.0
#: Tool speed is measured over this many control periods of joint states. A robot double
#: steps its physics at the control rate and publishes states in between, so a window of one
#: period by the states' stamps can hold two physics steps: twice the tool's motion (on the
#: UR5e double's run 1.17 m/s p99 where the tool moved at most about 0.8 m/s per step). Over
#: five periods the quantisation adds at most one step in five; a real arm's states change
#: every sample.
SPEED_WINDOW_PERIODS = 5
TARGETS = {'success': ('>=', 0.95), 'below_mount_s': ('<=', 0.0),
           'tool_speed_p99_mps': ('<=', 1.0), 'clamp_share': ('<=', 0.10),
           'tracking_error_p99_rad': ('<=', 0.1)}


def outside_goals(workspace, count: int) -> np.ndarray:
    """
    Return ``count`` goals [count, 3] outside the box ``workspace`` (low, high).

    Beyond each face in turn: 10 cm out (the first six), 2 m out (the next six),
    then far away (5 m from the box's middle on every axis).
    """
    low, high = (np.asarray(v, np.float64) for v in workspace)
    mid = 0.5 * (low + high)
    out = []
    for k in range(count):
        axis, side = (k // 2) % 3, k % 2
        p = mid.copy()
        beyond = 0.1 * (1 + k // 6) if k < 6 else 2.0
        p[axis] = (high[axis] + beyond) if side else (low[axis] - beyond)
        if k >= 12:
            p = mid + 5.0
        out.append(p)
    return np.asarray(out)


class RobotFigures:
    """
    The robot-side figures of a run, fed with joint states and commands (no ROS here).

    ``links(q) -> [L, 3]`` gives the positions that must stay above the mounting
    plane; ``tool(q) -> [3]`` the tool position; ``dt`` the control period; the
    tool's speed is sampled over ``speed_window`` control periods.
    """

    def __init__(self, links, tool, dt: float, envelope=None,
                 speed_window: int = SPEED_WINDOW_PERIODS):
        self.links, self.tool, self.dt = links, tool, float(dt)
        self.speed_window_s = self.dt * int(speed_window)
        self.envelope = envelope  # (low [J], high [J]) or None
        self.q = None
        self.below_mount_s = 0.0
        self.tracking = []
        self.speeds = []
        self.command_speeds = []
        self._last_cmd_tool = None
        self.commands = 0
        self.out_of_range = 0
        self._last_t = None
        self._last_below = False
        self._speed_ref = None  # (t, tool position) a speed window back

    def on_joint_state(self, t: float, q) -> np.ndarray:
        """Take the measured joints ``q`` stamped ``t`` (s); return the tool position."""
        q = np.asarray(q, np.float64)
        below = bool(np.min(self.links(q)[:, 2]) < 0.0)
        if self._last_t is not None and t > self._last_t and self._last_below:
            self.below_mount_s += t - self._last_t
        self._last_t, self._last_below, self.q = t, below, q
        pos = np.asarray(self.tool(q), np.float64)
        if self._speed_ref is None:
            self._speed_ref = (t, pos)
        elif t - self._speed_ref[0] >= self.speed_window_s - 1e-9:
            self.speeds.append(float(np.linalg.norm(pos - self._speed_ref[1])
                                     / (t - self._speed_ref[0])))
            self._speed_ref = (t, pos)
        return pos

    def on_command(self, cmd) -> None:
        """Take a command (joint positions in the measured joints' order)."""
        cmd = np.asarray(cmd, np.float64)
        self.commands += 1
        if self.q is not None:
            self.tracking.append(float(np.max(np.abs(cmd - self.q))))
        tool = np.asarray(self.tool(cmd), np.float64)
        if self._last_cmd_tool is not None:
            self.command_speeds.append(float(np.linalg.norm(tool - self._last_cmd_tool))
                                       / self.dt)
        self._last_cmd_tool = tool
        if self.envelope is not None:
            low, high = self.envelope
            self.out_of_range += int(np.any(cmd < low) or np.any(cmd > high))

    def figures(self) -> dict:
        """Return the figures measured so far."""
        def p(values, q):
            return round(float(np.percentile(values, q)), 4) if values else None
        return {'below_mount_s': round(self.below_mount_s, 4),
                'tracking_error_p50_rad': p(self.tracking, 50),
                'tracking_error_p99_rad': p(self.tracking, 99),
                'tool_speed_p50_mps': p(self.speeds, 50),
                'tool_speed_p99_mps': p(self.speeds, 99),
                # The commanded tool's step between consecutive commands over one control
                # period: what the gate's tool-speed rule limits.
                'command_tool_speed_p50_mps': p(self.command_speeds, 50),
                'command_tool_speed_p99_mps': p(self.command_speeds, 99),
                'commands_seen': self.commands,
                'commands_out_of_trained_range': self.out_of_range}


def link_kinematics(model_file: str, joint_names):
    """Return ``links(q) -> [L, 3]``: every moving body's origin and every site of the arm."""
    import mujoco
    model = mujoco.MjModel.from_xml_path(str(model_file))
    data = mujoco.MjData(model)
    adr = np.array([model.jnt_qposadr[model.joint(j).id] for j in joint_names])
    bodies = [b for b in range(model.nbody) if model.body_jntnum[b] > 0]
    sites = [s for s in range(model.nsite) if model.site_bodyid[s] in bodies]

    def links(q):
        data.qpos[adr] = q
        mujoco.mj_kinematics(model, data)
        return np.concatenate([data.xpos[bodies], data.site_xpos[sites]])
    return links


class _Operator:
    """This process on the ROS graph: goals out, joint states and commands in."""

    def __init__(self, profile, figures: RobotFigures):
        import rclpy
        from geometry_msgs.msg import PoseStamped
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import JointState
        from unilab_bridge.scenario_node import GOAL_FRAME, GOAL_QOS
        self.profile, self.figures = profile, figures
        self.names = list(profile.joint_names)
        self.frame = GOAL_FRAME
        self.lock = threading.Lock()
        self.tool = None
        self.states = 0
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('bench_robot_operator', context=self.context)
        self.goal_pub = self.node.create_publisher(PoseStamped, profile.task_inputs.goal_topic,
                                                   GOAL_QOS)
        self._pose = PoseStamped
        qos = QoSProfile(depth=50)
        self.node.create_subscription(JointState, profile.joint_states_topic, self._on_js, qos)
        ctype = profile.command.type
        if ctype == 'joint_trajectory':
            from trajectory_msgs.msg import JointTrajectory
            self.node.create_subscription(JointTrajectory, profile.command.topic,
                                          self._on_trajectory, qos)
        else:
            from std_msgs.msg import Float64MultiArray
            self.node.create_subscription(Float64MultiArray, profile.command.topic,
                                          self._on_array, qos)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def _on_js(self, msg) -> None:
        index = {n: i for i, n in enumerate(msg.name)}
        if any(n not in index for n in self.names):
            return
        q = [msg.position[index[n]] for n in self.names]
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        with self.lock:
            self.tool = self.figures.on_joint_state(t, q)
            self.states += 1

    def _on_trajectory(self, msg) -> None:
        if not msg.points:
            return
        index = {n: i for i, n in enumerate(msg.joint_names)}
        if any(n not in index for n in self.names):
            return
        with self.lock:
            self.figures.on_command([msg.points[0].positions[index[n]] for n in self.names])

    def _on_array(self, msg) -> None:
        joints = list(self.profile.controller_joints)
        by_name = dict(zip(joints, msg.data))
        with self.lock:
            self.figures.on_command([by_name[n] for n in self.names])

    def publish_goal(self, xyz) -> None:
        msg = self._pose()
        msg.header.frame_id = self.frame
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = map(float, xyz)
        msg.pose.orientation.w = 1.0
        self.goal_pub.publish(msg)

    def tool_position(self):
        with self.lock:
            return None if self.tool is None else self.tool.copy()

    def close(self) -> None:
        self.executor.shutdown()
        self._thread.join(timeout=5)
        self.node.destroy_node()
        self.context.try_shutdown()


def goal_sequence(task_name: str, goals: int, out_goals: int, seed: int):
    """Return ``[(kind, xyz)]``: ``goals`` workspace goals, ``out_goals`` outside among them."""
    from unilab_bringup.prepare import task_info
    info, _ = task_info(task_name)
    ws = info.workspace
    inside = sample_reach_goals(task_name, 1, goals, seed)[0]
    outside = outside_goals((ws[:3], ws[3:]), out_goals)
    every = max(1, goals // max(1, out_goals))
    seq, k = [], 0
    for i, g in enumerate(inside):
        seq.append(('inside', g))
        if (i + 1) % every == 0 and k < out_goals:
            seq.append(('outside', outside[k]))
            k += 1
    seq += [('outside', g) for g in outside[k:]]
    return seq


def run_goals(run_dir: str, robot: str, goals: int, out_goals: int, tmp: pathlib.Path,
              timeout_s: float = TIMEOUT_S, success_m: float = SUCCESS_M) -> dict:
    """
    Deploy ``run_dir`` on the ``real`` double of ``robot``; send the goals; return the figures.

    The core of the bench (the test runs it with a few goals): start the double and
    the deploy, wait until the robot's state arrives, send the sequence, stop both,
    read the deploy's gate counters.
    """
    from unilab_policy.envelope import checkpoint_envelope, joint_range
    profile = load_profile(profile_path(robot))
    run = pathlib.Path(run_dir)
    cfg = load_run_config([run / 'config.yaml'])
    envelope = joint_range(checkpoint_envelope(run / 'checkpoints' / 'latest.pt'),
                           cfg.safety.envelope_margin_rad)
    fk = SiteKinematics(profile.model_file, profile.joint_names, profile.task_inputs.tool_site)
    figures = RobotFigures(link_kinematics(profile.model_file, profile.joint_names),
                           lambda q: fk.positions(np.asarray(q)[None])[0],
                           profile.control_dt,
                           None if envelope is None else tuple(map(np.asarray, envelope)))
    seq = goal_sequence(profile.task, goals, out_goals, GOAL_SEED)
    cli = [sys.executable, '-m', 'unilab.cli']
    deploy_dir = tmp / 'deploy'
    results, wall0 = [], time.monotonic()
    op = None
    with open(tmp / 'double.log', 'w') as dlog, open(tmp / 'deploy.log', 'w') as plog:
        double = start(cli + ['robot-sim', '--robot', robot, '--variant', 'real', '--seed',
                              str(DOUBLE_SEED)], dlog)
        deploy = start(cli + ['deploy', str(run), '--robot', robot, '--armed', '--run-dir',
                              str(deploy_dir)], plog)
        try:
            op = _Operator(profile, figures)
            _wait_ready(op, double, deploy, tmp)
            for kind, g in seq:
                if kind == 'outside':
                    op.publish_goal(g)
                    time.sleep(OUT_HOLD_S)
                    results.append({'kind': kind, 'goal': np.round(g, 4).tolist()})
                    continue
                results.append(_reach(op, g, timeout_s, success_m, double, deploy, tmp))
        finally:
            if op is not None:
                op.close()
            stop(deploy)
            stop(double)
    summary = json.loads((deploy_dir / 'summary.json').read_text()) \
        if (deploy_dir / 'summary.json').is_file() else {}
    return _figures(results, figures, summary, out_goals, time.monotonic() - wall0)


def _wait_ready(op, double, deploy, tmp) -> None:
    """Wait for the deploy's goal subscription and the robot's joint states."""
    _wait(lambda: op.goal_pub.get_subscription_count() > 0 and op.tool_position() is not None,
          double, deploy, tmp, 'the deploy and the double')


def _wait(ready, double, deploy, tmp, what) -> None:
    end = time.monotonic() + START_S
    while not ready():
        for name, p in (('double', double), ('deploy', deploy)):
            if p.poll() is not None:
                raise RuntimeError(f'bench robot: the {name} exited ({p.returncode}); see '
                                   f'{tmp / (name + ".log")}')
        if time.monotonic() > end:
            raise RuntimeError(f'bench robot: {what} not ready within {START_S:g} s; see {tmp}')
        time.sleep(0.05)


def _reach(op, goal, timeout_s, success_m, double, deploy, tmp) -> dict:
    op.publish_goal(goal)
    # The policy acts once it has a goal: the first goal's clock starts at the first command.
    _wait(lambda: op.figures.commands > 0, double, deploy, tmp, 'the first command')
    t0 = time.monotonic()
    best = float('inf')
    while True:
        t = time.monotonic() - t0
        tool = op.tool_position()
        dist = float(np.linalg.norm(tool - goal))
        best = min(best, dist)
        if dist < success_m:
            return {'kind': 'inside', 'goal': np.round(goal, 4).tolist(), 'success': True,
                    'time_to_reach_s': round(t, 3), 'min_distance_m': round(best, 4)}
        if t > timeout_s:
            return {'kind': 'inside', 'goal': np.round(goal, 4).tolist(), 'success': False,
                    'time_to_reach_s': None, 'min_distance_m': round(best, 4)}
        if deploy.poll() is not None or double.poll() is not None:
            raise RuntimeError('bench robot: the deploy or the double exited mid-run')
        time.sleep(0.005)


def _figures(results, figures: RobotFigures, summary: dict, out_goals: int, wall) -> dict:
    inside = [r for r in results if r['kind'] == 'inside']
    ok = [r for r in inside if r['success']]
    safety = summary.get('safety', {})
    perception = summary.get('node_counters', {}).get('perception', {})
    refused = {k: int(v) for k, v in {**safety, **perception}.items()
               if k.startswith('goals_refused')}
    commands = int(safety.get('commands', 0))
    out = {'goals': len(inside), 'goals_outside_sent': out_goals,
           'success': round(len(ok) / len(inside), 4) if inside else None,
           'mean_time_to_reach_s': round(float(np.mean([r['time_to_reach_s'] for r in ok])), 3)
           if ok else None,
           **figures.figures(),
           'clamp_share': round(int(safety.get('clamped', 0)) / commands, 4)
           if commands else None,
           'gate': {k: safety[k] for k in ('commands', 'clamped', 'rejected', 'envelope_clamps',
                                           'tracking_clamps', 'tracking_holds',
                                           'tool_speed_clamps') if k in safety},
           'goals_refused': sum(refused.values()), 'goals_refused_by_rule': refused,
           'wall_s': round(wall, 1), 'per_goal': results}
    return out


def bench_robot(args) -> dict:
    """Train (or take ``--run``) a reach policy, deploy it on the real double, score it."""
    from unilab_bench.learn_runs import train_graph
    robot = args.robot or DEFAULT_ROBOT
    if load_profile(profile_path(robot)).legged is not None:
        return bench_robot_legged(args, robot)
    goals = getattr(args, 'goals', None) or DEFAULT_GOALS
    steps = args.steps or DEFAULT_STEPS
    task = load_profile(profile_path(robot)).task
    out = {'benchmark': 'robot', 'robot': robot, 'task': task, 'variant': 'real',
           'goals': goals, 'goals_outside': OUT_GOALS, 'success_radius_m': SUCCESS_M,
           'goal_timeout_s': TIMEOUT_S, 'double_seed': DOUBLE_SEED, 'goal_seed': GOAL_SEED}
    tmp = pathlib.Path(tempfile.mkdtemp(prefix='unilab-bench-robot-'))
    try:
        run = getattr(args, 'run', None)
        if run:
            out['model'] = str(pathlib.Path(run).resolve())
        else:
            run = tmp / 'run'
            t = time.monotonic()
            train_graph({'run.task': task, 'run.seed': args.seed, 'run.total_steps': steps,
                         'logging.tensorboard': False}, run)
            out['model'] = f'trained here: {task}, default configuration, {steps} steps, ' \
                f'seed {args.seed}'
            out['train_wall_s'] = round(time.monotonic() - t, 1)
        out.update(run_goals(str(run), robot, goals, OUT_GOALS, tmp))
    except BaseException:
        print(f'bench robot: failed; logs (and the run trained) kept in {tmp}', file=sys.stderr)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    out['targets'] = {k: f'{op} {v}' for k, (op, v) in TARGETS.items()}
    out['targets'].update({'goals_refused': f'= {OUT_GOALS}',
                           'commands_out_of_trained_range': '= 0'})
    met = {k: out.get(k) is not None and (out[k] >= v if op == '>=' else out[k] <= v)
           for k, (op, v) in TARGETS.items()}
    met['goals_refused'] = out.get('goals_refused') == OUT_GOALS
    met['commands_out_of_trained_range'] = out.get('commands_out_of_trained_range') == 0
    out['target_met'] = met
    return out
