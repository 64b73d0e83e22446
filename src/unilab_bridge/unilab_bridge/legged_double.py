# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A legged robot double that is not the training simulator: one robot, its own physics.

The arm / quad double (``robot_double``) runs the training task itself; a legged policy
checked against its own simulator proves little. This double is written apart from the
task: its own ``MjModel`` / ``MjData`` of the profile's ``model_file`` (go2.xml), stepped
at 1 kHz (``PHYSICS_DT``; training steps the same model at 200 Hz), its own floor
friction, the motors' envelope, a command latency and pushes on a timetable. What a
robot's driver does, and only that:

- effort interface: the commanded torque is held (zero-order) from one command to the
  next, clipped each tick to what the motor delivers at its speed
  (``unilab_core.actuator.TorqueEnvelope``, eq. (2)-(3) there); before any command, 0;
- position interface: the driver's own PD at every physics tick with the gains it
  declares (``PdMotor``, eq. (1)-(3)); before any command, it holds the start pose;
- latency: a command takes effect ``latency_ticks`` physics ticks after it arrived
  (a queue); the torque read back (``joint_effort``) is the torque of the last tick, so
  a command given after tick n shows in the readout after ``latency_ticks + 1`` steps;
- pushes: ``(t_s, dvx, dvy)`` kicks to the trunk's world-frame velocity on a timetable,
  and ``push()`` on demand, applied at the start of the next tick.

Start poses (``start``): ``lie`` (legs at the profile's ``legged.lie_pose``, placed above
the floor and settled for ``SETTLE_S`` under a stiff hold of the pose, so the robot lies
at rest; then the driver takes over), ``stand`` (``legged.stand_pose``, settled the same
way) or ``tilt`` (the stand pose with the trunk rolled by ``tilt_rad``, placed touching
the floor, not settled: the fall-stop test).

Read-outs: joints in any order (``joint_index``), the IMU at the model's ``imu`` site
(orientation, gyro in the IMU frame, accelerometer with gravity: at rest +9.81 up), and
ground truth for scoring (base pose, yaw, base-frame velocities, ``fallen``). No ROS.
"""

from __future__ import annotations

import collections
import math
from typing import NamedTuple

import mujoco
import numpy as np

from unilab_bridge.variants import LEGGED_VARIANTS
from unilab_core.actuator import MotorLimits, PdMotor, TorqueEnvelope
from unilab_core.config import ConfigError
from unilab_core.robot_profile import RobotProfile

#: Physics step (s): 1 kHz, the rate a Go2's motor drivers run their loop at
#: (unitree_sdk2 low-level examples write LowCmd at 500 Hz-1 kHz).
PHYSICS_DT = 0.001
#: Settling time (s) of the lying and standing starts.
SETTLE_S = 1.0
#: Gains of the settling hold (ASSUMPTION: stiff enough that the legs end within a few
#: hundredths of a radian of the pose under the robot's weight; only used before start).
SETTLE_KP, SETTLE_KD = 150.0, 3.0
#: Fallen: trunk below this height (m) or tilted more than this (rad) from upright.
FALLEN_HEIGHT_M = 0.12
FALLEN_TILT_RAD = math.radians(60.0)
START_POSES = ('lie', 'stand', 'tilt')


class Push(NamedTuple):
    """A velocity kick to the trunk at ``t_s`` (s of sim time), world frame (m/s)."""

    t_s: float
    dvx: float
    dvy: float


class GroundTruth(NamedTuple):
    """The double's truth for scoring (not what a robot measures)."""

    pos: np.ndarray       # [3] base position, world (m)
    quat: np.ndarray      # [4] base orientation (w, x, y, z), world
    yaw: float            # rad
    linvel: np.ndarray    # [3] base linear velocity in the base frame (m/s)
    angvel: np.ndarray    # [3] base angular velocity in the base frame (rad/s)
    fallen: bool


class ImuReading(NamedTuple):
    """The IMU site's reading: orientation (w, x, y, z), gyro (rad/s), accel (m/s^2)."""

    quat: np.ndarray
    gyro: np.ndarray
    accel: np.ndarray


def parse_pushes(flat) -> list[Push]:
    """Return pushes from a flat ``[t, dvx, dvy, t, dvx, dvy, ...]`` list (a ROS parameter)."""
    flat = [float(v) for v in flat]
    if len(flat) % 3:
        raise ConfigError(f'pushes: {len(flat)} numbers; expected triples t_s, dvx, dvy')
    pushes = [Push(*flat[i:i + 3]) for i in range(0, len(flat), 3)]
    if any(not all(math.isfinite(v) for v in p) or p.t_s < 0 for p in pushes):
        raise ConfigError(f'pushes: need finite values and t_s >= 0, got {flat}')
    return sorted(pushes)


class LeggedDouble:
    """One legged robot on a floor, driven as its ros2_control driver drives it."""

    def __init__(self, profile: RobotProfile, variant: str = 'nominal', seed: int = 0,
                 start: str = 'lie', tilt_rad: float = 0.0, latency_s: float | None = None,
                 friction: float | None = None, kp: float | None = None,
                 kd: float | None = None, pushes=()):
        """Build the model, apply the variant, place and settle the robot at ``start``."""
        if profile.legged is None:
            raise ConfigError(f'robot {profile.name}: no `legged:` section (not a legged '
                              'robot)')
        if variant not in LEGGED_VARIANTS:
            raise ConfigError(f'variant `{variant}`: expected one of '
                              f'{", ".join(LEGGED_VARIANTS)}')
        if start not in START_POSES:
            raise ConfigError(f'start `{start}`: expected one of {", ".join(START_POSES)}')
        self.profile, self.variant = profile, LEGGED_VARIANTS[variant]
        self.variant_name = variant
        self.rng = np.random.default_rng(seed)
        self.model = m = mujoco.MjModel.from_xml_path(profile.model_file)
        m.opt.timestep = PHYSICS_DT
        self.data = mujoco.MjData(m)
        self._map_joints(profile)
        self._apply_variant(friction)
        limits = MotorLimits.from_model(m)
        strength = self.variant.motor_strength
        # Actuator order -> the profile's joint order; the variant's weaker motors.
        self.limits = MotorLimits(torque_limit=limits.torque_limit[self._act] * strength,
                                  knee_speed=limits.knee_speed[self._act],
                                  no_load_speed=limits.no_load_speed[self._act])
        self.interface = profile.command.interface
        legged = profile.legged
        self.kp = float(legged.kp if kp is None else kp)
        self.kd = float(legged.kd if kd is None else kd)
        self.envelope = TorqueEnvelope(1, self.limits)
        self.pd = PdMotor(1, self.limits, self.kp, self.kd)
        # Latency: drawn per start from the seed (whole physics ticks), or as set.
        lo, hi = self.variant.latency_s
        lat = float(self.rng.uniform(lo, hi)) if latency_s is None else float(latency_s)
        if not (math.isfinite(lat) and lat >= 0):
            raise ConfigError(f'latency_s {latency_s}: must be >= 0')
        self.latency_ticks = int(round(lat / PHYSICS_DT))
        self.latency_s = self.latency_ticks * PHYSICS_DT
        self._queue: collections.deque = collections.deque()  # (due tick, command [J])
        self.pushes = sorted(Push(*p) for p in pushes)
        self._next_push = 0
        self._pending_kicks: list[tuple[float, float]] = []
        self.pushes_applied = 0
        self.commands = 0
        self.falls = 0
        # Work arrays [1, J] in the profile's joint order.
        j = len(profile.joint_names)
        self.tau = np.zeros((1, j))
        self._q = np.zeros((1, j))
        self._qd = np.zeros((1, j))
        self._place(start, float(tilt_rad))
        self.ticks = 0
        # Before any command: effort 0; position: hold the start pose.
        self.active = np.zeros(j) if self.interface == 'effort' else self.joint_position.copy()
        self._fallen = self.ground_truth().fallen

    # ------------------------------------------------------------------ set-up
    def _map_joints(self, profile: RobotProfile) -> None:
        m = self.model
        names = list(profile.joint_names)
        act_of = {m.joint(int(m.actuator_trnid[a, 0])).name: a for a in range(m.nu)}
        missing = [n for n in names if n not in act_of]
        if missing or len(names) != m.nu:
            raise ConfigError(f'robot {profile.name}: joints {missing or names} do not match '
                              f'the motors of {profile.model_file}')
        self._act = np.array([act_of[n] for n in names], np.intp)
        self._qadr = np.array([m.jnt_qposadr[m.joint(n).id] for n in names], np.intp)
        self._vadr = np.array([m.jnt_dofadr[m.joint(n).id] for n in names], np.intp)
        self.joint_names = names
        free = np.flatnonzero(m.jnt_type == int(mujoco.mjtJoint.mjJNT_FREE))
        if len(free) != 1:
            raise ConfigError(f'robot {profile.name}: a legged model needs one free joint')
        self.base_body = int(m.jnt_bodyid[free[0]])
        self.base_link = m.body(self.base_body).name
        self._root_q = int(m.jnt_qposadr[free[0]])
        self._root_v = int(m.jnt_dofadr[free[0]])
        self.floor_geom = int(mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, 'floor'))
        if self.floor_geom < 0:
            raise ConfigError(f'{profile.model_file}: no geom named `floor`')
        self._sensor = {}
        for name in ('imu_quat', 'imu_gyro', 'imu_accel'):
            sid = int(mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_SENSOR, name))
            if sid < 0:
                raise ConfigError(f'{profile.model_file}: no sensor `{name}` at the imu site')
            adr, dim = int(m.sensor_adr[sid]), int(m.sensor_dim[sid])
            self._sensor[name] = slice(adr, adr + dim)

    def _apply_variant(self, friction: float | None) -> None:
        m, v = self.model, self.variant
        mu = v.friction if friction is None else friction
        if mu is not None:
            if not (math.isfinite(mu) and mu > 0):
                raise ConfigError(f'friction {mu}: must be > 0')
            # The floor's friction decides every floor contact: MuJoCo takes the parameters
            # of the geom with the higher priority (else the larger friction of the two).
            m.geom_friction[self.floor_geom, 0] = mu
            m.geom_priority[self.floor_geom] = int(m.geom_priority.max()) + 1
        self.friction = float(m.geom_friction[self.floor_geom, 0]) if mu is not None else None
        if v.payload_kg:
            # A point mass at the trunk's centre of mass: inertia unchanged (ASSUMPTION).
            m.body_mass[self.base_body] += v.payload_kg
            mujoco.mj_setConst(m, self.data)

    def _place(self, start: str, tilt_rad: float) -> None:
        """Put the robot at its start pose on the floor (and settle it, except tilt)."""
        m, d, legged = self.model, self.data, self.profile.legged
        pose = np.array(legged.lie_pose if start == 'lie' else legged.stand_pose)
        mujoco.mj_resetData(m, d)
        d.qpos[self._qadr] = pose
        r = self._root_q
        d.qpos[r:r + 3] = (0.0, 0.0, 0.5)
        quat = np.array([1.0, 0.0, 0.0, 0.0])
        if start == 'tilt':
            quat = np.array([math.cos(tilt_rad / 2), math.sin(tilt_rad / 2), 0.0, 0.0])
        d.qpos[r + 3:r + 7] = quat
        # Lower the robot until its lowest point touches the floor.
        mujoco.mj_forward(m, d)
        d.qpos[r + 2] -= self._floor_clearance() - 1e-4
        mujoco.mj_forward(m, d)
        if start != 'tilt':
            hold = PdMotor(1, MotorLimits(self.limits.torque_limit * 10,
                                          self.limits.knee_speed, self.limits.no_load_speed),
                           SETTLE_KP, SETTLE_KD)
            for _ in range(int(round(SETTLE_S / PHYSICS_DT))):
                self._read_joints()
                d.ctrl[self._act] = hold.torque(pose[None], self._q, self._qd)[0]
                mujoco.mj_step(m, d)
            d.qvel[:] = 0.0
            d.ctrl[:] = 0.0
        d.time = 0.0
        mujoco.mj_forward(m, d)

    def _floor_clearance(self) -> float:
        """Return the smallest distance (m) of any robot geom above the floor."""
        m, d = self.model, self.data
        best = np.inf
        fromto = np.zeros(6)
        for g in range(m.ngeom):
            if g == self.floor_geom or m.geom_bodyid[g] == 0:
                continue
            dist = mujoco.mj_geomDistance(m, d, self.floor_geom, g, 1.0, fromto)
            best = min(best, dist)
        return float(best)

    # ------------------------------------------------------------------ inputs
    def command(self, values) -> None:
        """
        Queue ``values`` (``[J]``, the profile's joint order), arriving now.

        Effort: torques (N m); position: targets (rad). It acts ``latency_ticks`` ticks
        from now, and is held until the next one acts.
        """
        arr = np.array(values, np.float64).reshape(-1)
        if arr.shape != (len(self.joint_names),) or not np.isfinite(arr).all():
            raise ValueError(f'command: need {len(self.joint_names)} finite values, got '
                             f'{arr.tolist()}')
        self._queue.append((self.ticks + self.latency_ticks, arr))
        self.commands += 1

    def push(self, dvx: float, dvy: float) -> None:
        """Kick the trunk by (dvx, dvy) m/s (world frame) at the start of the next tick."""
        self._pending_kicks.append((float(dvx), float(dvy)))

    # ------------------------------------------------------------------ physics
    @property
    def sim_time(self) -> float:
        """Return the simulated time (s) since the start."""
        return self.ticks * PHYSICS_DT

    def _read_joints(self) -> None:
        self._q[0] = self.data.qpos[self._qadr]
        self._qd[0] = self.data.qvel[self._vadr]

    def step(self, n: int = 1) -> None:
        """Advance ``n`` physics ticks."""
        m, d = self.model, self.data
        for _ in range(n):
            while self._queue and self._queue[0][0] <= self.ticks:
                self.active = self._queue.popleft()[1]
            self._kick()
            self._read_joints()
            if self.interface == 'effort':
                self.tau[0] = self.active
                self.envelope.clip(self.tau, self._qd, out=self.tau)
            else:
                self.pd.torque(self.active[None], self._q, self._qd, out=self.tau)
            d.ctrl[self._act] = self.tau[0]
            mujoco.mj_step(m, d)
            self.ticks += 1
            fallen = self._is_fallen()
            self.falls += int(fallen and not self._fallen)
            self._fallen = fallen

    def advance_to(self, sim_time: float, max_ticks: int | None = None) -> int:
        """Step whole ticks until the clock reaches ``sim_time``; return how many."""
        n = max(0, int(math.floor(sim_time / PHYSICS_DT + 1e-6)) - self.ticks)
        if max_ticks is not None:
            n = min(n, max_ticks)
        self.step(n)
        return n

    def _kick(self) -> None:
        t = self.sim_time
        kicks = self._pending_kicks
        while self._next_push < len(self.pushes) and self.pushes[self._next_push].t_s <= t:
            p = self.pushes[self._next_push]
            kicks.append((p.dvx, p.dvy))
            self._next_push += 1
        if kicks:
            v = self._root_v
            for dvx, dvy in kicks:
                self.data.qvel[v] += dvx
                self.data.qvel[v + 1] += dvy
                self.pushes_applied += 1
            kicks.clear()

    # ------------------------------------------------------------------ read-outs
    def joint_index(self, names) -> np.ndarray:
        """Return the index array that orders the read-outs as ``names``."""
        where = {n: i for i, n in enumerate(self.joint_names)}
        try:
            return np.array([where[n] for n in names], np.intp)
        except KeyError as exc:
            raise ValueError(f'no joint {exc} (joints: {self.joint_names})') from None

    @property
    def joint_position(self) -> np.ndarray:
        """Return joint positions (rad) ``[J]`` in the profile's order."""
        return self.data.qpos[self._qadr].copy()

    @property
    def joint_velocity(self) -> np.ndarray:
        """Return joint velocities (rad/s) ``[J]``."""
        return self.data.qvel[self._vadr].copy()

    @property
    def joint_effort(self) -> np.ndarray:
        """Return the torque (N m) ``[J]`` the motors applied in the last tick."""
        return self.tau[0].copy()

    def imu(self) -> ImuReading:
        """Return the IMU site's orientation, gyro (IMU frame) and accelerometer (+g)."""
        s = self.data.sensordata
        return ImuReading(s[self._sensor['imu_quat']].copy(), s[self._sensor['imu_gyro']].copy(),
                          s[self._sensor['imu_accel']].copy())

    def _is_fallen(self) -> bool:
        d, r = self.data, self._root_q
        # Tilt: the angle between the trunk's z axis and the world's, cos = R[2, 2].
        w, x, y, _ = d.qpos[r + 3:r + 7]
        cos_tilt = 1.0 - 2.0 * (x * x + y * y) / max(w * w + x * x + y * y + _ * _, 1e-12)
        return bool(d.qpos[r + 2] < FALLEN_HEIGHT_M or cos_tilt < math.cos(FALLEN_TILT_RAD))

    def ground_truth(self) -> GroundTruth:
        """Return the base's pose and velocities, and whether the robot is down."""
        d, r, v = self.data, self._root_q, self._root_v
        quat = d.qpos[r + 3:r + 7].copy()
        w, x, y, z = quat
        yaw = math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
        # MuJoCo's free joint: linear velocity in the world frame, angular in the body frame.
        inv = np.zeros(4)
        mujoco.mju_negQuat(inv, quat)
        linvel = np.zeros(3)
        mujoco.mju_rotVecQuat(linvel, d.qvel[v:v + 3], inv)
        return GroundTruth(d.qpos[r:r + 3].copy(), quat, yaw, linvel,
                           d.qvel[v + 3:v + 6].copy(), self._is_fallen())

    def stats(self) -> dict:
        """Return the counters (commands, latency, pushes, falls) for a results file."""
        return {'variant': self.variant_name, 'sim_time_s': round(self.sim_time, 4),
                'ticks': self.ticks, 'commands_taken': self.commands,
                'latency_s': self.latency_s, 'friction': self.friction,
                'pushes': self.pushes_applied, 'falls': self.falls,
                'fallen': self._fallen}

    def urdf(self) -> str:
        """
        Return the robot's URDF with a ``<ros2_control>`` block in the driver's joint order.

        Position interface: each joint declares the driver's gains (``<param name="kp">``,
        ``kd``), which ``unilab check-robot`` compares with the training's.
        """
        from unilab_bridge.urdf_export import add_ros2_control, urdf_from_model
        p = self.profile
        limits = {n: {'max_effort': float(self.limits.torque_limit[i]),
                      'max_velocity': float(self.limits.no_load_speed[i])}
                  for i, n in enumerate(self.joint_names)}
        urdf = urdf_from_model(self.model, p.name, None, limits)
        gains = {'kp': self.kp, 'kd': self.kd} if self.interface == 'position' else None
        return add_ros2_control(urdf, p.name, p.controller_joints, self.interface, gains,
                                plugin='unilab/LeggedDouble')
