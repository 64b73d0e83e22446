# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The robot double's physics, without ROS: K simulated robots of one profile.

The robots are the K envs of the profile's task (``make_task(profile.task, K, seed,
disturbances=VARIANTS[variant], auto_reset=False)``): one batched simulation, one
sim clock. The task runs in its no-reset mode, because a robot never resets: no
episode ends, nothing teleports, a fallen robot lies where it fell (MuJoCo's own
reset of a diverged simulation is the one exception; ``unstable`` counts it).

Each robot's drives follow a ``command_in.Target``: before any command, the
position the task's reset commanded (the measured start pose, held by its
position servos); then the last accepted command. ``advance_to(t)`` steps whole
control steps until the sim clock reaches ``t``, each with the targets sampled at
the step's end (a trajectory point at ``time_from_start`` is commanded by then),
so the physics changes at the task's control rate whatever rate the states are
read at. The ``real`` variant's disturbances (heavier links, low friction,
command delay, packet loss, IMU bias walk) act inside the task wrapper, as in
``unilab bench sim2real``.
"""

from __future__ import annotations

import mujoco
import numpy as np

from unilab_bridge.command_in import Hold, Target
from unilab_bridge.tasks import make_task, UnknownTaskError
from unilab_bridge.tasks.quad_walk import quat_rotate_inverse
from unilab_bridge.variants import VARIANTS
from unilab_core.config import ConfigError
from unilab_core.robot_profile import RobotProfile

#: Fraction of a control step the clock may lack and still count as reaching it
#: (float sums of the period must not lose a step).
_EPS = 1e-6


def make_double_task(profile: RobotProfile, robots: int, seed: int, variant: str):
    """Return the profile's task with ``robots`` envs in its no-reset mode, or ConfigError."""
    if variant not in VARIANTS:
        raise ConfigError(f'variant `{variant}`: expected one of {", ".join(VARIANTS)}')
    try:
        task = make_task(profile.task, robots, seed=seed, disturbances=VARIANTS[variant],
                         auto_reset=False)
    except UnknownTaskError as exc:
        raise ConfigError(f'robot {profile.name}: key `task`: {exc}') from None
    except TypeError:
        raise ConfigError(f'robot {profile.name}: task `{profile.task}` has no no-reset mode '
                          '(auto_reset=False); the robot double runs UniLab\'s own tasks '
                          'only') from None
    if task.action_dim != len(profile.joint_names) or \
            len(task.joint_names) != len(profile.joint_names):
        task.close()
        raise ConfigError(f'robot {profile.name}: {len(profile.joint_names)} joint_names, but '
                          f'task {profile.task} has {len(task.joint_names)} joints and '
                          f'{task.action_dim} commands')
    if task.command_interface != profile.command.interface:
        task.close()
        raise ConfigError(f'robot {profile.name}: key `command.interface`: '
                          f'{profile.command.interface}, but task {profile.task} takes '
                          f'{task.command_interface} commands')
    return task


def profile_urdf(profile: RobotProfile, task=None) -> str:
    """
    Return the robot's URDF: the profile's ``urdf_file``, or exported from the task's model.

    The export names the joints as the profile does (profile joint j is task joint j)
    and takes velocity and effort limits from the task. ``task`` (the double's) saves
    building one.
    """
    if profile.urdf_file:
        with open(profile.urdf_file) as f:
            return f.read()
    from unilab_bridge.urdf_export import urdf_from_model
    own = task is None
    if own:
        task = make_task(profile.task, 1)
    try:
        rename = dict(zip(task.joint_names, profile.joint_names))
        limits = {rename[j]: v for j, v in task.joint_limits.items() if j in rename}
        return urdf_from_model(task.sim.model, profile.name, rename, limits)
    finally:
        if own:
            task.close()


class RobotDouble:
    """K simulated robots stepped on one sim clock, each holding its last command."""

    def __init__(self, profile: RobotProfile, robots: int = 1, seed: int = 0,
                 variant: str = 'nominal', imu: bool = False):
        """Build and reset the task; every robot holds its start pose."""
        self.profile = profile
        self.num_robots = int(robots)
        self.task = make_double_task(profile, self.num_robots, seed, variant)
        self.variant = variant
        self.control_dt = float(self.task.control_dt)
        self.has_imu = bool(imu and getattr(self.task, 'has_imu', False))
        if self.has_imu:
            getattr(self.task, 'inner', self.task).enable_sensors(True)
        self.state = self.task.reset(seed=seed)
        self.sim = getattr(self.task, 'sim', None)
        # The drives hold what the task's reset commanded: the measured start pose.
        held = np.stack([d.ctrl for d in self.sim.data]) if self.sim is not None \
            else np.array(self.state.joint_position)
        self.targets: list[Target] = [Hold(q) for q in held]
        self.command = held.astype(np.float64)  # the setpoints of the last step [K, J]
        self.sim_time = 0.0
        self.steps = 0
        #: The floating base's body (the URDF's root link, odometry's child frame), if any.
        self.base_link = None
        if self.sim is not None and self.sim.has_root:
            model = self.sim.model
            free = np.flatnonzero(model.jnt_type == int(mujoco.mjtJoint.mjJNT_FREE))
            self.base_link = model.body(int(model.jnt_bodyid[free[0]])).name
        self.unstable = 0  # MuJoCo's own resets of a diverged simulation

    @property
    def joint_names(self) -> list[str]:
        """Return the robot's joint names (the profile's, in the policy's order)."""
        return list(self.profile.joint_names)

    def set_target(self, robot: int, target: Target) -> None:
        """Make ``robot``'s drives follow ``target`` from the next control step on."""
        self.targets[robot] = target

    def setpoint(self, robot: int) -> np.ndarray:
        """Return ``robot``'s setpoint now (where a new trajectory starts from)."""
        return self.targets[robot].at(self.sim_time)

    def advance_to(self, sim_time: float, max_steps: int | None = None) -> int:
        """Step whole control steps until the clock reaches ``sim_time``; return how many."""
        n = 0
        while self.sim_time + self.control_dt <= sim_time + _EPS * self.control_dt:
            if max_steps is not None and n >= max_steps:
                break
            self.step()
            n += 1
        return n

    def step(self) -> None:
        """Advance one control step with every robot's setpoint at the step's end."""
        t_end = self.sim_time + self.control_dt
        for k, target in enumerate(self.targets):
            self.command[k] = target.at(t_end)
        self.state = self.task.step(self.command)
        if self.sim is not None:
            self.unstable += int(np.count_nonzero(self.sim.unstable))
        self.steps += 1
        # The clock counts steps (no drift from summing float periods).
        self.sim_time = self.steps * self.control_dt

    def imu_reading(self) -> dict | None:
        """Return the IMU's gyro / accel / quat arrays [K, ...] (with the variant's noise)."""
        return self.task.imu_reading() if self.has_imu else None

    def base_state(self) -> dict | None:
        """
        Return the floating base's pose and twist per robot, or None for a fixed base.

        ``pos`` [K,3] and ``quat`` [K,4] (w, x, y, z) in the world frame; ``linvel`` and
        ``angvel`` [K,3] in the base frame (nav_msgs/Odometry's twist is in child_frame_id).
        """
        sim = self.sim
        if self.base_link is None:
            return None
        return {'pos': sim.root_pos.copy(), 'quat': sim.root_quat.copy(),
                'linvel': quat_rotate_inverse(sim.root_quat, sim.root_linvel),
                'angvel': sim.root_angvel.copy()}

    def close(self) -> None:
        """Release the simulator."""
        self.task.close()


class ScaledClock:
    """
    Simulated time from a wall clock: ``(wall - start) * scale``, less the time slipped.

    When the physics lags the scaled clock by more than ``max_lag`` (the machine
    cannot keep up), the clock slips by the excess: the robots then live slower
    than asked (``slipped`` counts it) instead of catching up in a burst of steps.
    """

    def __init__(self, scale: float, max_lag: float, start: float = 0.0):
        self.scale, self.max_lag = float(scale), float(max_lag)
        self.start = float(start)
        self.slipped = 0.0

    def target(self, wall: float, sim_time: float) -> float:
        """Return the simulated time to step to at ``wall``, given the physics' time."""
        t = (wall - self.start) * self.scale - self.slipped
        if t - sim_time > self.max_lag:
            self.slipped += t - sim_time - self.max_lag
            t = sim_time + self.max_lag
        return t


class Every:
    """Due once per ``period`` of a clock; after a stall once at once, then on the period."""

    def __init__(self, period: float, first: float = 0.0):
        self.period = float(period)
        self.next = float(first)

    def due(self, t: float) -> bool:
        """Return whether an event is due at time ``t`` (and schedule the next one)."""
        if t < self.next - _EPS * self.period:
            return False
        # On time or late by less than a period: keep the phase; later: restart from t.
        self.next = self.next + self.period if t < self.next + self.period \
            else t + self.period
        return True
