# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""IMU and lidar readings from MuJoCo, and the camera motion-blur kernel (no ROS)."""

import numpy as np
import pytest
from unilab_bridge.camera import blur_shift, motion_blur
from unilab_bridge.sensors import Lidar, POINT_DTYPE
from unilab_bridge.tasks import make_task
from unilab_bridge.tasks.quad_walk import HOME


@pytest.fixture
def quad():
    task = make_task('quad_walk', 2, seed=0)
    yield task
    task.close()


def test_sensors_cost_nothing_until_enabled(quad):
    quad.reset(seed=0)
    quad.step(np.tile(HOME, (2, 1)))
    assert np.all(quad.imu_reading()['accel'] == 0.0)  # mjDSBL_SENSOR set by default
    quad.enable_sensors(True)
    quad.step(np.tile(HOME, (2, 1)))
    assert np.abs(quad.imu_reading()['accel']).max() > 1.0


def test_imu_at_rest_reads_gravity_and_no_rotation(quad):
    quad.enable_sensors(True)
    quad.reset(seed=0)
    for _ in range(60):  # settle on the ground (1.2 s)
        quad.step(np.tile(HOME, (2, 1)))
    r = quad.imu_reading()
    # An accelerometer measures specific force: +g along the up axis at rest.
    np.testing.assert_allclose(r['accel'], [[0, 0, 9.81]] * 2, atol=0.3)
    np.testing.assert_allclose(r['gyro'], 0.0, atol=0.05)
    np.testing.assert_allclose(np.linalg.norm(r['quat'], axis=1), 1.0, atol=1e-6)


def test_lidar_layout_and_geometry(quad):
    quad.reset(seed=0)
    lidar = Lidar(quad.model, channels=16, horizontal_samples=180, max_range=20.0)
    pts = lidar.scan(quad.sim.models[0], quad.sim.data[0])
    assert pts.dtype == POINT_DTYPE and POINT_DTYPE.itemsize == 22
    assert 0 < len(pts) <= lidar.num_rays
    rng = np.sqrt(pts['x'] ** 2 + pts['y'] ** 2 + pts['z'] ** 2)
    assert rng.max() <= 20.0
    assert set(np.unique(pts['ring'])) <= set(range(16))
    assert pts['time'].min() >= 0.0 and pts['time'].max() < 0.1  # one 10 Hz sweep
    # The walls stand 2 m to each side: sideways rays on level rings hit them there.
    side = (np.abs(pts['x']) < 0.05) & (pts['z'] > -0.05)
    np.testing.assert_allclose(np.abs(pts['y'][side]), 1.95, atol=0.03)
    # Downward rings hit the floor: z = -(sensor height) in the (level) sensor frame.
    # (Rays that hit the robot's own legs or the walls are left out of this check.)
    floor = (pts['z'] < -0.2) & (np.hypot(pts['x'], pts['y']) > 0.5) & (np.abs(pts['y']) < 1.8)
    assert floor.sum() > 100
    height = quad.sim.data[0].site_xpos[lidar.site][2]
    np.testing.assert_allclose(pts['z'][floor], -height, atol=0.02)
    assert np.all(pts['intensity'] >= 0) and np.all(pts['intensity'] <= 255)


def test_motion_blur_spreads_a_point_along_the_motion():
    img = np.zeros((9, 21, 3), dtype=np.uint8)
    img[4, 10] = 240
    out = motion_blur(img, 4.0, 0.0)
    row = out[4, :, 0]
    assert np.count_nonzero(row) == 5 and np.all(out[[3, 5]] == 0)  # horizontal only
    assert row.sum() == pytest.approx(240, abs=5)  # energy kept (rounding)
    assert motion_blur(img, 0.2, 0.1) is img  # below one pixel: unchanged


def test_blur_shift_is_focal_length_times_angle():
    dx, dy = blur_shift([0.0, 1.0, 0.0], 90.0, 100, 0.01)
    assert dx == pytest.approx(50 * 0.01) and dy == 0.0
