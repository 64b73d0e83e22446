# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
go2_walk: the Unitree Go2 (assets/go2.xml) walks, turns and stands on velocity commands.

The recipe is legged_gym's / unitree_rl_gym's for the Go2 (docs/go2.md says where it
differs): the policy sends joint position targets ``HOME + 0.25 * action`` at 50 Hz; the
motor driver's PD (``unilab_core.actuator.PdMotor``, kp 20, kd 0.5, the torque limits and the
torque-speed curve of the model) turns them into torques at the 200 Hz physics rate, the
targets a per-episode 0-20 ms late (``CommandDelay``). Commands (v_x, v_y, yaw rate) are
resampled every ``resample_s`` within an episode, a share of them zero (stand still), their
ranges grown by a curriculum on the tracking reward. The actor observes what the robot's ROS 2
interfaces give (``EXTRAS_NAMES``): joint positions and velocities (``/joint_states``), the
IMU's angular velocity and its orientation as the gravity direction in the trunk frame
(``/imu/data``), the command (``/cmd_vel``); the last action comes from the policy's own
``model.action_history``. Each is read with legged_gym's noise. The critic also sees simulator
truth (``PRIVILEGED_NAMES``: the trunk's velocity and height, the feet's contacts), in extras
columns the actor's network does not read (``critic_only_extras``). Rewards are legged_gym's terms
times the control period, the sum clipped at 0 (``only_positive_rewards``). The world is
randomised per episode (``LeggedDomain``: friction, payload, centre of mass, motor strength,
pushes, flat or rough ground).
"""

from __future__ import annotations

import collections
import dataclasses
import pathlib

import mujoco
import numpy as np

from unilab_bridge.sensors import ImuSensor, set_sensors_enabled
from unilab_bridge.tasks.base import EpisodeCounter, StepState
from unilab_bridge.tasks.joint_limits import actuated_joints, joint_limits_from_model
from unilab_bridge.tasks.legged_domain import LeggedDomain, LeggedRanges
from unilab_bridge.tasks.mj_batch import MjBatch
from unilab_bridge.tasks.mj_task import MjTask
from unilab_bridge.tasks.model_cache import load_model
from unilab_bridge.tasks.quad_walk import quat_rotate_inverse
from unilab_bridge.tasks.terrain import height_at, model_with_terrain, RoughTerrain
from unilab_core.actuator import CommandDelay, DEFAULT_KD, DEFAULT_KP, MotorLimits, PdMotor

ASSET = pathlib.Path(__file__).resolve().parents[1] / 'assets' / 'go2.xml'
#: unitree_rl_gym go2_config ``default_joint_angles``, in the model's order (FL, FR, RL, RR;
#: hip, thigh, calf): the pose actions are around.
HOME = np.array([0.1, 0.8, -1.5, -0.1, 0.8, -1.5, 0.1, 1.0, -1.5, -0.1, 1.0, -1.5])
ACTION_SCALE = 0.25
TRACKING_SIGMA = 0.25
BASE_HEIGHT_TARGET = 0.25  # m, unitree_rl_gym go2_config base_height_target
FEET = ('FL_foot', 'FR_foot', 'RL_foot', 'RR_foot')
TRUNK_BODIES = ('base', 'Head_upper', 'Head_lower')
#: The actor's extras, by name; each is something a real Go2 measures or is told.
EXTRAS_NAMES = ('imu_gyro_x', 'imu_gyro_y', 'imu_gyro_z',
                'projected_gravity_x', 'projected_gravity_y', 'projected_gravity_z',
                'command_vx', 'command_vy', 'command_yaw')
#: Simulator truth after them, for the critic only (``critic_only_extras``): the actor's
#: network never reads these columns (``ModelSection.critic_only``).
PRIVILEGED_NAMES = ('base_lin_vel_x', 'base_lin_vel_y', 'base_lin_vel_z', 'base_height',
                    'foot_contact_FL', 'foot_contact_FR', 'foot_contact_RL', 'foot_contact_RR')
#: Uniform observation noise (+- this, times ``obs_noise``), legged_gym's noise scales.
NOISE = {'joint_position': 0.01, 'joint_velocity': 1.5, 'imu_gyro': 0.2,
         'projected_gravity': 0.05}
#: legged_gym terms (go2 / A1 flat configs), each multiplied by the control dt in step().
REWARD_SCALES = {
    'tracking_lin_vel': 1.0, 'tracking_yaw': 0.5, 'lin_vel_z': -2.0, 'ang_vel_xy': -0.05,
    'orientation': -0.2, 'base_height': -10.0, 'torques': -2e-4, 'dof_acc': -2.5e-7,
    'action_rate': -0.01, 'collision': -1.0, 'feet_air_time': 1.0, 'stand_still': -0.5,
    'dof_pos_limits': -10.0,
}
EPISODE_STATS_KEPT = 4096
MIN_HEIGHT = 0.12  # trunk centre below this above the start's ground (m): fallen
MIN_UPRIGHT = 0.5  # cos of the trunk tilt below this (60 deg): fallen
CURRICULUM_START, CURRICULUM_STEP, CURRICULUM_SUCCESS = 0.7, 0.1, 0.8


def measurable_terms(cmd, lin, ang, grav, height, action, prev_action, qpos, qvel, prev_qvel,
                     dt: float) -> dict[str, np.ndarray]:
    """
    Return the reward terms ``[N]`` a robot's own records give (unscaled; REWARD_SCALES).

    From the command, the trunk's velocity in its frame ``lin`` (a state estimate on a
    robot) and height, the gyro ``ang``, the gravity direction ``grav``, the actions and
    the joint states: everything but the torques, collisions, feet air time and joint-limit
    terms. ``Go2Walk.step`` and online adaptation's robot reward (``unilab_adapt``) both
    compute these here.
    """
    still = np.linalg.norm(cmd, axis=1) < 0.1
    return {
        'tracking_lin_vel': np.exp(-np.sum((cmd[:, :2] - lin[:, :2]) ** 2, axis=1)
                                   / TRACKING_SIGMA),
        'tracking_yaw': np.exp(-(cmd[:, 2] - ang[:, 2]) ** 2 / TRACKING_SIGMA),
        'lin_vel_z': lin[:, 2] ** 2,
        'ang_vel_xy': np.sum(ang[:, :2] ** 2, axis=1),
        'orientation': np.sum(grav[:, :2] ** 2, axis=1),
        'base_height': (height - BASE_HEIGHT_TARGET) ** 2,
        'dof_acc': np.sum(((qvel - prev_qvel) / dt) ** 2, axis=1),
        'action_rate': np.sum((action - prev_action) ** 2, axis=1),
        'stand_still': np.sum(np.abs(qpos - HOME), axis=1) * still,
    }


class Go2Walk(MjTask):
    """Batched Go2 walking; commands are joint position targets in rad (model order)."""

    TASK_NAME = 'go2_walk'
    command_interface = 'position'
    uses_joint_state = True
    action_mode = 'offset'

    def __init__(self, num_envs, seed=0, max_episode_steps=1000, decimation=4,
                 command_vx=(-1.0, 1.0), command_vy=(-0.5, 0.5), command_yaw=(-1.0, 1.0),
                 stand_share=0.1, resample_s=5.0, settle_s=1.0, curriculum=True,
                 ranges=None, max_delay_s=0.020, obs_noise=1.0, terrain=True,
                 kp=DEFAULT_KP, kd=DEFAULT_KD, reset_noise=0.1, reward_scales=None,
                 only_positive_rewards=True, command_schedule=None, num_threads=None,
                 auto_reset=True):
        """
        Build ``num_envs`` Go2 simulations (call reset() next); see the module doc.

        ``command_schedule`` (``[[seconds, v_x, v_y, yaw], ...]``) replaces the random
        commands by these, in turn, from each episode's start (cycled): a demonstration
        (``unilab play --task-option``) or a scripted test.
        """
        self.name = self.TASK_NAME
        self.num_envs = n = int(num_envs)
        if n < 1:
            raise ValueError(f'num_envs must be >= 1, got {num_envs}')
        self.model = (model_with_terrain(ASSET, RoughTerrain()) if terrain
                      else load_model(ASSET))
        m = self.model
        act_ids, jnt_ids = actuated_joints(m)
        self.actuated_joint_ids = list(jnt_ids)
        self.joint_names = [m.joint(j).name for j in jnt_ids]
        self._qpos_adr = m.jnt_qposadr[jnt_ids]
        self.imu = ImuSensor(m)
        set_sensors_enabled([m], False)
        self._batch = MjBatch(m, n, decimation, self._qpos_adr, m.jnt_dofadr[jnt_ids], (),
                              num_threads, root_joint=m.joint('root').id)
        self.action_dim = m.nu
        self.extras_names = EXTRAS_NAMES + PRIVILEGED_NAMES
        self.extras_dim = len(self.extras_names)
        self.critic_only_extras = len(PRIVILEGED_NAMES)
        self.control_dt = float(m.opt.timestep * decimation)
        self.max_episode_steps = int(max_episode_steps)
        limits = MotorLimits.from_model(m)
        self.joint_limits = joint_limits_from_model(m, act_ids, jnt_ids, limits.no_load_speed)
        # The policy's commands are the PD's position targets, and the gate's limits
        # (``joint_limits``) are a target's, not the joint's (legged_gym bounds neither):
        # - range: a target beyond the joint's range asks for torque toward it, bounded by
        #   the motor; past torque_limit / kp (the PD's saturation span) beyond the range
        #   the PD saturates anyway, so targets may lie that far outside it;
        # - slew: the joint's speed is the motor's to limit (the PD's torque limits and
        #   torque-speed curve), not the target's; a target step of more than the saturation
        #   span per control step only reverses a saturated torque, so that is the target's
        #   change limit (max_velocity = span / dt). The joint's own velocity limit (0.31
        #   rad per step on the calf) clamped about half of a trained policy's rows.
        # The joint range stays the model's; the joint-limit penalty and resets use it.
        jlo, jhi = m.jnt_range[jnt_ids, 0].copy(), m.jnt_range[jnt_ids, 1].copy()
        reach = limits.torque_limit / np.broadcast_to(np.asarray(kp, float), jlo.shape)
        self.action_low, self.action_high = jlo - reach, jhi + reach
        for k, name in enumerate(self.joint_names):
            self.joint_limits[name].update(min_position=float(self.action_low[k]),
                                           max_position=float(self.action_high[k]),
                                           max_velocity=float(reach[k] / self.control_dt))
        self.action_scale = (ACTION_SCALE,) * self.action_dim
        self.action_offset = tuple(float(x) for x in HOME)
        self.command_ranges = np.array([command_vx, command_vy, command_yaw], float)
        self.stand_share = float(stand_share)
        self.resample_steps = max(1, int(round(resample_s / self.control_dt)))
        self.settle_steps = int(round(settle_s / self.control_dt))
        self._schedule = _check_schedule(command_schedule, self.control_dt)
        self._segment = np.zeros(n, np.int64)
        self.curriculum = bool(curriculum) and self._schedule is None
        self.curriculum_level = CURRICULUM_START if self.curriculum else 1.0
        self.obs_noise = float(obs_noise)
        self.reset_noise = float(reset_noise)
        self.only_positive_rewards = bool(only_positive_rewards)
        self.reward_scales = dict(REWARD_SCALES if reward_scales is None else reward_scales)
        self.reward_terms = {}
        self.pd = PdMotor(n, limits, kp=kp, kd=kd)
        self._rng = np.random.default_rng(seed)
        streams = np.random.SeedSequence(seed).spawn(3)
        self._noise_rng = np.random.default_rng(streams[0])
        self.delay = CommandDelay(n, self.action_dim, float(m.opt.timestep),
                                  np.random.default_rng(streams[1]), max_delay_s)
        if isinstance(ranges, LeggedRanges):
            self.ranges = ranges
        else:
            self.ranges = dataclasses.replace(LeggedRanges(), **(ranges or {}))
        self.domain = LeggedDomain(self._batch, m.body('base').id, self.action_dim,
                                   self.control_dt, self.ranges,
                                   np.random.default_rng(streams[2]), terrain)
        self._stand_z = float(m.key('stand').qpos[2])
        self._joint_lo, self._joint_hi = jlo, jhi
        mid, half = (self._joint_lo + self._joint_hi) / 2, (self._joint_hi - self._joint_lo) / 2
        self._soft_lo, self._soft_hi = mid - 0.9 * half, mid + 0.9 * half
        self._classify_geoms()
        self._batch.keep_contacts()  # feet and trunk contacts are read after each step
        self._ground = np.zeros(n)  # the ground's height under each env's start (m)
        self._cmd = np.zeros((n, 3))
        self._since_cmd = np.zeros(n, np.int64)
        self._target = np.tile(HOME, (n, 1))
        self._tau = np.zeros((n, self.action_dim))
        self._prev_action = np.zeros((n, self.action_dim))
        self._prev_qvel = np.zeros((n, self.action_dim))
        self._air_time = np.zeros((n, len(FEET)))
        self._last_contact = np.ones((n, len(FEET)), bool)
        self._track_ema = 0.0
        # Per env, steady-state sums since the episode started: |errors| (vx, vy, yaw) and
        # their step count; trunk speed and step count while the command is zero.
        self._err_sum = np.zeros((n, 3))
        self._err_steps = np.zeros(n, np.int64)
        self._drift_sum = np.zeros(n)
        self._drift_steps = np.zeros(n, np.int64)
        self.episode_stats = collections.deque(maxlen=EPISODE_STATS_KEPT)
        self.auto_reset = bool(auto_reset)
        self._episodes = EpisodeCounter(n, self.max_episode_steps if self.auto_reset else None)
        self._batch_steps = 0
        self._was_reset = False

    # ------------------------------------------------------------------ interface
    def step(self, command):
        """Apply joint position targets [N, 12] for one control step, then auto-reset."""
        if not self._was_reset:
            raise RuntimeError(f'{self.name}: call reset() before step()')
        target = self.check_command(command)
        b, dt = self._batch, self.control_dt
        self._target[:] = target
        self.domain.push(self._episodes.steps)
        b.step_motor(self._motor)
        self._batch_steps += 1
        lin, ang, grav = self._base_frame()
        feet, trunk_hit, leg_hits = self._contacts()
        cmd = self._cmd
        moving = np.linalg.norm(cmd[:, :2], axis=1) > 0.1
        first = (self._air_time > 0) & (feet | self._last_contact)
        self._air_time += dt
        air = np.sum((self._air_time - 0.5) * first, axis=1) * moving
        self._air_time[feet | self._last_contact] = 0.0
        self._last_contact = feet
        action = (target - HOME) / ACTION_SCALE
        still = np.linalg.norm(cmd, axis=1) < 0.1
        height = b.root_pos[:, 2] - self._ground
        terms = {
            **measurable_terms(cmd, lin, ang, grav, height, action, self._prev_action,
                               b.qpos, b.qvel, self._prev_qvel, dt),
            'torques': np.sum(self._tau ** 2, axis=1),
            'collision': leg_hits.astype(float),
            'feet_air_time': air,
            'dof_pos_limits': np.sum(np.clip(self._soft_lo - b.qpos, 0, None)
                                     + np.clip(b.qpos - self._soft_hi, 0, None), axis=1),
        }
        self.reward_terms = {k: self.reward_scales[k] * terms[k] * dt
                             for k in self.reward_scales}
        reward = sum(self.reward_terms.values())
        if self.only_positive_rewards:
            reward = np.clip(reward, 0.0, None)
        reward = reward.astype(np.float32)
        self._prev_action[:] = action
        self._prev_qvel[:] = b.qvel
        self._update_curriculum(terms['tracking_lin_vel'])
        fallen = trunk_hit | (height < MIN_HEIGHT) | (-grav[:, 2] < MIN_UPRIGHT)
        terminated = fallen | b.unstable
        if not self.auto_reset:
            terminated = np.zeros_like(terminated)
        reward[b.unstable] = 0.0
        truncated, done, ep_return, ep_length = self._episodes.end_step(reward, terminated)
        self._account(lin, ang, still)
        self._since_cmd += 1
        for i in np.flatnonzero(done):
            self._finish_episode(i, bool(terminated[i]), int(ep_length[i]))
            self._reset_env(i)
        if self._schedule is not None:
            again = ~done & (self._scheduled(self._episodes.steps) != self._segment)
        else:
            again = ~done & (self._since_cmd >= self.resample_steps)
        if again.any():
            self._resample(np.flatnonzero(again))
        return self._state(reward, terminated, truncated, ep_return, ep_length)

    # ------------------------------------------------------------------ physics
    def _motor(self, qpos, qvel):
        """Return the motor drivers' torques [N, 12] at the physics rate (delayed targets, PD)."""
        target = self.delay.step(self._target)
        tau = self.pd.torque(target, qpos, qvel, out=self._tau)
        tau *= self.domain.strength
        return tau

    def _classify_geoms(self):
        m = self.model
        self._foot_geoms = np.array([m.geom(f).id for f in FEET])
        trunk = {m.body(b).id for b in TRUNK_BODIES}
        self._world_geoms = set(np.flatnonzero(m.geom_bodyid == 0).tolist())
        # geom id -> 0 world, 1..4 a foot, 5 trunk, 6 another leg part
        kind = np.full(m.ngeom, 6, np.int64)
        kind[list(self._world_geoms)] = 0
        kind[[g for g in range(m.ngeom) if m.geom_bodyid[g] in trunk]] = 5
        kind[self._foot_geoms] = np.arange(1, 5)
        self._geom_kind = kind

    def _contacts(self):
        """Return feet in contact [N, 4], trunk on the ground [N], leg parts on it [N]."""
        n = self.num_envs
        feet = np.zeros((n, len(FEET)), bool)
        trunk = np.zeros(n, bool)
        legs = np.zeros(n, np.int64)
        for i in range(n):
            d = self._batch.contact_data(i)
            if not d.ncon:
                continue
            kinds = self._geom_kind[d.contact.geom[:d.ncon]].max(axis=1)
            feet[i, kinds[(kinds >= 1) & (kinds <= 4)] - 1] = True
            trunk[i] = bool(np.any(kinds == 5))
            legs[i] = int(np.count_nonzero(kinds == 6))
        return feet, trunk, legs

    def _base_frame(self):
        b = self._batch
        lin = quat_rotate_inverse(b.root_quat, b.root_linvel)
        grav = quat_rotate_inverse(b.root_quat, np.tile([0.0, 0.0, -1.0], (self.num_envs, 1)))
        return lin, b.root_angvel, grav

    # ------------------------------------------------------------------ episodes
    def _reset_env(self, i):
        model, data = self._batch.models[i], self._batch.env_data(i)
        self.domain.reset(i)
        mujoco.mj_resetData(model, data)
        q0 = np.clip(HOME + self._rng.uniform(-self.reset_noise, self.reset_noise, HOME.size),
                     self._joint_lo, self._joint_hi)
        data.qpos[self._qpos_adr] = q0
        x = y = 0.0
        ground = 0.0
        if self.domain.rough[i]:
            x, y = self._rng.uniform(-2.0, 2.0, 2)
            ground = height_at(model, x, y)
        yaw = self._rng.uniform(-np.pi, np.pi)
        data.qpos[0:3] = (x, y, self._stand_z + ground + 0.01)
        data.qpos[3:7] = (np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2))
        self._ground[i] = ground
        self._target[i] = q0
        self.delay.reset([i], q0)
        self._prev_action[i] = (q0 - HOME) / ACTION_SCALE
        self._prev_qvel[i] = 0.0
        self._air_time[i] = 0.0
        self._last_contact[i] = True
        self._err_sum[i] = 0.0
        self._err_steps[i] = 0
        self._drift_sum[i] = 0.0
        self._drift_steps[i] = 0
        self._episodes.reset(i)
        self._resample([i])
        mujoco.mj_forward(model, data)
        self._batch.read_env(i)

    def _resample(self, envs):
        """Draw new commands for ``envs`` (the curriculum's share of the full ranges)."""
        k = len(envs)
        if self._schedule is not None:
            self._segment[envs] = self._scheduled(self._episodes.steps[envs])
            self._cmd[envs] = self._schedule[1][self._segment[envs]]
            self._since_cmd[envs] = 0
            return
        lo, hi = self.command_ranges[:, 0], self.command_ranges[:, 1]
        mid = (lo + hi) / 2
        half = (hi - lo) / 2 * self.curriculum_level
        cmd = self._rng.uniform(mid - half, mid + half, (k, 3))
        if lo[0] != hi[0] or lo[1] != hi[1]:  # legged_gym: tiny planar commands are zero
            cmd[np.linalg.norm(cmd[:, :2], axis=1) < 0.2, :2] = 0.0
        cmd[self._rng.random(k) < self.stand_share] = 0.0
        self._cmd[envs] = cmd
        self._since_cmd[envs] = 0

    def _scheduled(self, steps):
        """Return the schedule's segment index at episode step(s) ``steps``."""
        ends, _ = self._schedule
        return np.searchsorted(ends, np.asarray(steps) % ends[-1], side='right')

    def _update_curriculum(self, tracking):
        self._track_ema = 0.99 * self._track_ema + 0.01 * float(tracking.mean())
        if (self.curriculum and self._batch_steps % self.resample_steps == 0
                and self._track_ema > CURRICULUM_SUCCESS):
            self.curriculum_level = min(1.0, self.curriculum_level + CURRICULUM_STEP)

    def _account(self, lin, ang, still):
        steady = self._since_cmd >= self.settle_steps
        err = np.abs(np.stack([lin[:, 0], lin[:, 1], ang[:, 2]], axis=1) - self._cmd)
        self._err_sum[steady] += err[steady]
        self._err_steps[steady] += 1
        zero = steady & still
        self._drift_sum[zero] += np.linalg.norm(lin[zero, :2], axis=1)
        self._drift_steps[zero] += 1

    def _finish_episode(self, i, terminated, length):
        steps = self._err_steps[i]
        errors = self._err_sum[i] / steps if steps else [None] * 3
        self.episode_stats.append({
            'command_vx': float(self._cmd[i, 0]), 'command_vy': float(self._cmd[i, 1]),
            'command_yaw': float(self._cmd[i, 2]),
            'vx_error': None if errors[0] is None else float(errors[0]),
            'vy_error': None if errors[1] is None else float(errors[1]),
            'yaw_error': None if errors[2] is None else float(errors[2]),
            'drift': (float(self._drift_sum[i] / self._drift_steps[i])
                      if self._drift_steps[i] else None),
            'survived': not terminated, 'length': max(length, 1),
            'curriculum_level': round(self.curriculum_level, 3),
            **self.domain.episode_params(i)})

    def _state(self, reward, terminated, truncated, ep_return, ep_length):
        b, rng, s = self._batch, self._noise_rng, self.obs_noise
        lin, ang, grav = self._base_frame()

        def noisy(x, key):
            return x + rng.uniform(-1.0, 1.0, x.shape) * (NOISE[key] * s) if s else x.copy()

        extras = np.concatenate([noisy(ang, 'imu_gyro'), noisy(grav, 'projected_gravity'),
                                 self._cmd,  # then the critic's: exact, no noise
                                 lin, (b.root_pos[:, 2] - self._ground)[:, None],
                                 self._last_contact], axis=1)
        return StepState(
            joint_position=noisy(b.qpos, 'joint_position'),
            joint_velocity=noisy(b.qvel, 'joint_velocity'),
            joint_effort=self._tau.copy(), extras=extras.astype(np.float32),
            reward=np.asarray(reward, dtype=np.float32),
            terminated=np.asarray(terminated, dtype=bool),
            truncated=np.asarray(truncated, dtype=bool),
            episode_return=np.asarray(ep_return, dtype=np.float32),
            episode_length=np.asarray(ep_length, dtype=np.int32),
            sim_time=self._batch_steps * self.control_dt)


def _check_schedule(schedule, control_dt):
    """Return (segment end steps, commands [S, 3]) of a command schedule, or None."""
    if schedule is None:
        return None
    rows = np.asarray(schedule, dtype=float) if len(schedule) else np.zeros((0, 4))
    if rows.ndim != 2 or rows.shape[1] != 4 or not len(rows):
        raise ValueError(f'command_schedule: expected [[seconds, v_x, v_y, yaw], ...], got '
                         f'{schedule!r}')
    if not np.all(np.isfinite(rows)) or np.any(rows[:, 0] <= 0):
        raise ValueError(f'command_schedule: durations must be > 0 and every value finite, '
                         f'got {schedule!r}')
    ends = np.cumsum(np.maximum(1, np.round(rows[:, 0] / control_dt))).astype(np.int64)
    return ends, rows[:, 1:].copy()


class Go2Forward(Go2Walk):
    """
    go2_forward: go2_walk's robot, observations and rewards, forward commands only.

    v_x 0.5-1.0 m/s, no sideways or turning commands, no stand-still share, flat ground
    (the rest of the world randomised as in go2_walk). The same observation and action
    spaces as go2_walk, so a policy trained here is a warm start for it (``train --task
    go2_walk --resume``); and a short run on it is the quick check that the recipe
    learns to walk forward.
    """

    TASK_NAME = 'go2_forward'

    def __init__(self, num_envs, seed=0, **options):
        """Build go2_walk with forward-only defaults (any option may still override)."""
        defaults = {'command_vx': (0.5, 1.0), 'command_vy': (0.0, 0.0),
                    'command_yaw': (0.0, 0.0), 'stand_share': 0.0, 'curriculum': False,
                    'terrain': False}
        super().__init__(num_envs, seed=seed, **{**defaults, **options})
