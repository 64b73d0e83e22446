# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Sim-to-real disturbance terms, pure numpy: each term is seeded, batched over envs, and resettable.

Every term owns its own ``numpy.random.Generator`` (spawned from one seed), so switching one
term on or off never changes the random stream of another. Per-episode parameters are
re-drawn by ``reset(envs)``; ``episode_params(env)`` returns them for the episode log.
"""

from __future__ import annotations

import numpy as np


def spawn_rngs(seed: int, names) -> dict:
    """Return one independent Generator per name, all derived from ``seed``."""
    seqs = np.random.SeedSequence(seed).spawn(len(names))
    return {n: np.random.default_rng(s) for n, s in zip(names, seqs)}


def _as_envs(envs, num_envs):
    return np.arange(num_envs) if envs is None else np.asarray(envs, dtype=int)


class KalibrImuNoise:
    """
    One IMU quantity (gyro or accelerometer, 3 axes) corrupted as in Kalibr's noise model.

    Continuous model (Kalibr wiki, "IMU Noise Model"): ``y = x + b + n``, with white noise
    ``n`` of density ``sigma_n`` and a bias driven by white noise of density ``sigma_b``.
    Sampled at interval ``dt`` the discrete equivalents are
    ``n_d ~ N(0, sigma_n^2 / dt)`` and ``b[k] = b[k-1] + N(0, sigma_b^2 * dt)``,
    so Var(b[k]) = k * sigma_b^2 * dt grows linearly with time.
    """

    def __init__(self, num_envs, noise_density, random_walk, rng):
        """Start every env with zero bias."""
        self.noise_density = float(noise_density)
        self.random_walk = float(random_walk)
        self.rng = rng
        self.bias = np.zeros((num_envs, 3))

    def reset(self, envs=None):
        """Zero the bias of ``envs`` (a new episode starts with a freshly calibrated IMU)."""
        self.bias[_as_envs(envs, len(self.bias))] = 0.0

    def step(self, dt):
        """Advance the bias random walk by one sample interval ``dt``."""
        self.bias += self.random_walk * np.sqrt(dt) * self.rng.standard_normal(self.bias.shape)

    def apply(self, clean, dt):
        """Return ``clean`` [N, 3] plus bias and discrete white noise for interval ``dt``."""
        sigma_d = self.noise_density / np.sqrt(dt)
        return clean + self.bias + sigma_d * self.rng.standard_normal(self.bias.shape)


class EncoderNoise:
    """Joint encoders: Gaussian noise on position and velocity plus a per-episode offset."""

    def __init__(self, num_envs, num_joints, position_noise, velocity_noise, position_offset,
                 rng):
        """Draw the first episode's offsets."""
        self.position_noise = float(position_noise)
        self.velocity_noise = float(velocity_noise)
        self.position_offset = float(position_offset)
        self.rng = rng
        self.offset = np.zeros((num_envs, num_joints))
        self.reset()

    def reset(self, envs=None):
        """Draw a new constant offset, uniform in +-position_offset, for ``envs``."""
        envs = _as_envs(envs, len(self.offset))
        self.offset[envs] = self.rng.uniform(
            -self.position_offset, self.position_offset, (len(envs), self.offset.shape[1]))

    def apply(self, position, velocity):
        """Return noisy (position, velocity) as an encoder would report them."""
        pos = position + self.offset + self.position_noise * self.rng.standard_normal(
            position.shape)
        vel = velocity + self.velocity_noise * self.rng.standard_normal(velocity.shape)
        return pos, vel

    def episode_params(self, env):
        """Return this env's per-episode parameters for the log."""
        return {'encoder_offset': self.offset[env].round(6).tolist()}


class DelayLine:
    """
    Per-env FIFO delay of a vector stream by ``k`` steps, with jitter.

    Each episode draws a base delay ``k`` uniformly from ``delay_steps = [lo, hi]``; each step a
    packet is, with probability ``jitter_prob``, late by 1..``jitter_steps`` more (bus
    queueing). A bus delivers in order, so the output never goes back to an older sample than
    the one delivered last (a late packet delays the following ones, it is not overtaken).
    """

    def __init__(self, num_envs, dim, delay_steps, rng, jitter_prob=0.0, jitter_steps=0):
        """Allocate the ring buffer (filled at reset)."""
        self.lo, self.hi = int(delay_steps[0]), int(delay_steps[1])
        self.jitter_prob = float(jitter_prob)
        self.jitter_steps = int(jitter_steps) if jitter_prob > 0 else 0
        self.rng = rng
        self.length = self.hi + self.jitter_steps + 1
        self.buffer = np.zeros((self.length, num_envs, dim))
        self.t = 0  # index of the next sample to push
        self.base = np.zeros(num_envs, dtype=int)
        self.last_index = np.full(num_envs, -1)
        self.last_delay = np.zeros(num_envs, dtype=int)  # delay of the last output (stats)
        self._rows = np.arange(num_envs)

    def reset(self, envs, value):
        """Fill the history of ``envs`` with ``value`` [len(envs), dim]; draw new base delays."""
        envs = np.asarray(envs, dtype=int)
        self.buffer[:, envs] = value
        self.base[envs] = self.rng.integers(self.lo, self.hi + 1, len(envs))
        # Everything before the reset reads as ``value``; start the FIFO order afresh.
        self.last_index[envs] = self.t - self.length

    def push(self, x):
        """Append sample ``x`` [N, dim] and return what each env receives this step."""
        n = len(self.base)
        self.buffer[self.t % self.length] = x
        delay = self.base.copy()
        if self.jitter_steps:
            late = self.rng.random(n) < self.jitter_prob
            delay += late * self.rng.integers(1, self.jitter_steps + 1, n)
        index = np.maximum(self.t - delay, self.last_index)
        self.last_index = index
        self.last_delay = self.t - index
        self.t += 1
        return self.buffer[index % self.length, self._rows]

    def episode_params(self, env):
        """Return this env's base delay for the log."""
        return int(self.base[env])


class PacketLoss:
    """Independent Bernoulli loss of one packet per env per step; the receiver holds the last."""

    def __init__(self, num_envs, dim, drop_prob, rng):
        """Start with nothing received (the first packet after reset is always delivered)."""
        self.drop_prob = float(drop_prob)
        self.rng = rng
        self.held = np.zeros((num_envs, dim))
        self.dropped = np.zeros(num_envs, dtype=bool)  # last step's losses
        self.count = np.zeros(num_envs, dtype=np.int64)  # losses this episode
        self._fresh = np.ones(num_envs, dtype=bool)

    def reset(self, envs):
        """Start a new episode for ``envs``: its next packet is delivered, counts cleared."""
        self._fresh[envs] = True
        self.count[envs] = 0

    def transmit(self, x):
        """Return what arrives: ``x`` rows, or the held row where the packet was lost."""
        drop = (self.rng.random(len(self.held)) < self.drop_prob) & ~self._fresh
        self._fresh[:] = False
        self.dropped = drop
        self.count += drop
        self.held[~drop] = x[~drop]
        return self.held.copy()


def uniform_scales(rng, count, shape, scale_range):
    """Draw ``count`` x ``shape`` multiplicative scales uniform in ``scale_range``."""
    lo, hi = float(scale_range[0]), float(scale_range[1])
    return rng.uniform(lo, hi, (count,) + tuple(shape))
