# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A legged robot as adaptation meets it: the Go2 double behind the legged supervisor, in one process.

``LeggedRobot`` presents the double (``unilab_bridge.legged_double.LeggedDouble``: its own
MuJoCo model and floor at 1 kHz, the motors' torque-speed curve, a command latency drawn per
start; not the training simulator) as a one-robot task for ``SimLoop``, with the deploy
path's pieces between the policy and the motors:

- the observation is what perception builds on the robot: the joint states, and the extras
  of ``LeggedInputs`` (IMU gyro and gravity, the ``/cmd_vel`` command); in the critic's
  columns, the trunk's velocity and height as a state estimator reports them (on a Go2 its
  sport-mode state, or a motion-capture system; here the double's ground truth, the
  ``/odom`` it publishes for scoring) and no foot contacts (zeros, as perception sends).
  Adaptation needs that velocity: a robot reward without it cannot score walking;
- each gated policy target goes to the legged supervisor (``unilab_safety.legged``), which
  ticks at the profile's motor rate, blends the policy in after the stand-up and latches
  its fall stop (damping) on a tilt, a joint too fast or torques saturated too long;
- an episode is one **walk segment**: a velocity command (``WALK_COMMANDS``, in turn) held
  for ``segment_s`` with a shove (``shove_mps``, a direction drawn per segment) half-way.
  It ends *truncated* when the segment is over and the robot walks on into the next one,
  *terminated* when the fall stop latched or the double counts a fall; then the robot is
  set on its feet again (a fresh start of the double: standing, a new latency draw) with a
  fresh supervisor, armed, stood up and the policy blended in, as an operator would.

Walking success is a segment that ends truncated. ``WalkTally`` keeps each segment's
outcome and tracking errors (the double's ground truth, after ``SETTLE_S``).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from unilab_bridge.legged_double import LeggedDouble, PHYSICS_DT
from unilab_bridge.tasks.base import StepState
from unilab_perception.task_inputs import LeggedInputs
from unilab_safety.legged import LeggedSupervisor, Mode, motor_limits

#: Walk segments' commands (v_x, v_y m/s, yaw rate rad/s), in turn: across the training
#: range, the bench robot's schedule among them.
WALK_COMMANDS = ((0.5, 0.0, 0.0), (0.0, 0.3, 0.0), (0.0, 0.0, 0.8), (-0.5, 0.0, 0.0),
                 (1.0, 0.0, 0.0), (0.5, 0.0, 0.5), (0.0, -0.3, 0.0), (0.0, 0.0, -0.8))
SEGMENT_S = 5.0
SHOVE_MPS = 0.5
#: Seconds into a segment after which its tracking errors count.
SETTLE_S = 1.5
#: Critic columns after the actor's nine extras: trunk velocity (3) and height.
VELOCITY_COLUMNS = slice(LeggedInputs.ACTOR, LeggedInputs.ACTOR + 3)
HEIGHT_COLUMN = LeggedInputs.ACTOR + 3


@dataclasses.dataclass
class Segment:
    """One walk segment's outcome: its command, whether it fell, its tracking errors."""

    command: tuple[float, float, float]
    fell: bool
    steps: int
    vx_error: float | None
    vy_error: float | None
    yaw_error: float | None


class WalkTally:
    """Walk segments as they end; success and the mean tracking errors over them."""

    def __init__(self):
        self.segments: list[Segment] = []

    def summary(self, first: int = 0) -> dict:
        """Return success (share not fallen), segments, falls and mean errors from ``first``."""
        return _summary(self.segments[first:])

    def per_command(self) -> list[dict]:
        """Return ``summary`` per command, in the order the commands first came."""
        groups: dict[tuple, list[Segment]] = {}
        for s in self.segments:
            groups.setdefault(s.command, []).append(s)
        return [{'command': list(c), **_summary(seg)} for c, seg in groups.items()]


def _summary(seg: list[Segment]) -> dict:
    """Return success, segments, falls and the mean tracking errors of ``seg``."""
    out: dict = {'segments': len(seg), 'falls': sum(s.fell for s in seg),
                 'success': round(sum(not s.fell for s in seg) / len(seg), 4) if seg else None}
    for key in ('vx_error', 'vy_error', 'yaw_error'):
        vals = [getattr(s, key) for s in seg if getattr(s, key) is not None]
        out[key] = round(float(np.mean(vals)), 4) if vals else None
    return out


class LeggedRobot:
    """The legged double with the supervisor, stepped as a one-env task (module doc)."""

    name = 'legged_robot'
    num_envs = 1
    uses_joint_state = True

    def __init__(self, profile, task_info, variant: str = 'slippery', seed: int = 0,
                 segment_s: float = SEGMENT_S, shove_mps: float = SHOVE_MPS,
                 commands=WALK_COMMANDS, friction: float | None = None):
        """``task_info``: the trained task's (joint names, extras width, control period)."""
        if profile.legged is None:
            raise ValueError(f'robot {profile.name}: not a legged robot')
        self.profile, self.variant = profile, variant
        #: The fall stop's bound (rad): the robot reward's fall (``robot_reward``).
        self.max_tilt_rad = float(profile.legged.max_tilt_rad)
        self.joint_names = list(task_info.joint_names)
        self.control_dt = 1.0 / float(profile.control_rate_hz)
        self.ticks_per_step = int(round(self.control_dt / PHYSICS_DT))
        legged = profile.legged
        self.motor_every = max(1, int(round(1.0 / (legged.motor_rate_hz * PHYSICS_DT))))
        self.segment_steps = int(round(segment_s / self.control_dt))
        self.settle_steps = int(round(SETTLE_S / self.control_dt))
        self.shove_mps = float(shove_mps)
        self.commands = [tuple(float(v) for v in c) for c in commands]
        self.inputs = LeggedInputs(task_info.extras_dim)
        self.max_episode_steps = self.segment_steps
        self.friction = friction
        self.rng = np.random.default_rng(seed)
        self.tally = WalkTally()
        self.starts = 0
        self.double: LeggedDouble | None = None
        self.supervisor: LeggedSupervisor | None = None
        self._segment = 0

    # ------------------------------------------------------------------ robot
    def _start(self) -> None:
        """Set the robot on its feet: a fresh double standing, armed, stood up."""
        self.starts += 1
        seed = int(self.rng.integers(2 ** 31))
        self.double = d = LeggedDouble(self.profile, self.variant, seed=seed, start='stand',
                                       friction=self.friction)
        self._order = d.joint_index(self.joint_names)   # the double's order -> the policy's
        self._back = np.argsort(self._order)             # the policy's order -> the double's
        # The supervisor knows the motors from the model, as the safety node does (not the
        # double's variant: a real robot's weaker motors are not announced).
        limits = motor_limits(self.profile.model_file, self.joint_names)
        self.supervisor = s = LeggedSupervisor(self.profile.legged, limits, d.interface)
        self._feed()
        ok, why = s.request_arm(self._now_ns())
        if not ok:
            raise RuntimeError(f'the legged supervisor refused to arm a standing robot: {why}')
        while s.mode == Mode.STAND:
            self._tick()

    def _now_ns(self) -> int:
        return int(round(self.double.ticks * PHYSICS_DT * 1e9))

    def _feed(self) -> None:
        d, s, now = self.double, self.supervisor, self._now_ns()
        s.joint_state(d.joint_position[self._order], d.joint_velocity[self._order], now)
        w, x, y, z = d.imu().quat
        s.imu((x, y, z, w), now)

    def _tick(self) -> None:
        """One physics tick; the supervisor's tick (and its command) at the motor rate."""
        d = self.double
        if d.ticks % self.motor_every == 0:
            self._feed()
            out = self.supervisor.tick(self._now_ns())
            if out.command is not None:
                d.command(out.command[self._back])
        d.step(1)

    def _observe(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        d = self.double
        imu = d.imu()
        w, x, y, z = imu.quat
        self.inputs.set_imu((x, y, z, w), imu.gyro)
        self.inputs.set_command(*self.commands[self._segment % len(self.commands)])
        q = d.joint_position[self._order][None]
        extras = self.inputs.extras(q)
        truth = d.ground_truth()
        extras[0, VELOCITY_COLUMNS] = truth.linvel
        extras[0, HEIGHT_COLUMN] = truth.pos[2]
        return q, d.joint_velocity[self._order][None], extras

    # ------------------------------------------------------------------ task
    def _state(self, reward=0.0, terminated=False, truncated=False, length=0) -> StepState:
        q, qd, extras = self._observe()
        done = terminated or truncated
        return StepState(
            joint_position=q, joint_velocity=qd, joint_effort=self.double.joint_effort[None],
            extras=extras, reward=np.array([reward], np.float32),
            terminated=np.array([terminated]), truncated=np.array([truncated]),
            episode_return=np.array([0.0 if done else np.nan], np.float32),
            episode_length=np.array([length if done else 0], np.int32),
            sim_time=self.double.sim_time)

    def _begin_segment(self) -> None:
        self._steps = 0
        self._errors = []
        angle = self.rng.uniform(-math.pi, math.pi)
        self._shove = (self.segment_steps // 2, self.shove_mps * math.cos(angle),
                       self.shove_mps * math.sin(angle))

    def reset(self, seed: int | None = None) -> StepState:
        """Start the robot standing and the first segment; return the first state."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._segment = 0
        self._start()
        self._begin_segment()
        return self._state()

    def step(self, command) -> StepState:
        """Send one gated target [1, J] (the policy's order); run one control period."""
        s, d = self.supervisor, self.double
        s.target(np.asarray(command, np.float64)[0])
        self._steps += 1
        if self._steps == self._shove[0]:
            d.push(self._shove[1], self._shove[2])
        for _ in range(self.ticks_per_step):
            self._tick()
        cmd = self.commands[self._segment % len(self.commands)]
        truth = d.ground_truth()
        if self._steps > self.settle_steps:
            self._errors.append((abs(truth.linvel[0] - cmd[0]), abs(truth.linvel[1] - cmd[1]),
                                 abs(truth.angvel[2] - cmd[2])))
        fell = s.mode == Mode.FAULT or truth.fallen
        over = self._steps >= self.segment_steps
        if not (fell or over):
            return self._state()
        err = np.mean(self._errors, axis=0) if self._errors else [None] * 3
        self.tally.segments.append(Segment(cmd, bool(fell), self._steps,
                                           *(None if e is None else float(e) for e in err)))
        length = self._steps
        self._segment += 1
        if fell:
            self._start()
        self._begin_segment()
        return self._state(terminated=bool(fell), truncated=not fell, length=length)

    def close(self) -> None:
        """Nothing held open (the task protocol's close)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
