# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
DisturbedTask: a BatchedTask wrapper that makes a simulated robot behave like a real one.

Command path (policy -> robot): bus delay with jitter, then packet loss (a lost command is
not applied; the drive holds the last one), then the servo with per-episode gains.
State path (robot -> policy): encoder noise and offset, then observation delay, then packet
loss (the receiver holds the last state). Rewards and done flags are simulator truth (they
are training signals, not sensor packets) and are never delayed or dropped. The first
observation of an episode is always delivered, undelayed.
"""

import numpy as np

from unilab_bridge.disturbances import (
    DelayLine, EncoderNoise, KalibrImuNoise, PacketLoss, spawn_rngs)
from unilab_bridge.tasks.base import BatchedTask, StepState
from unilab_bridge.tasks.mj_randomize import MjDomain

_TERMS = ('imu_gyro', 'imu_accel', 'encoder', 'action_delay', 'action_loss',
          'observation_delay', 'observation_loss', 'gains', 'dynamics')
# Mixed into the seed so disturbance streams differ from the task's own reset stream.
_SEED_SALT = 0xD157


class DisturbedTask(BatchedTask):
    """Wrap ``task`` with the disturbance terms enabled in ``cfg`` (a DisturbancesSection)."""

    def __init__(self, task, cfg, seed=0):
        """Build the enabled terms; terms the task cannot support are listed in ``notes``."""
        for attr in ('name', 'num_envs', 'joint_names', 'action_dim', 'extras_dim',
                     'uses_joint_state', 'command_interface', 'control_dt',
                     'max_episode_steps', 'joint_limits', 'action_low', 'action_high',
                     'action_mode', 'action_scale', 'action_offset', 'action_clip'):
            setattr(self, attr, getattr(task, attr))
        self.inner = task
        self.cfg = cfg
        self.notes = []
        self.episode_log = []  # one dict per finished episode; drained by the caller
        self._seed = int(seed)
        self._build(self._seed)

    # ------------------------------------------------------------------ set-up
    def _on(self, block):
        return self.cfg.enabled and getattr(self.cfg, block).enabled

    def _build(self, seed):
        cfg, n, j = self.cfg, self.num_envs, len(self.joint_names)
        rng = spawn_rngs([seed, _SEED_SALT], _TERMS)
        self._obs_dim = 3 * j + self.extras_dim
        self.gyro = self.accel = None
        if self._on('imu'):
            if getattr(self.inner, 'has_imu', False):
                c = cfg.imu
                self.gyro = KalibrImuNoise(n, c.gyro_noise_density, c.gyro_random_walk,
                                           rng['imu_gyro'])
                self.accel = KalibrImuNoise(n, c.accel_noise_density, c.accel_random_walk,
                                            rng['imu_accel'])
            else:
                self.notes.append(f'{self.name}: no IMU in the model, IMU noise unused')
        self.encoder = None
        if self._on('encoder'):
            c = cfg.encoder
            self.encoder = EncoderNoise(n, j, c.position_noise, c.velocity_noise,
                                        c.position_offset, rng['encoder'])
            if not self.uses_joint_state:
                self.notes.append(f'{self.name}: policy observes gymnasium obs, encoder noise '
                                  'only affects /joint_states')
        self.action_delay = self.action_loss = None
        self.observation_delay = self.observation_loss = None
        if self._on('actuator'):
            c = cfg.actuator
            self.action_delay = DelayLine(n, self.action_dim, c.delay_steps,
                                          rng['action_delay'], c.jitter_prob, c.jitter_steps)
        if self._on('network'):
            c = cfg.network
            self.action_loss = PacketLoss(n, self.action_dim, c.action_drop_prob,
                                          rng['action_loss'])
            self.observation_delay = DelayLine(n, self._obs_dim, c.observation_delay_steps,
                                               rng['observation_delay'])
            self.observation_loss = PacketLoss(n, self._obs_dim, c.observation_drop_prob,
                                               rng['observation_loss'])
        self.domain = None
        sim = getattr(self.inner, 'sim', None)
        want_gains, want_dyn = self._on('actuator'), self._on('dynamics')
        if (want_gains or want_dyn) and sim is None:
            self.notes.append(f'{self.name}: not a UniLab MuJoCo task, gain scaling and '
                              'dynamics randomisation unused')
        elif want_gains or want_dyn:
            self.domain = MjDomain(
                sim, self.inner.actuated_joint_ids, self.control_dt, rng['gains'],
                rng['dynamics'], cfg.actuator if want_gains else None,
                cfg.dynamics if want_dyn else None)
            if want_gains and not self.domain.has_servos:
                self.notes.append(f'{self.name}: no position servos, gain scaling unused')
        self._ep_steps = np.zeros(n, dtype=np.int64)
        self._episodes = np.zeros(n, dtype=np.int64)

    @property
    def active_terms(self):
        """Return the names of the terms in effect."""
        names = {'imu': self.gyro, 'encoder': self.encoder, 'action_delay': self.action_delay,
                 'action_loss': self.action_loss, 'observation_delay': self.observation_delay,
                 'observation_loss': self.observation_loss, 'model': self.domain}
        return [k for k, v in names.items() if v is not None]

    # ------------------------------------------------------------------ BatchedTask API
    @property
    def has_imu(self):
        """Return whether the wrapped task has an IMU."""
        return getattr(self.inner, 'has_imu', False)

    @property
    def sim(self):
        """Return the wrapped task's MjBatch (or None)."""
        return getattr(self.inner, 'sim', None)

    def reset(self, seed=None):
        """Reset the task; a seed also re-seeds every disturbance stream."""
        if seed is not None:
            self._seed = int(seed)
            self.notes = []
            self._build(self._seed)
        raw = self.inner.reset(seed=seed)
        everyone = np.arange(self.num_envs)
        self._ep_steps[:] = 0
        self._new_episode(everyone, raw)
        return self._observe(raw, everyone)

    def step(self, command):
        """Apply the command through bus and servo disturbances, step, corrupt the state."""
        cmd = self.check_command(command)
        if self.action_delay is not None:
            cmd = self.action_delay.push(cmd)
        if self.action_loss is not None:
            cmd = self.action_loss.transmit(cmd)
        if self.domain is not None:
            self.domain.push(self._ep_steps)
        raw = self.inner.step(cmd)
        self._ep_steps += 1
        for noise in (self.gyro, self.accel):
            if noise is not None:
                noise.step(self.control_dt)
        done = np.flatnonzero(raw.terminated | raw.truncated)
        if done.size:
            self._log_episodes(done, raw)
            self._ep_steps[done] = 0
            self._new_episode(done, raw)
        return self._observe(raw, done)

    def close(self):
        """Close the wrapped task."""
        self.inner.close()

    def imu_reading(self):
        """Return the wrapped task's IMU reading with Kalibr noise on gyro and accelerometer."""
        reading = dict(self.inner.imu_reading())
        if self.gyro is not None:
            reading['gyro'] = self.gyro.apply(reading['gyro'], self.control_dt)
            reading['accel'] = self.accel.apply(reading['accel'], self.control_dt)
        return reading

    def pop_episode_log(self):
        """Return and clear the per-episode records gathered since the last call."""
        out, self.episode_log = self.episode_log, []
        return out

    def current_params(self, env):
        """Return the disturbance parameters of ``env``'s running episode."""
        out = {}
        if self.encoder is not None:
            out.update(self.encoder.episode_params(env))
        if self.action_delay is not None:
            out['action_delay_steps'] = self.action_delay.episode_params(env)
        if self.observation_delay is not None:
            out['observation_delay_steps'] = self.observation_delay.episode_params(env)
        if self.action_loss is not None:
            out['actions_dropped'] = int(self.action_loss.count[env])
            out['observations_dropped'] = int(self.observation_loss.count[env])
        if self.domain is not None:
            out.update(self.domain.episode_params(env))
        return out

    # ------------------------------------------------------------------ internals
    def _new_episode(self, envs, raw):
        if self.encoder is not None:
            self.encoder.reset(envs)
        for noise in (self.gyro, self.accel):
            if noise is not None:
                noise.reset(envs)
        if self.domain is not None:
            self.domain.reset(envs)
        if self.action_delay is not None:
            self.action_delay.reset(envs, self._held_command(envs))
        if self.action_loss is not None:
            self.action_loss.reset(envs)
            self.observation_loss.reset(envs)

    def _held_command(self, envs):
        # The command the drives hold at an episode start (the task sets it at reset).
        sim = self.sim
        if sim is None:
            return np.zeros((len(envs), self.action_dim))
        return sim.state_field('ctrl')[np.asarray(envs, dtype=int)].copy()

    def _log_episodes(self, envs, raw):
        for i in envs:
            rec = {'env': int(i), 'episode': int(self._episodes[i]),
                   'return': round(float(raw.episode_return[i]), 4),
                   'length': int(raw.episode_length[i]),
                   'terminated': bool(raw.terminated[i])}
            rec.update(self.current_params(i))
            self.episode_log.append(rec)
            self._episodes[i] += 1

    def _observe(self, raw, fresh):
        """Corrupt the observed state; ``fresh`` envs just started an episode."""
        pos, vel = raw.joint_position, raw.joint_velocity
        if self.encoder is not None:
            pos, vel = self.encoder.apply(pos, vel)
        if self.observation_delay is None:
            effort, extras = raw.joint_effort, raw.extras
        else:
            j = len(self.joint_names)
            vec = np.concatenate([pos, vel, raw.joint_effort, raw.extras], axis=1)
            if len(fresh):
                self.observation_delay.reset(fresh, vec[fresh])
            vec = self.observation_loss.transmit(self.observation_delay.push(vec))
            pos, vel, effort = vec[:, :j], vec[:, j:2 * j], vec[:, 2 * j:3 * j]
            extras = vec[:, 3 * j:].astype(np.float32)
        return StepState(
            joint_position=pos, joint_velocity=vel, joint_effort=effort, extras=extras,
            reward=raw.reward, terminated=raw.terminated, truncated=raw.truncated,
            episode_return=raw.episode_return, episode_length=raw.episode_length,
            sim_time=raw.sim_time)
