# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Expose N gymnasium MuJoCo envs (e.g. Hopper-v5) as one BatchedTask."""

import gymnasium
import numpy as np

from unilab_bridge.tasks.base import BatchedTask, EpisodeCounter, StepState
from unilab_bridge.tasks.joint_limits import (
    actuated_joints, is_position_actuator, joint_limits_from_model)


def is_gym_mujoco_id(name):
    """Return True if ``name`` is a registered gymnasium env backed by MuJoCo."""
    spec = gymnasium.registry.get(name)
    return spec is not None and 'mujoco' in str(spec.entry_point)


def gym_mujoco_ids():
    """Return the registered gymnasium MuJoCo env ids, newest version of each first."""
    return sorted((k for k in gymnasium.registry if is_gym_mujoco_id(k)), reverse=True)


class GymBatchedTask(BatchedTask):
    """
    Steps ``num_envs`` gymnasium envs in turn; the whole gym observation goes in extras.

    Env i is seeded with ``seed + i`` on the first reset and keeps its own RNG afterwards,
    so the batch is reproducible. Options are passed to ``gymnasium.make``.
    """

    def __init__(self, name, num_envs, seed=0, **options):
        """Create the gymnasium envs (call reset() next)."""
        if not is_gym_mujoco_id(name):
            raise ValueError(f'{name!r} is not a registered gymnasium MuJoCo env id')
        self.name = name
        self.num_envs = int(num_envs)
        if self.num_envs < 1:
            raise ValueError(f'num_envs must be >= 1, got {num_envs}')
        options.setdefault('disable_env_checker', True)
        self.envs = [gymnasium.make(name, **options) for _ in range(self.num_envs)]
        env = self.envs[0]
        model = env.unwrapped.model
        act_ids, jnt_ids = actuated_joints(model)
        if len(act_ids) != model.nu:
            raise ValueError(f'{name}: only joint-driving actuators are supported')
        self.joint_names = [model.joint(j).name for j in jnt_ids]
        self._qpos_adr = model.jnt_qposadr[jnt_ids]
        self._qvel_adr = model.jnt_dofadr[jnt_ids]
        self.action_dim = int(env.action_space.shape[0])
        self.extras_dim = int(np.prod(env.observation_space.shape))
        self.uses_joint_state = False
        position = all(is_position_actuator(model, a) for a in act_ids)
        self.command_interface = 'position' if position else 'effort'
        self.control_dt = float(env.unwrapped.dt)
        self.max_episode_steps = int(env.spec.max_episode_steps or 1000)
        self.joint_limits = joint_limits_from_model(model, act_ids, jnt_ids)
        self.action_low = np.asarray(env.action_space.low, dtype=np.float64)
        self.action_high = np.asarray(env.action_space.high, dtype=np.float64)
        self.reward_terms = {}  # gym only reports the total reward

        n, j = self.num_envs, len(jnt_ids)
        self._seed = seed
        self._obs = np.zeros((n, self.extras_dim), dtype=np.float32)
        self._qpos = np.zeros((n, j))
        self._qvel = np.zeros((n, j))
        self._force = np.zeros((n, j))
        self._episodes = EpisodeCounter(n, self.max_episode_steps)
        self._batch_steps = 0
        self._was_reset = False

    def reset(self, seed=None):
        """Reset all envs; env i gets ``seed + i`` (the constructor seed on the first call)."""
        if seed is None and not self._was_reset:
            seed = self._seed
        for i in range(self.num_envs):
            self._reset_env(i, None if seed is None else seed + i)
        self._batch_steps = 0
        self._was_reset = True
        zeros = np.zeros(self.num_envs)
        return self._state(zeros, zeros.astype(bool), zeros.astype(bool),
                           np.full(self.num_envs, np.nan), zeros)

    def step(self, command):
        """Apply actuator commands [N, action_dim] to every env, then auto-reset."""
        if not self._was_reset:
            raise RuntimeError(f'{self.name}: call reset() before step()')
        cmd = self.check_command(command)
        n = self.num_envs
        reward = np.zeros(n)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        for i, env in enumerate(self.envs):
            obs, reward[i], terminated[i], truncated[i], _ = env.step(cmd[i])
            self._obs[i] = np.ravel(obs)
            self._read_env(i)
        self._batch_steps += 1
        truncated, done, ep_return, ep_length = self._episodes.end_step(
            reward, terminated, truncated)
        for i in np.flatnonzero(done):
            self._reset_env(i, None)
        return self._state(reward, terminated, truncated, ep_return, ep_length)

    def close(self):
        """Close all gymnasium envs."""
        for env in self.envs:
            env.close()

    def _reset_env(self, i, seed):
        obs, _ = self.envs[i].reset(seed=seed)
        self._obs[i] = np.ravel(obs)
        self._episodes.reset(i)
        self._read_env(i)

    def _read_env(self, i):
        data = self.envs[i].unwrapped.data
        self._qpos[i] = data.qpos[self._qpos_adr]
        self._qvel[i] = data.qvel[self._qvel_adr]
        self._force[i] = data.actuator_force

    def _state(self, reward, terminated, truncated, ep_return, ep_length):
        return StepState(
            joint_position=self._qpos.copy(),
            joint_velocity=self._qvel.copy(),
            joint_effort=self._force.copy(),
            extras=self._obs.copy(),
            reward=np.asarray(reward, dtype=np.float32),
            terminated=terminated,
            truncated=truncated,
            episode_return=np.asarray(ep_return, dtype=np.float32),
            episode_length=np.asarray(ep_length, dtype=np.int32),
            sim_time=self._batch_steps * self.control_dt,
        )
