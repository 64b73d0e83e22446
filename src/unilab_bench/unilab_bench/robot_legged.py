# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench robot --robot go2``: a walking policy on the legged double, as a user runs it.

What a user types, timed (``time_to_walk``): ``unilab export RUN`` (the ONNX file), the
double started (``unilab robot-sim --robot go2 --variant real``: an independent 1 kHz
simulation of the Go2, not the training simulator), ``unilab check-robot --robot go2``,
``unilab deploy RUN --robot go2 --armed`` (the supervisor stands the robot up from lying and
blends the policy in), then the first commanded step (``/cmd_vel`` forward until the trunk
moved STEP_M). Then this process is the operator: a ``/cmd_vel`` schedule (SCHEDULE: stand,
forward, sideways, turn in place, stop), with shoves (SHOVES, through the double's
``~/push``), scored on the double's ground truth (``/odom``):

- per segment, after SETTLE_S: mean |v - command| of v_x, v_y (body frame) and yaw rate;
- ``falls``: the trunk below FALL_HEIGHT_M or tilted past FALL_TILT_RAD (rising edges);
- ``torque_clamp_share``: the supervisor's policy ticks whose PD torque was clipped at a
  motor's limit (the deploy's ``summary.json``);
- ``joints_outside_trained_range``: joint-state samples, once the policy is in, with a
  joint outside the trained envelope (checkpoint, plus ``safety.envelope_margin_rad``);
- ``stand_up_peak_torque_ratio``: the largest |PD torque| / limit the stand-up asked for,
  before clipping (the supervisor's own figure: <= 1 means within the motors).

A second run starts the double tilted (``--start tilt``, rolled TILT_START_RAD, falling)
under an armed deploy: the supervisor must latch its fall stop into damping; measured are
the supervisor's time from the first IMU sample past the bound to the latch, and here, the
time from the first such sample this process received to the first damping command.
"""

from __future__ import annotations

import collections
import json
import math
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
from unilab_bench.procs import start, stop
from unilab_bringup.paths import profile_path
from unilab_core.config import ConfigError, load_run_config
from unilab_core.robot_profile import load_profile
from unilab_policy.envelope import checkpoint_envelope, joint_range

#: (segment, seconds, v_x m/s, v_y m/s, yaw rad/s)
SCHEDULE = (('stand', 4.0, 0.0, 0.0, 0.0), ('forward', 8.0, 0.5, 0.0, 0.0),
            ('sideways', 6.0, 0.0, 0.3, 0.0), ('turn', 6.0, 0.0, 0.0, 0.8),
            ('stop', 4.0, 0.0, 0.0, 0.0))
#: (segment, seconds into it, kick v_x, v_y in m/s, world frame)
SHOVES = (('forward', 4.0, 0.0, 0.5), ('stop', 2.0, 0.5, 0.0))
SETTLE_S = 1.5
STEP_M = 0.1
FALL_HEIGHT_M, FALL_TILT_RAD = 0.12, math.radians(60)
TILT_START_RAD = 1.4
#: Joint states (500 Hz) among which the one behind a damping command is looked for.
DAMPING_SAMPLES = 8
#: The kick (m/s, world x, y) that knocks the walking robot over after the schedule.
KNOCK_MPS = (0.0, 3.0)
DOUBLE_SEED = 10_007
START_S = 120.0
TARGETS = {'vx_error_mps': ('<=', 0.15), 'yaw_error_radps': ('<=', 0.15),
           'falls': ('<=', 0), 'torque_clamp_share': ('<=', 0.05),
           'joints_outside_trained_range': ('<=', 0), 'stand_up_peak_torque_ratio': ('<=', 1.0),
           'fall_stop_damping_ms': ('<=', 50.0), 'tilted_start_stand_ups': ('<=', 0)}


def _tilt_of(qx, qy, qz, qw) -> float:
    """Return the angle (rad) between the trunk's up axis and the world's."""
    return math.acos(max(-1.0, min(1.0, 1.0 - 2.0 * (qx * qx + qy * qy))))


class _Operator:
    """This process on the ROS graph: /cmd_vel and pushes out; truth, states, commands in."""

    def __init__(self, profile, damping_kd):
        import rclpy
        from geometry_msgs.msg import Twist, Vector3
        from nav_msgs.msg import Odometry
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import Imu, JointState
        from std_msgs.msg import Float64MultiArray
        self.profile = profile
        self.names = list(profile.joint_names)
        self.driver = list(profile.controller_joints)
        self.damping_kd = damping_kd
        self.lock = threading.Lock()
        self.odom = []                        # (t, x, y, vx, vy, wz, z, tilt)
        self.q = []                           # (t, q [J] policy order)
        self.qd_driver = None
        self.q_driver = None
        self.recent = collections.deque(maxlen=DAMPING_SAMPLES)   # (q, qd), driver order
        self.effort = profile.command.interface == 'effort'
        self.not_damping_after_bound = 0      # commands after the bound that drive
        self.commands = []                    # (t, tau [J] driver order)
        self.imu_past_bound_t = None
        self.damping_after_bound_t = None
        self.max_tilt_bound = profile.legged.max_tilt_rad
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node('bench_legged_operator', context=self.context)
        qos = QoSProfile(depth=100)
        self.cmd_pub = self.node.create_publisher(Twist, profile.task_inputs.cmd_vel_topic, 10)
        self.push_pub = self.node.create_publisher(Vector3, '/legged_double/push', 10)
        self._twist, self._vec = Twist, Vector3
        self.node.create_subscription(Odometry, profile.task_inputs.odom_topic, self._on_odom,
                                      qos)
        self.node.create_subscription(JointState, profile.joint_states_topic, self._on_js, qos)
        self.node.create_subscription(Imu, profile.imu_topic, self._on_imu, qos)
        self.node.create_subscription(Float64MultiArray, profile.command.topic, self._on_cmd,
                                      qos)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def _on_odom(self, msg) -> None:
        p, o, v, w = (msg.pose.pose.position, msg.pose.pose.orientation,
                      msg.twist.twist.linear, msg.twist.twist.angular)
        with self.lock:
            self.odom.append((time.monotonic(), p.x, p.y, v.x, v.y, w.z, p.z,
                              _tilt_of(o.x, o.y, o.z, o.w)))

    def _on_js(self, msg) -> None:
        index = {n: i for i, n in enumerate(msg.name)}
        if any(n not in index for n in self.names) or len(msg.velocity) != len(msg.name):
            return
        with self.lock:
            self.q.append((time.monotonic(), np.array([msg.position[index[n]]
                                                       for n in self.names])))
            self.qd_driver = np.array([msg.velocity[index[n]] for n in self.driver])
            self.q_driver = np.array([msg.position[index[n]] for n in self.driver])
            self.recent.append((self.q_driver, self.qd_driver))

    def _on_imu(self, msg) -> None:
        o = msg.orientation
        x, y, z, w = o.x, o.y, o.z, o.w
        roll = math.atan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
        pitch = math.asin(max(-1.0, min(1.0, 2 * (w * y - z * x))))
        if self.imu_past_bound_t is None and max(abs(roll), abs(pitch)) > self.max_tilt_bound:
            self.imu_past_bound_t = time.monotonic()

    def _on_cmd(self, msg) -> None:
        t = time.monotonic()
        cmd = np.array(msg.data)
        with self.lock:
            self.commands.append((t, cmd))
            if self.imu_past_bound_t is None or self.qd_driver is None \
                    or cmd.shape != self.qd_driver.shape:
                return
            if self.is_damping(cmd):
                if self.damping_after_bound_t is None:
                    self.damping_after_bound_t = t
            elif self.damping_after_bound_t is not None:
                self.not_damping_after_bound += 1

    def is_damping(self, cmd) -> bool:
        """
        Return whether a command is the supervisor's damping for a recent joint state.

        Effort: tau = -damping_kd qd; position: the measured pose (the driver's PD then
        only damps). The supervisor used one of the last joint states (its age unknown
        here): per joint, the command must lie within what the last DAMPING_SAMPLES states
        give, widened by a few tenths of a N m or 0.05 rad.
        """
        if self.effort:
            ref = -self.damping_kd * np.array([qd for _, qd in self.recent])
            tol = 0.3
        else:
            ref = np.array([q for q, _ in self.recent])
            tol = 0.05
        return bool(np.all((cmd >= ref.min(axis=0) - tol) & (cmd <= ref.max(axis=0) + tol)))

    def command(self, vx, vy, yaw) -> None:
        msg = self._twist()
        msg.linear.x, msg.linear.y, msg.angular.z = float(vx), float(vy), float(yaw)
        self.cmd_pub.publish(msg)

    def push(self, vx, vy) -> None:
        self.push_pub.publish(self._vec(x=float(vx), y=float(vy), z=0.0))

    def close(self) -> None:
        self.executor.shutdown()
        self._thread.join(timeout=5)
        self.node.destroy_node()
        self.context.try_shutdown()


def _wait(ready, procs: dict, what: str, timeout_s: float = START_S) -> float:
    """Wait until ``ready()``; return the seconds it took; a dead child is an error."""
    t0 = time.monotonic()
    while not ready():
        for name, p in procs.items():
            if p.poll() is not None:
                raise RuntimeError(f'bench robot: the {name} exited ({p.returncode}) before '
                                   f'{what}')
        if time.monotonic() - t0 > timeout_s:
            raise RuntimeError(f'bench robot: {what} did not happen within {timeout_s:g} s')
        time.sleep(0.01)
    return time.monotonic() - t0


def _timed(cmd: list[str], log) -> tuple[float, int]:
    t = time.monotonic()
    rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=300).returncode
    return time.monotonic() - t, rc


def _segment_errors(odom, t0, t1, vx, vy, yaw) -> dict:
    rows = np.array([r for r in odom if t0 + SETTLE_S <= r[0] < t1])
    if not len(rows):
        return {'samples': 0}
    return {'samples': int(len(rows)),
            'vx_error_mps': round(float(np.mean(np.abs(rows[:, 3] - vx))), 4),
            'vy_error_mps': round(float(np.mean(np.abs(rows[:, 4] - vy))), 4),
            'yaw_error_radps': round(float(np.mean(np.abs(rows[:, 5] - yaw))), 4),
            'vx_mean_mps': round(float(np.mean(rows[:, 3])), 4),
            'vy_mean_mps': round(float(np.mean(rows[:, 4])), 4),
            'yaw_mean_radps': round(float(np.mean(rows[:, 5])), 4)}


def _falls(odom) -> int:
    fallen = [(r[6] < FALL_HEIGHT_M or r[7] > FALL_TILT_RAD) for r in odom]
    return int(sum(1 for a, b in zip([False] + fallen, fallen) if b and not a))


def _summary(deploy_dir: pathlib.Path) -> dict:
    path = deploy_dir / 'summary.json'
    return json.loads(path.read_text()).get('safety', {}) if path.is_file() else {}


def walk_run(run: pathlib.Path, robot: str, tmp: pathlib.Path, variant: str = 'real') -> dict:
    """Export, double, check-robot, armed deploy, first step, the schedule: the figures."""
    profile = load_profile(profile_path(robot))
    cfg = load_run_config([run / 'config.yaml'])
    envelope = joint_range(checkpoint_envelope(run / 'checkpoints' / 'latest.pt'),
                           cfg.safety.envelope_margin_rad)
    cli = [sys.executable, '-m', 'unilab.cli']
    deploy_dir = tmp / 'deploy'
    out: dict = {'variant': variant}
    steps = {}
    with open(tmp / 'user.log', 'w') as ulog, open(tmp / 'double.log', 'w') as dlog, \
            open(tmp / 'deploy.log', 'w') as plog:
        t_user = time.monotonic()
        steps['export_s'], rc = _timed(cli + ['export', str(run), '--out',
                                              str(tmp / 'policy.onnx')], ulog)
        if rc:
            raise RuntimeError(f'bench robot: export failed ({rc}); see {tmp / "user.log"}')
        double = start(cli + ['robot-sim', '--robot', robot, '--variant', variant, '--seed',
                              str(DOUBLE_SEED), '--stats', str(tmp / 'double.json')], dlog)
        op = deploy = None
        try:
            op = _Operator(profile, profile.legged.damping_kd)
            steps['double_up_s'] = _wait(lambda: len(op.q) > 0, {'double': double},
                                         'the double\'s first joint state')
            steps['check_robot_s'], rc = _timed(cli + ['check-robot', '--robot', robot], ulog)
            out['check_robot_ok'] = rc == 0
            t_deploy = time.monotonic()
            deploy = start(cli + ['deploy', str(run), '--robot', robot, '--armed', '--run-dir',
                                  str(deploy_dir)], plog)
            procs = {'double': double, 'deploy': deploy}
            steps['deploy_to_first_command_s'] = _wait(lambda: len(op.commands) > 0, procs,
                                                       'the first command')
            t_first = time.monotonic()
            stand_s = profile.legged.stand_time_s
            blend_s = profile.legged.blend_steps * profile.control_dt
            # Stand-up and blend-in: the supervisor's own times.
            time.sleep(stand_s + blend_s)
            steps['stand_up_s'] = round(time.monotonic() - t_first, 3)
            t_policy = time.monotonic()
            x0 = op.odom[-1][1] if op.odom else 0.0
            t_step = time.monotonic()

            def moved():
                op.command(0.5, 0.0, 0.0)
                return bool(op.odom) and op.odom[-1][1] - x0 >= STEP_M
            try:
                steps['first_step_s'] = _wait(moved, procs, f'the trunk moving {STEP_M} m',
                                              timeout_s=10.0)
            except RuntimeError:
                steps['first_step_s'] = None
            steps['first_step_wall_s'] = round(time.monotonic() - t_step, 3)
            steps['total_s'] = round(time.monotonic() - t_user, 3)
            steps['deploy_to_walking_s'] = round(time.monotonic() - t_deploy, 3)
            out['time_to_walk'] = {k: (round(v, 3) if isinstance(v, float) else v)
                                   for k, v in steps.items()}
            # The schedule.
            segments = []
            for name, dur, vx, vy, yaw in SCHEDULE:
                t0 = time.monotonic()
                shoves = [s for s in SHOVES if s[0] == name]
                while time.monotonic() - t0 < dur:
                    op.command(vx, vy, yaw)
                    for s in list(shoves):
                        if time.monotonic() - t0 >= s[1]:
                            op.push(s[2], s[3])
                            shoves.remove(s)
                    for pname, p in procs.items():
                        if p.poll() is not None:
                            raise RuntimeError(f'bench robot: the {pname} exited mid-run')
                    time.sleep(0.05)
                segments.append((name, t0, time.monotonic(), vx, vy, yaw))
            t_end = time.monotonic()
            # A shove that knocks the walking robot over: the fall stop must catch it.
            op.command(0.0, 0.0, 0.0)
            op.push(*KNOCK_MPS)
            try:
                _wait(lambda: op.damping_after_bound_t is not None, procs,
                      'damping after the knock-over', timeout_s=5.0)
            except RuntimeError as exc:
                print(f'bench robot: {exc}', file=sys.stderr)
            time.sleep(0.5)
        finally:
            if op is not None:
                op.close()
            if deploy is not None:
                stop(deploy)
            stop(double)
    with op.lock:
        odom, qs = list(op.odom), list(op.q)
    per = {name: {'command': [vx, vy, yaw], **_segment_errors(odom, t0, t1, vx, vy, yaw)}
           for name, t0, t1, vx, vy, yaw in segments}
    out['segments'] = per
    out['vx_error_mps'] = per['forward'].get('vx_error_mps')
    out['vy_error_mps'] = per['sideways'].get('vy_error_mps')
    out['yaw_error_radps'] = per['turn'].get('yaw_error_radps')
    out['falls'] = _falls([r for r in odom if t_policy <= r[0] <= t_end])
    knock = {'kick_mps': list(KNOCK_MPS), 'imu_past_bound': op.imu_past_bound_t is not None,
             'damping_after_bound_ms': None if op.damping_after_bound_t is None else
             round((op.damping_after_bound_t - op.imu_past_bound_t) * 1e3, 2),
             'commands_driving_after_damping': op.not_damping_after_bound}
    lo, hi = (np.asarray(a) for a in envelope) if envelope else (None, None)
    outside = [q for t, q in qs if t_policy <= t <= t_end and lo is not None
               and (np.any(q < lo) or np.any(q > hi))]
    out['joints_outside_trained_range'] = len(outside)
    safety = _summary(deploy_dir)
    ticks = int(safety.get('legged_policy_ticks', 0))
    out['torque_clamp_share'] = round(int(safety.get('legged_policy_saturated_ticks', 0))
                                      / ticks, 4) if ticks else None
    out['supervisor'] = {k: v for k, v in safety.items() if k.startswith('legged_')}
    out['stand_up_peak_torque_ratio'] = safety.get('legged_stand_peak_torque_ratio')
    knock.update({'fall_stop_latched': int(safety.get('legged_faults_tilt', 0)) > 0,
                  'tilt_stop_detect_ms': safety.get('legged_tilt_stop_ms')})
    out['knock_over'] = knock
    stats = tmp / 'double.json'
    out['double'] = json.loads(stats.read_text()) if stats.is_file() else {}
    out['wall_s'] = round(t_end - t_user, 1)
    return out


def tilt_run(run: pathlib.Path, robot: str, tmp: pathlib.Path) -> dict:
    """Armed deploy first, then the double starting tilted and falling: the fall stop."""
    profile = load_profile(profile_path(robot))
    cli = [sys.executable, '-m', 'unilab.cli']
    deploy_dir = tmp / 'deploy_tilt'
    op = double = deploy = None
    with open(tmp / 'double_tilt.log', 'w') as dlog, open(tmp / 'deploy_tilt.log', 'w') as plog:
        try:
            op = _Operator(profile, profile.legged.damping_kd)
            deploy = start(cli + ['deploy', str(run), '--robot', robot, '--armed', '--run-dir',
                                  str(deploy_dir)], plog)
            # The deploy is up when its command publisher is on the graph.
            _wait(lambda: op.node.count_publishers(profile.command.topic) > 0,
                  {'deploy': deploy}, 'the deploy\'s command publisher')
            double = start(cli + ['robot-sim', '--robot', robot, '--variant', 'real', '--seed',
                                  str(DOUBLE_SEED), '--start', 'tilt', '--tilt-rad',
                                  str(TILT_START_RAD)], dlog)
            procs = {'double': double, 'deploy': deploy}
            try:
                _wait(lambda: op.damping_after_bound_t is not None, procs,
                      'damping after the tilt bound', timeout_s=30.0)
            except RuntimeError as exc:
                print(f'bench robot: tilted start: {exc}', file=sys.stderr)
            time.sleep(1.0)
        finally:
            if op is not None:
                op.close()
            for p in (deploy, double):
                if p is not None:
                    stop(p)
    safety = _summary(deploy_dir)
    ext = None
    if op.imu_past_bound_t is not None and op.damping_after_bound_t is not None:
        ext = round((op.damping_after_bound_t - op.imu_past_bound_t) * 1e3, 2)
    return {'start_roll_rad': TILT_START_RAD, 'bound_rad': profile.legged.max_tilt_rad,
            'fall_stop_latched': int(safety.get('legged_faults_tilt', 0)) > 0,
            'damping_after_bound_ms': ext,
            'commands_driving_after_damping': op.not_damping_after_bound,
            'stand_ups': safety.get('legged_stand_ups'),
            'supervisor_mode_at_end': safety.get('legged_mode'),
            'fault': safety.get('legged_fault')}


def bench_robot_legged(args, robot: str) -> dict:
    """Score a trained legged run (``--run``) on its robot's double (module doc)."""
    run = getattr(args, 'run', None)
    profile = load_profile(profile_path(robot))
    if not run:
        raise ConfigError(f'bench robot --robot {robot} needs --run RUN_DIR: a trained '
                          f'{profile.task} run (bin/unilab train --task {profile.task}; '
                          'about 40 min on 2 cores)')
    run = pathlib.Path(run).resolve()
    out = {'benchmark': 'robot', 'robot': robot, 'task': profile.task, 'model': str(run),
           'schedule': [list(s) for s in SCHEDULE], 'shoves': [list(s) for s in SHOVES],
           'settle_s': SETTLE_S, 'double_seed': DOUBLE_SEED}
    tmp = pathlib.Path(tempfile.mkdtemp(prefix='unilab-bench-robot-'))
    try:
        out.update(walk_run(run, robot, tmp))
        out['tilted_start'] = tilt_run(run, robot, tmp)
    except BaseException:
        print(f'bench robot: failed; logs kept in {tmp}', file=sys.stderr)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    # The fall stop on a walking robot knocked over: from the first IMU sample past the
    # bound this process received to the first damping command it received.
    knock = out['knock_over']
    out['fall_stop_damping_ms'] = knock['damping_after_bound_ms'] \
        if knock['fall_stop_latched'] else None
    # An armed start on a robot lying on its side: damping only (it was never stood up),
    # and the arm order latched the fall stop.
    tilt = out['tilted_start']
    out['tilted_start_stand_ups'] = tilt['stand_ups'] if tilt['fall_stop_latched'] else None
    out['targets'] = {k: f'{op} {v}' for k, (op, v) in TARGETS.items()}
    out['target_met'] = {k: out.get(k) is not None and (out[k] >= v if op == '>=' else
                                                        out[k] <= v)
                         for k, (op, v) in TARGETS.items()}
    return out
