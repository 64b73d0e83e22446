# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Statistics of the pure disturbance terms match their parameters (fixed seeds)."""

import numpy as np
from unilab_bridge.disturbances import (
    DelayLine, EncoderNoise, KalibrImuNoise, PacketLoss, spawn_rngs)


def _rng(seed=0):
    return np.random.default_rng(seed)


def test_bias_random_walk_variance_grows_linearly():
    # Kalibr: Var(b[k]) = k * sigma_b^2 * dt.
    n, sigma_b, dt = 4000, 0.2, 0.01
    imu = KalibrImuNoise(n, 0.0, sigma_b, _rng(1))
    var = {}
    for k in range(1, 401):
        imu.step(dt)
        if k in (100, 400):
            var[k] = imu.bias.var(axis=0).mean()
    for k, v in var.items():
        expected = k * sigma_b ** 2 * dt
        assert abs(v / expected - 1.0) < 0.06, (k, v, expected)
    assert 3.6 < var[400] / var[100] < 4.4


def test_white_noise_density_scales_with_sample_rate():
    # Discrete std = sigma / sqrt(dt); no bias when the random walk is zero.
    n, sigma = 20000, 0.005
    imu = KalibrImuNoise(n, sigma, 0.0, _rng(2))
    for dt in (0.02, 0.005):
        out = imu.apply(np.zeros((n, 3)), dt)
        assert abs(out.std() / (sigma / np.sqrt(dt)) - 1.0) < 0.03
        assert abs(out.mean()) < 0.05 * sigma / np.sqrt(dt)


def test_imu_reset_zeroes_bias_of_given_envs_only():
    imu = KalibrImuNoise(4, 0.0, 1.0, _rng(3))
    imu.step(1.0)
    before = imu.bias.copy()
    imu.reset([1, 3])
    assert np.all(imu.bias[[1, 3]] == 0.0)
    np.testing.assert_array_equal(imu.bias[[0, 2]], before[[0, 2]])


def test_packet_loss_rate_and_hold():
    n, p, steps = 2000, 0.1, 50
    loss = PacketLoss(n, 1, p, _rng(4))
    drops = 0
    prev = None
    for t in range(steps):
        x = np.full((n, 1), float(t))
        out = loss.transmit(x)
        if t == 0:
            assert not loss.dropped.any(), 'the first packet after reset is always delivered'
        else:
            drops += loss.dropped.sum()
            # A lost packet leaves the receiver with the previous value, not the new one.
            np.testing.assert_array_equal(out[loss.dropped], prev[loss.dropped])
            np.testing.assert_array_equal(out[~loss.dropped, 0], t)
        prev = out
    rate = drops / (n * (steps - 1))
    assert abs(rate - p) < 0.005  # binomial std ~0.0015
    assert loss.count.sum() == drops


def test_delay_distribution_is_uniform_per_episode():
    n = 3000
    line = DelayLine(n, 1, [0, 2], _rng(5))
    line.reset(np.arange(n), np.full((n, 1), -1.0))
    counts = np.bincount(line.base, minlength=3) / n
    np.testing.assert_allclose(counts, [1 / 3] * 3, atol=0.03)
    for t in range(6):
        out = line.push(np.full((n, 1), float(t)))
        # Output is the input of t - k, or the reset fill before the history exists.
        expected = np.where(t - line.base >= 0, t - line.base, -1.0)
        np.testing.assert_array_equal(out[:, 0], expected)


def test_delay_jitter_rate_and_fifo_order():
    n, steps, p = 500, 200, 0.2
    line = DelayLine(n, 1, [1, 1], _rng(6), jitter_prob=p, jitter_steps=2)
    line.reset(np.arange(n), np.zeros((n, 1)))
    outs, delays = [], []
    for t in range(steps):
        outs.append(line.push(np.full((n, 1), float(t + 1)))[:, 0])
        delays.append(line.last_delay.copy())
    outs, delays = np.array(outs), np.array(delays)
    # In-order delivery: what a receiver sees never goes back in time.
    assert np.all(np.diff(outs, axis=0) >= 0)
    assert delays.min() >= 1 and delays.max() <= 3
    # Late packets are held back, so the delay exceeds the base at least at rate p.
    late = (delays[20:] > 1).mean()
    assert p - 0.02 < late < 0.6


def test_encoder_offset_constant_per_episode_and_noise_std():
    n, j = 4000, 3
    enc = EncoderNoise(n, j, 0.01, 0.5, 0.02, _rng(7))
    off = enc.offset.copy()
    assert np.all(np.abs(off) <= 0.02)
    assert abs(off.std() / (0.02 / np.sqrt(3)) - 1.0) < 0.05  # uniform(-a, a) std
    pos, vel = enc.apply(np.zeros((n, j)), np.zeros((n, j)))
    np.testing.assert_array_equal(enc.offset, off)
    assert abs((pos - off).std() / 0.01 - 1.0) < 0.05
    assert abs(vel.std() / 0.5 - 1.0) < 0.05
    enc.reset([0])
    assert not np.array_equal(enc.offset[0], off[0])
    np.testing.assert_array_equal(enc.offset[1:], off[1:])


def test_term_streams_are_independent_and_reproducible():
    a = spawn_rngs([0, 1], ['x', 'y'])
    b = spawn_rngs([0, 1], ['x', 'y'])
    c = spawn_rngs([0, 1], ['x', 'y', 'z'])
    assert a['x'].random() == b['x'].random()
    assert a['y'].random() != a['x'].random()
    # Adding a term does not change the existing terms' streams.
    assert spawn_rngs([0, 1], ['x'])['x'].random() == c['x'].random()
