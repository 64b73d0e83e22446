# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
quad_walk: a small 8-joint quadruped tracks forward and yaw velocity commands on flat ground.

The recipe follows legged_gym (docs/actions.md, docs/quad_walk.md): joint position
targets around the standing pose (``HOME + 0.25 * action``), commands resampled per
episode, exponential tracking rewards on the body-frame forward velocity and yaw
rate, penalties on vertical motion, roll/pitch rates, tilt, action rate and torque,
all scaled by the control period; falls end the episode.
"""

import collections
import pathlib

import mujoco
import numpy as np

from unilab_bridge.sensors import ImuSensor, set_sensors_enabled
from unilab_bridge.tasks.base import EpisodeCounter, StepState
from unilab_bridge.tasks.joint_limits import actuated_joints, joint_limits_from_model
from unilab_bridge.tasks.mj_batch import MjBatch
from unilab_bridge.tasks.mj_task import MjTask
from unilab_bridge.tasks.model_cache import load_model

ASSET = pathlib.Path(__file__).resolve().parents[1] / 'assets' / 'quad8.xml'

MAX_JOINT_VELOCITY = 12.0  # rad/s, hobby-quadruped class actuators
HOME = np.array([0.5, -1.0] * 4)  # hip, knee per leg (fl, fr, hl, hr)
EXTRAS_DIM = 12  # base lin vel (3, body), ang vel (3, body), gravity (3, body), cmd (2), h (1)

# legged_gym-style terms (each multiplied by the control dt in step()).
REWARD_SCALES = {
    'tracking_lin_vel': 1.0, 'tracking_yaw': 0.5, 'lin_vel_z': -2.0, 'ang_vel_xy': -0.05,
    'orientation': -1.0, 'action_rate': -0.01, 'torques': -1e-4,
}
#: legged_gym's tracking_sigma: the tracking rewards are exp(-error^2 / sigma).
TRACKING_SIGMA = 0.25
#: Finished episodes' tracking figures kept (the oldest are dropped).
EPISODE_STATS_KEPT = 4096
#: legged_gym's action_scale: targets are HOME + ACTION_SCALE * action (rad).
ACTION_SCALE = 0.25
MIN_HEIGHT = 0.14  # trunk centre below this (m) ends the episode: fallen
MIN_UPRIGHT = 0.5  # cos of the trunk tilt below this (60 deg) ends the episode


def quat_rotate_inverse(q, v):
    """Rotate world vectors v [N,3] into the frames of unit quaternions q [N,4] (w, x, y, z)."""
    w, u = q[:, :1], q[:, 1:]
    # v' = v (2w^2 - 1) - 2w (u x v) + 2u (u . v), the transpose of the rotation by q.
    return (v * (2.0 * w ** 2 - 1.0) - 2.0 * w * np.cross(u, v)
            + 2.0 * u * np.sum(u * v, axis=1, keepdims=True))


class QuadWalk(MjTask):
    """Batched walking task; commands are joint position targets in rad."""

    #: The task's name, its model and standing pose (``Quad12Walk`` changes the three).
    TASK_NAME = 'quad_walk'
    ASSET = ASSET
    HOME = HOME

    def __init__(self, num_envs, seed=0, max_episode_steps=500, decimation=4,
                 command_velocity=(0.0, 0.8), command_yaw=(-0.5, 0.5), reset_noise=0.1,
                 reward_scales=None, num_threads=None, auto_reset=True):
        """Load the quadruped and allocate ``num_envs`` simulations (call reset() next)."""
        self.name = self.TASK_NAME
        self.num_envs = int(num_envs)
        if self.num_envs < 1:
            raise ValueError(f'num_envs must be >= 1, got {num_envs}')
        self.model = load_model(self.ASSET)
        act_ids, jnt_ids = actuated_joints(self.model)
        self.actuated_joint_ids = list(jnt_ids)
        self.joint_names = [self.model.joint(j).name for j in jnt_ids]
        self._qpos_adr = self.model.jnt_qposadr[jnt_ids]
        self.imu = ImuSensor(self.model)
        set_sensors_enabled([self.model], False)
        self._batch = MjBatch(self.model, self.num_envs, decimation, self._qpos_adr,
                              self.model.jnt_dofadr[jnt_ids], (), num_threads,
                              root_joint=self.model.joint('root').id)
        self.action_dim = self.model.nu
        self.extras_dim = EXTRAS_DIM
        self.uses_joint_state = True
        self.command_interface = 'position'
        self.control_dt = float(self.model.opt.timestep * decimation)
        self.max_episode_steps = int(max_episode_steps)
        self.joint_limits = joint_limits_from_model(
            self.model, act_ids, jnt_ids, [MAX_JOINT_VELOCITY] * len(jnt_ids))
        self.action_low = self.model.actuator_ctrlrange[:, 0].copy()
        self.action_high = self.model.actuator_ctrlrange[:, 1].copy()
        self.action_mode = 'offset'
        self.action_scale = (ACTION_SCALE,) * self.action_dim
        self.action_offset = tuple(float(x) for x in self.HOME)
        self.command_velocity = tuple(float(v) for v in command_velocity)
        self.command_yaw = tuple(float(v) for v in command_yaw)
        self.reset_noise = float(reset_noise)
        self.reward_scales = dict(REWARD_SCALES if reward_scales is None else reward_scales)
        self.reward_terms = {}
        self._rng = np.random.default_rng(seed)
        # Yaw commands from their own stream, so the reset poses (and the forward commands)
        # of a seed are the ones they were before yaw commands existed.
        self._yaw_rng = np.random.default_rng([seed, 1])
        n = self.num_envs
        self._cmd = np.zeros((n, 2))
        self._prev_cmd = np.zeros((n, self.action_dim))
        # Per-episode tracking figures: |v_x - command| and |yaw rate - command| summed
        # over the episode's steps; finished episodes are appended to ``episode_stats``.
        self._err_sum = np.zeros((n, 2))
        self.episode_stats = collections.deque(maxlen=EPISODE_STATS_KEPT)
        # auto_reset=False: a robot, not an episode (the robot double): no episode ever ends,
        # no env is reset (nothing teleports), done flags stay False.
        self.auto_reset = bool(auto_reset)
        self._episodes = EpisodeCounter(
            n, self.max_episode_steps if self.auto_reset else None)
        self._batch_steps = 0
        self._was_reset = False

    def _reseed(self, seed):
        self._rng = np.random.default_rng(seed)
        self._yaw_rng = np.random.default_rng([seed, 1])

    def step(self, command):
        """Apply joint position targets [N, joints] for one control step, then auto-reset."""
        if not self._was_reset:
            raise RuntimeError(f'{self.name}: call reset() before step()')
        cmd = self.check_command(command)
        b = self._batch
        b.step(cmd)
        self._batch_steps += 1
        lin, ang, grav = self._base_frame()
        terms = {
            # The command is (v_x, yaw rate); lateral velocity is tracked towards 0.
            'tracking_lin_vel': np.exp(-((self._cmd[:, 0] - lin[:, 0]) ** 2 + lin[:, 1] ** 2)
                                       / TRACKING_SIGMA),
            'tracking_yaw': np.exp(-(self._cmd[:, 1] - ang[:, 2]) ** 2 / TRACKING_SIGMA),
            'lin_vel_z': lin[:, 2] ** 2,
            'ang_vel_xy': np.sum(ang[:, :2] ** 2, axis=1),
            'orientation': np.sum(grav[:, :2] ** 2, axis=1),
            'action_rate': np.sum((cmd - self._prev_cmd) ** 2, axis=1),
            'torques': np.sum(b.actuator_force ** 2, axis=1),
        }
        # legged_gym multiplies every scale by dt, so returns do not depend on the rate.
        self.reward_terms = {k: self.reward_scales[k] * terms[k] * self.control_dt
                             for k in self.reward_scales}
        reward = sum(self.reward_terms.values()).astype(np.float32)
        self._prev_cmd[:] = cmd
        fallen = (b.root_pos[:, 2] < MIN_HEIGHT) | (-grav[:, 2] < MIN_UPRIGHT)
        terminated = fallen | b.unstable
        if not self.auto_reset:
            terminated = np.zeros_like(terminated)
        reward[b.unstable] = 0.0
        truncated, done, ep_return, ep_length = self._episodes.end_step(reward, terminated)
        self._err_sum[:, 0] += np.abs(lin[:, 0] - self._cmd[:, 0])
        self._err_sum[:, 1] += np.abs(ang[:, 2] - self._cmd[:, 1])
        for i in np.flatnonzero(done):
            steps = max(int(ep_length[i]), 1)
            self.episode_stats.append({
                'command_vx': float(self._cmd[i, 0]), 'command_yaw': float(self._cmd[i, 1]),
                'vx_error': float(self._err_sum[i, 0] / steps),
                'yaw_error': float(self._err_sum[i, 1] / steps),
                'survived': not bool(terminated[i]), 'length': steps})
            self._reset_env(i)
        return self._state(reward, terminated, truncated, ep_return, ep_length)

    def _base_frame(self):
        b = self._batch
        lin = quat_rotate_inverse(b.root_quat, b.root_linvel)
        grav = quat_rotate_inverse(b.root_quat, np.tile([0.0, 0.0, -1.0], (self.num_envs, 1)))
        return lin, b.root_angvel, grav

    def _reset_env(self, i):
        model, data = self._batch.models[i], self._batch.env_data(i)
        mujoco.mj_resetData(model, data)
        home = self.HOME
        q0 = np.clip(home + self._rng.uniform(-self.reset_noise, self.reset_noise, home.size),
                     self.action_low, self.action_high)
        data.qpos[self._qpos_adr] = q0
        # Lower the trunk to the crouch height so the feet start on the ground:
        data.qpos[2] = 0.337  # feet (0.316 below the hips + 0.02 radius) just touch
        data.ctrl[:] = q0
        self._prev_cmd[i] = q0
        self._cmd[i] = (self._rng.uniform(*self.command_velocity),
                        self._yaw_rng.uniform(*self.command_yaw))
        self._err_sum[i] = 0.0
        mujoco.mj_forward(model, data)
        self._episodes.reset(i)
        self._batch.read_env(i)

    def _state(self, reward, terminated, truncated, ep_return, ep_length):
        b = self._batch
        lin, ang, grav = self._base_frame()
        extras = np.concatenate([lin, ang, grav, self._cmd, b.root_pos[:, 2:3]], axis=1)
        return StepState(
            joint_position=b.qpos.copy(), joint_velocity=b.qvel.copy(),
            joint_effort=b.actuator_force.copy(), extras=extras.astype(np.float32),
            reward=np.asarray(reward, dtype=np.float32),
            terminated=np.asarray(terminated, dtype=bool),
            truncated=np.asarray(truncated, dtype=bool),
            episode_return=np.asarray(ep_return, dtype=np.float32),
            episode_length=np.asarray(ep_length, dtype=np.int32),
            sim_time=self._batch_steps * self.control_dt)
