# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Image undistortion and region-of-interest crop (numpy, no ROS, no OpenCV).

The distortion model is sensor_msgs/CameraInfo's ``plumb_bob`` (Brown-Conrady,
as OpenCV's ``undistort``): for an output pixel, normalised coordinates
``x = (u - cx') / fx'`` (new camera matrix), then

    r^2 = x^2 + y^2
    x_d = x (1 + k1 r^2 + k2 r^4 + k3 r^6) + 2 p1 x y + p2 (r^2 + 2 x^2)
    y_d = y (1 + k1 r^2 + k2 r^4 + k3 r^6) + p1 (r^2 + 2 y^2) + 2 p2 x y

and the source pixel is ``(fx x_d + cx, fy y_d + cy)``, sampled bilinearly.
The map is computed once per camera (and ROI) and applied per frame as one
vectorised gather.
"""

from __future__ import annotations

import numpy as np


def crop(image: np.ndarray, x: int, y: int, width: int, height: int) -> np.ndarray:
    """Return the ROI ``image[y:y+height, x:x+width]`` (a view); raise if it leaves the image."""
    h, w = image.shape[:2]
    if x < 0 or y < 0 or width <= 0 or height <= 0 or x + width > w or y + height > h:
        raise ValueError(f'ROI x={x} y={y} {width}x{height} outside a {w}x{h} image')
    return image[y:y + height, x:x + width]


class UndistortMap:
    """Precomputed plumb-bob undistortion map, optionally restricted to an output ROI."""

    def __init__(self, size: tuple[int, int], k: np.ndarray, d, new_k: np.ndarray | None = None,
                 roi: tuple[int, int, int, int] | None = None):
        width, height = size
        k = np.asarray(k, np.float64).reshape(3, 3)
        new_k = k if new_k is None else np.asarray(new_k, np.float64).reshape(3, 3)
        d = np.zeros(5) if d is None else np.r_[np.asarray(d, np.float64), np.zeros(5)][:5]
        k1, k2, p1, p2, k3 = d
        x0, y0, w, h = roi if roi is not None else (0, 0, width, height)
        if x0 < 0 or y0 < 0 or x0 + w > width or y0 + h > height or w <= 0 or h <= 0:
            raise ValueError(f'ROI {roi} outside a {width}x{height} image')
        u, v = np.meshgrid(np.arange(x0, x0 + w, dtype=np.float64),
                           np.arange(y0, y0 + h, dtype=np.float64))
        x = (u - new_k[0, 2]) / new_k[0, 0]
        y = (v - new_k[1, 2]) / new_k[1, 1]
        r2 = x * x + y * y
        radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
        xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
        yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
        self.map_x = k[0, 0] * xd + k[0, 2]
        self.map_y = k[1, 1] * yd + k[1, 2]
        self.source_size = (width, height)
        # Bilinear weights and the four neighbour indices, computed once.
        fx = np.floor(self.map_x)
        fy = np.floor(self.map_y)
        self.valid = (fx >= 0) & (fy >= 0) & (fx <= width - 1) & (fy <= height - 1)
        ix = np.clip(fx, 0, width - 1).astype(np.intp)
        iy = np.clip(fy, 0, height - 1).astype(np.intp)
        ix1 = np.minimum(ix + 1, width - 1)
        iy1 = np.minimum(iy + 1, height - 1)
        ax = (self.map_x - fx)[..., None]
        ay = (self.map_y - fy)[..., None]
        self._idx = (iy * width + ix, iy * width + ix1, iy1 * width + ix, iy1 * width + ix1)
        self._w = ((1 - ax) * (1 - ay), ax * (1 - ay), (1 - ax) * ay, ax * ay)

    def __call__(self, image: np.ndarray) -> np.ndarray:
        """Return the undistorted (and cropped) image, float32 [h, w, C]; outside pixels are 0."""
        width, height = self.source_size
        if image.shape[0] != height or image.shape[1] != width:
            raise ValueError(f'image is {image.shape[1]}x{image.shape[0]}, map built for '
                             f'{width}x{height}')
        flat = image.reshape(height * width, -1).astype(np.float32)
        out = sum(w * flat[i] for i, w in zip(self._idx, self._w))
        out[~self.valid] = 0.0
        return out.astype(np.float32)
