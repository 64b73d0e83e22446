# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Undistortion and ROI crop on hand-computed pixels."""

import numpy as np
import pytest
from unilab_perception.image_ops import crop, UndistortMap

K = np.array([[100.0, 0, 50], [0, 100.0, 40], [0, 0, 1]])


def test_crop_is_a_view_and_checks_bounds():
    img = np.arange(20).reshape(4, 5, 1)
    out = crop(img, 1, 2, 3, 2)
    np.testing.assert_array_equal(out[..., 0], [[11, 12, 13], [16, 17, 18]])
    assert out.base is not None
    with pytest.raises(ValueError, match='outside'):
        crop(img, 3, 0, 3, 1)


def test_zero_distortion_is_identity():
    img = np.random.default_rng(0).integers(0, 255, (80, 100, 3)).astype(np.uint8)
    out = UndistortMap((100, 80), K, [0, 0, 0, 0, 0])(img)
    np.testing.assert_allclose(out, img.astype(np.float32), atol=1e-4)


def test_radial_distortion_hand_computed_pixel():
    # Image value = column index, so a bilinear sample returns the source u itself.
    img = np.tile(np.arange(100, dtype=np.float32), (80, 1))[..., None]
    m = UndistortMap((100, 80), K, [0.1, 0, 0, 0, 0], roi=(70, 40, 20, 1))
    out = m(img)
    # Output pixel (u=80, v=40): x = 0.3, y = 0, r^2 = 0.09, x_d = 0.3 * 1.009 = 0.3027,
    # u_src = 100 * 0.3027 + 50 = 80.27.
    assert out.shape == (1, 20, 1)
    assert out[0, 10, 0] == pytest.approx(80.27, abs=1e-4)
    # Tangential term: p1 on y only, at (u=50, v=60): y = 0.2, y_d = 0.2 + p1 (0.04 + 0.08).
    img_v = np.tile(np.arange(80, dtype=np.float32)[:, None], (1, 100))[..., None]
    out_v = UndistortMap((100, 80), K, [0, 0, 0.5, 0, 0])(img_v)
    assert out_v[60, 50, 0] == pytest.approx(40 + 100 * (0.2 + 0.5 * 0.12), abs=1e-4)


def test_pixels_mapped_outside_are_zero():
    img = np.ones((80, 100, 1), np.float32)
    out = UndistortMap((100, 80), K, [2.0, 0, 0, 0, 0])(img)
    assert out[0, 0, 0] == 0.0 and out[40, 50, 0] == 1.0
