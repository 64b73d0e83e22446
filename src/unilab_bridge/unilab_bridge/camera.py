# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Camera images by offscreen EGL rendering, with IMU-driven motion blur.

Rendering needs an EGL driver (Mesa's software llvmpipe works, slowly: ~100-200 ms per
small frame on 2 cores); where there is none, ``open_camera`` says why and the bridge turns
the camera off. ``motion_blur`` is pure numpy and has no rendering dependency.
"""

import math

import mujoco
import numpy as np

DEFAULT_SIZE = (48, 64)  # (height, width): software rendering is slow


def blur_shift(angular_rate_cam, fovy_deg, height, exposure_s):
    """
    Return the image-plane motion (dx, dy) in pixels during the exposure.

    For a small rotation of a pinhole camera (MuJoCo camera frame: x right, y up, looking
    along -z) the image centre moves by f * omega * T, with focal length
    f = (H / 2) / tan(fovy / 2) in pixels: a rate about y pans the image horizontally, about
    x vertically. Roll (about z) blurs around the centre and is ignored here.
    """
    f = 0.5 * height / math.tan(math.radians(fovy_deg) / 2.0)
    wx, wy = float(angular_rate_cam[0]), float(angular_rate_cam[1])
    # Image rows grow downwards: a positive pitch rate (about +x) moves content down.
    return f * wy * exposure_s, f * wx * exposure_s


def motion_blur(image, dx, dy):
    """
    Average the image over a straight motion path of (dx, dy) pixels (a line kernel).

    The kernel is the normalised box along the path, sampled at integer pixel steps; edges
    are clamped. One shifted copy per tap, vectorised over pixels.
    """
    taps = int(round(max(abs(dx), abs(dy)))) + 1  # under half a pixel: no blur
    if taps <= 1:
        return image
    img = image.astype(np.float32)
    pad = taps
    padded = np.pad(img, ((pad, pad), (pad, pad), (0, 0)), mode='edge')
    h, w = image.shape[:2]
    acc = np.zeros_like(img)
    for k in range(taps):
        s = k / (taps - 1) - 0.5  # centred kernel
        ox, oy = int(round(s * dx)), int(round(s * dy))
        acc += padded[pad + oy:pad + oy + h, pad + ox:pad + ox + w]
    return (acc / taps).round().astype(image.dtype)


class EglCamera:
    """Render a named model camera (or a free view) per env into rgb8 images."""

    def __init__(self, sim, camera='front', size=DEFAULT_SIZE, imu_site='imu',
                 exposure_s=0.0, track_body='', shadows=True):
        """
        Create the EGL context and MuJoCo render context (raises where EGL is missing).

        ``camera`` names a model camera; without one (or with ``track_body``, a body
        name) a free camera looks at the model, following ``track_body`` if given.
        ``shadows=False`` skips the shadow-map pass, most of a frame's cost on a software
        renderer (llvmpipe).
        """
        from mujoco.egl import GLContext  # imported here: it loads libEGL
        self.sim = sim
        model = sim.model
        self.height, self.width = size
        self._ctx = GLContext(self.width, self.height)
        self._ctx.make_current()
        self._con = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
        mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, self._con)
        self._scn = mujoco.MjvScene(model, 1000)
        self._scn.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = bool(shadows)
        self._opt = mujoco.MjvOption()
        self._cam = mujoco.MjvCamera()
        self.cam_id = -1 if track_body else mujoco.mj_name2id(
            model, mujoco.mjtObj.mjOBJ_CAMERA, camera)
        if track_body:
            self.look_at(None, 1.5, track_body=track_body)
        elif self.cam_id >= 0:
            self._cam.type = mujoco.mjtCamera.mjCAMERA_FIXED
            self._cam.fixedcamid = self.cam_id
            self.fovy = float(model.cam_fovy[self.cam_id])
        else:
            mujoco.mjv_defaultFreeCamera(model, self._cam)
            self.fovy = float(model.vis.global_.fovy)
        self.imu_site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, imu_site)
        self.exposure_s = float(exposure_s)
        self._rect = mujoco.MjrRect(0, 0, self.width, self.height)
        self._rgb = np.zeros((self.height, self.width, 3), dtype=np.uint8)

    def look_at(self, point, distance, azimuth=135.0, elevation=-20.0, track_body=''):
        """Use a free camera aimed at ``point`` (or following ``track_body``) from afar."""
        model = self.sim.model
        mujoco.mjv_defaultFreeCamera(model, self._cam)
        if track_body:
            self._cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING
            self._cam.trackbodyid = model.body(track_body).id
        else:
            self._cam.lookat[:] = point
        self._cam.distance, self._cam.azimuth, self._cam.elevation = distance, azimuth, \
            elevation
        self.cam_id = -1
        self.fovy = float(model.vis.global_.fovy)

    def render(self, i, gyro=None):
        """Return env ``i``'s image [H, W, 3] uint8, blurred by ``gyro`` (IMU frame, rad/s)."""
        self._ctx.make_current()
        model, data = self.sim.models[i], self.sim.data[i]
        mujoco.mjv_updateScene(model, data, self._opt, None, self._cam,
                               mujoco.mjtCatBit.mjCAT_ALL, self._scn)
        mujoco.mjr_render(self._rect, self._scn, self._con)
        mujoco.mjr_readPixels(self._rgb, None, self._rect, self._con)
        img = np.flipud(self._rgb).copy()  # OpenGL rows start at the bottom
        if gyro is not None and self.exposure_s > 0 and self.cam_id >= 0 and \
                self.imu_site >= 0:
            # IMU frame -> world -> camera frame.
            r_imu = data.site_xmat[self.imu_site].reshape(3, 3)
            r_cam = data.cam_xmat[self.cam_id].reshape(3, 3)
            w_cam = r_cam.T @ (r_imu @ np.asarray(gyro))
            img = motion_blur(img, *blur_shift(w_cam, self.fovy, self.height, self.exposure_s))
        return img

    def image_msg(self, stamp, i, gyro=None):
        """Return env ``i``'s image as a sensor_msgs/Image (frame ``env<i>/camera``)."""
        from unilab_bridge.sensor_msgs_out import make_image
        return make_image(stamp, f'env{i}/camera', self.render(i, gyro))

    def close(self):
        """Free the render and EGL contexts."""
        self._con.free()
        self._ctx.free()


def open_camera(sim, exposure_s=0.0):
    """Return (EglCamera, 'EGL') or (None, reason) where rendering is unavailable."""
    if sim is None:
        return None, 'not a UniLab MuJoCo task'
    try:
        return EglCamera(sim, exposure_s=exposure_s), 'EGL'
    except Exception as exc:  # any driver/library failure means "no rendering here"
        return None, f'{type(exc).__name__}: {exc}'
