# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Factory augmentation: IMU-driven motion blur, jitter, noise; seeded; CPU and CUDA."""

import math

import pytest
import torch
from unilab_bridge.camera import blur_shift
from unilab_datafactory.augment import (AugmentConfig, Augmenter, image_shifts, line_kernel,
                                        motion_blur)

DEVICES = ['cpu', pytest.param('cuda', marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason='no CUDA device'))]


def _point(h=21, w=21):
    img = torch.zeros(1, 1, h, w)
    img[0, 0, h // 2, w // 2] = 1.0
    return img


def test_kernel_is_normalised_and_as_long_as_the_path():
    k = line_kernel(6.0, 0.0)
    assert k.shape == (7, 7) and float(k.sum()) == pytest.approx(1.0)
    cols = torch.nonzero(k.sum(dim=0) > 1e-6).flatten()
    assert cols.min().item() == 0 and cols.max().item() == 6  # 6 px: 7 taps
    assert torch.nonzero(k.sum(dim=1) > 1e-6).flatten().tolist() == [3]  # one row


@pytest.mark.parametrize('device', DEVICES)
def test_a_point_spreads_along_the_motion(device):
    out = motion_blur(_point().to(device), [(6.0, 0.0)])[0, 0].cpu()
    ys, xs = torch.nonzero(out > 1e-6, as_tuple=True)
    assert set(ys.tolist()) == {10} and (xs.min().item(), xs.max().item()) == (7, 13)
    # A diagonal path up and to the right: moments of the blurred point.
    dx, dy = 4.0, -4.0
    out = motion_blur(_point().to(device), [(dx, dy)])[0, 0].cpu().double()
    assert float(out.sum()) == pytest.approx(1.0, abs=1e-5)
    yy, xx = torch.meshgrid(torch.arange(21.0), torch.arange(21.0), indexing='ij')
    u = ((xx - 10) - (yy - 10)) / math.sqrt(2)  # along (1, -1)
    v = ((xx - 10) + (yy - 10)) / math.sqrt(2)  # across
    assert float((out * u).sum()) == pytest.approx(0.0, abs=1e-6)  # centred
    assert float((out * v).sum()) == pytest.approx(0.0, abs=1e-6)
    length = math.hypot(dx, dy)
    # A uniform path of length L has variance L^2 / 12 along it; splatting adds a little.
    assert float((out * u * u).sum()) == pytest.approx(length ** 2 / 12, rel=0.15)
    assert float((out * v * v).sum()) < 0.2


def test_shifts_follow_the_gyro_like_the_bridge_camera():
    gyro = torch.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 0.5]])
    shifts = image_shifts(gyro, 60.0, 96, 0.01)
    f = 48 / math.tan(math.radians(30))
    assert shifts[0] == pytest.approx((f * 2.0 * 0.01, 0.0))
    assert shifts[1] == pytest.approx(blur_shift([1.0, 0.0, 0.5], 60.0, 96, 0.01))


def test_no_rate_no_blur_and_seed_determinism():
    img = torch.rand(3, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    plain = AugmentConfig(brightness=0, contrast=0, saturation=0, noise_std=0)
    out, _ = Augmenter(plain)(img, torch.zeros(3, 3))
    assert torch.allclose(out, img, atol=1e-6)
    a, pa = Augmenter(seed=5)(img, torch.ones(3, 3))
    b, pb = Augmenter(seed=5)(img, torch.ones(3, 3))
    c, _ = Augmenter(seed=6)(img, torch.ones(3, 3))
    assert torch.equal(a, b) and pa == pb and not torch.equal(a, c)
    assert float(a.min()) >= 0 and float(a.max()) <= 1


def test_colour_gain_scales_each_channel_by_its_drawn_factor():
    img = torch.full((2, 3, 4, 4), 0.5)
    only_colour = AugmentConfig(exposure_s=0, brightness=0, contrast=0, saturation=0,
                                noise_std=0, color=0.2)
    out, params = Augmenter(only_colour, seed=3)(img)
    gains = torch.tensor(params['color'])
    assert gains.shape == (2, 3) and float((gains - 1).abs().max()) <= 0.2
    assert torch.allclose(out, (0.5 * gains).view(2, 3, 1, 1).expand(2, 3, 4, 4))
    assert not torch.allclose(gains[:, 0], gains[:, 1])  # per channel, not one factor
    # Off by default: no draws, so the other draws of a seed stay as they were.
    assert 'color' not in Augmenter(seed=3)(img)[1]


@pytest.mark.skipif(not torch.cuda.is_available(), reason='no CUDA device')
def test_cuda_matches_cpu():
    img = torch.rand(4, 3, 24, 32, generator=torch.Generator().manual_seed(2))
    gyro = torch.randn(4, 3, generator=torch.Generator().manual_seed(3))
    cpu, _ = Augmenter(device='cpu', seed=9)(img, gyro)
    gpu, _ = Augmenter(device='cuda', seed=9)(img, gyro)
    assert torch.allclose(cpu, gpu.cpu(), atol=1e-4)
