# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Augmentation in torch on any device: IMU-driven motion blur, photometric jitter, noise.

Motion blur: during an exposure T a camera turning at rate omega (camera frame) moves the
image by f * omega * T pixels (``unilab_bridge.camera.blur_shift``, the same small-rotation
pinhole model the bridge's camera uses); the frame is the average along that path, i.e.
the convolution with a line kernel of that direction and length. The kernel is built by
splatting many sub-pixel points of the segment bilinearly (so a 2.5-pixel path is 2.5
pixels long, not rounded) and normalised to sum 1; all images of a batch are blurred in one
grouped convolution, each with its own kernel.

Random draws come from a CPU ``torch.Generator`` seeded once, then move to the device:
the CPU and CUDA paths draw the same factors and give the same images within float
tolerance; one seed gives one result.
"""

from __future__ import annotations

from dataclasses import dataclass
import math

import torch
import torch.nn.functional as F


@dataclass
class AugmentConfig:
    """What the augmenter does; each part is off at 0."""

    exposure_s: float = 0.01
    """Exposure time for the motion blur (s); 0 turns the blur off."""
    fovy_deg: float = 60.0
    """Vertical field of view of the camera (the arm6 front camera: 60)."""
    brightness: float = 0.2
    """Brightness factor drawn from 1 +- this."""
    contrast: float = 0.2
    """Contrast factor drawn from 1 +- this."""
    saturation: float = 0.2
    """Saturation factor drawn from 1 +- this."""
    noise_std: float = 0.02
    """Gaussian pixel noise (images in 0..1)."""
    color: float = 0.0
    """Per-channel gain drawn from 1 +- this (white balance); 0 draws nothing."""


def line_kernel(dx: float, dy: float, substeps: int = 32) -> torch.Tensor:
    """
    Return a [k, k] kernel averaging along a centred path of (dx, dy) pixels.

    k is odd and covers the path; under a pixel of motion the kernel is (nearly) a delta.
    """
    length = max(abs(dx), abs(dy))
    k = 2 * int(math.ceil(length / 2.0)) + 1
    c = k // 2
    n = max(2, int(math.ceil(length * substeps)))
    t = torch.linspace(-0.5, 0.5, n, dtype=torch.float64)
    xs, ys = c + t * dx, c + t * dy
    x0, y0 = xs.floor(), ys.floor()
    ker = torch.zeros(k + 1, k + 1, dtype=torch.float64)
    for ox in (0, 1):
        for oy in (0, 1):
            wx = (xs - x0) if ox else (1 - (xs - x0))
            wy = (ys - y0) if oy else (1 - (ys - y0))
            ker.index_put_(((y0 + oy).long(), (x0 + ox).long()), wx * wy, accumulate=True)
    ker = ker[:k, :k]
    return (ker / ker.sum()).float()


def motion_blur(images: torch.Tensor, shifts) -> torch.Tensor:
    """Blur images [B, C, H, W] each along its (dx, dy) pixel path (edges replicated)."""
    b, ch, h, w = images.shape
    kernels = [line_kernel(float(dx), float(dy)) for dx, dy in shifts]
    k = max(ker.shape[0] for ker in kernels)
    if k == 1:
        return images
    weight = torch.zeros(b, 1, k, k)
    for i, ker in enumerate(kernels):
        off = (k - ker.shape[0]) // 2
        weight[i, 0, off:off + ker.shape[0], off:off + ker.shape[0]] = ker
    weight = weight.repeat_interleave(ch, dim=0).to(images.device, images.dtype)
    x = F.pad(images.reshape(1, b * ch, h, w), (k // 2,) * 4, mode='replicate')
    return F.conv2d(x, weight, groups=b * ch).reshape(b, ch, h, w)


def image_shifts(gyro_cam, fovy_deg: float, height: int, exposure_s: float) -> list:
    """Return the (dx, dy) blur path per image from camera-frame rates [B, 3] (rad/s)."""
    from unilab_bridge.camera import blur_shift
    return [blur_shift(g, fovy_deg, height, exposure_s) for g in torch.as_tensor(gyro_cam)
            .double().tolist()]


class Augmenter:
    """Apply blur, jitter and noise to batches on one device, reproducibly from a seed."""

    def __init__(self, cfg: AugmentConfig | None = None, device='cpu', seed: int = 0):
        """Resolve ``device`` (``auto``: CUDA when present) and seed the draws."""
        from unilab_perception.encoders import resolve_device
        self.cfg = cfg or AugmentConfig()
        self.device = resolve_device(device)
        self.gen = torch.Generator().manual_seed(seed)

    def _uniform(self, n: int, spread: float) -> torch.Tensor:
        return (1 + spread * (2 * torch.rand(n, generator=self.gen) - 1)).to(self.device)

    def __call__(self, images: torch.Tensor, gyro_cam=None) -> tuple[torch.Tensor, dict]:
        """
        Return (augmented images [B, 3, H, W] in 0..1, the drawn parameters).

        ``gyro_cam`` [B, 3]: the camera's rates in its own frame (rad/s) at the frame's
        stamp; without it there is no blur.
        """
        c = self.cfg
        x = images.to(self.device, torch.float32)
        b, _, h, _ = x.shape
        params = {}
        if gyro_cam is not None and c.exposure_s > 0:
            shifts = image_shifts(gyro_cam, c.fovy_deg, h, c.exposure_s)
            x = motion_blur(x, shifts)
            params['blur_px'] = [list(s) for s in shifts]
        bright = self._uniform(b, c.brightness).view(b, 1, 1, 1)
        contrast = self._uniform(b, c.contrast).view(b, 1, 1, 1)
        sat = self._uniform(b, c.saturation).view(b, 1, 1, 1)
        x = x * bright
        if c.color > 0:
            gain = self._uniform(b * 3, c.color).view(b, 3, 1, 1)
            x = x * gain
            params['color'] = gain.view(b, 3).tolist()
        mean = x.mean(dim=(1, 2, 3), keepdim=True)
        x = (x - mean) * contrast + mean
        gray = (x * torch.tensor([0.299, 0.587, 0.114], device=x.device).view(1, 3, 1, 1)) \
            .sum(dim=1, keepdim=True)  # ITU-R BT.601 luma
        x = (x - gray) * sat + gray
        if c.noise_std > 0:
            x = x + c.noise_std * torch.randn(x.shape, generator=self.gen).to(self.device)
        params.update(brightness=bright.flatten().tolist(), contrast=contrast.flatten().tolist(),
                      saturation=sat.flatten().tolist())
        return x.clamp(0, 1), params
