# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Robot-like sensors computed from MuJoCo, ROS-free: IMU readings and a spinning lidar.

The lidar follows a Velodyne VLP-16 by default (16 rings over -15..+15 degrees, 10 Hz) and
returns points in the sensor frame as a packed structured array with the field layout of
the ROS 2 velodyne driver's XYZIRT cloud (``PointCloud2Modifier::setPointCloud2Fields``
packs fields without padding): x, y, z, intensity float32, ring uint16, time float32.
"""

import mujoco
import numpy as np

#: x, y, z, intensity (float32), ring (uint16), time (float32, s since scan start), packed.
POINT_DTYPE = np.dtype({
    'names': ['x', 'y', 'z', 'intensity', 'ring', 'time'],
    'formats': ['<f4', '<f4', '<f4', '<f4', '<u2', '<f4'],
    'offsets': [0, 4, 8, 12, 16, 18],
    'itemsize': 22,
})

_SENSOR_FLAG = int(mujoco.mjtDisableBit.mjDSBL_SENSOR)


def set_sensors_enabled(models, enabled):
    """Switch MuJoCo's sensor computation on or off (off saves its cost while stepping)."""
    for model in {id(m): m for m in models}.values():
        if enabled:
            model.opt.disableflags &= ~_SENSOR_FLAG
        else:
            model.opt.disableflags |= _SENSOR_FLAG


class ImuSensor:
    """Gyro, accelerometer and (optional) orientation sensors on one site of a model."""

    def __init__(self, model, site='imu'):
        """Find the site's sensors; raise ValueError if it has no gyro and accelerometer."""
        site_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
        found = {}
        for s in range(model.nsensor):
            if model.sensor_objtype[s] == mujoco.mjtObj.mjOBJ_SITE and \
                    model.sensor_objid[s] == site_id:
                adr = int(model.sensor_adr[s])
                found[int(model.sensor_type[s])] = slice(adr, adr + int(model.sensor_dim[s]))
        t = mujoco.mjtSensor
        if site_id < 0 or int(t.mjSENS_GYRO) not in found or \
                int(t.mjSENS_ACCELEROMETER) not in found:
            raise ValueError(f'model has no gyro + accelerometer on site {site!r}')
        self._gyro = found[int(t.mjSENS_GYRO)]
        self._accel = found[int(t.mjSENS_ACCELEROMETER)]
        self._quat = found.get(int(t.mjSENS_FRAMEQUAT))

    def read(self, datas):
        """Return {'gyro' [N,3] rad/s, 'accel' [N,3] m/s^2, 'quat' [N,4] wxyz or None}."""
        return self.read_sensordata(np.stack([d.sensordata for d in datas]))

    def read_sensordata(self, sd):
        """Return ``read``'s dict from every env's sensordata [N, nsensordata]."""
        return {'gyro': sd[:, self._gyro], 'accel': sd[:, self._accel],
                'quat': None if self._quat is None else sd[:, self._quat]}


class Lidar:
    """
    A spinning multi-beam lidar on a site, simulated with ``mj_multiRay`` (no GL needed).

    Rays that hit nothing within ``max_range`` are left out (an unorganised cloud, as the
    velodyne driver publishes by default). Intensity is a reflectivity proxy: 255 times the
    hit geom's mean RGB times |cos| of the incidence angle.
    """

    def __init__(self, model, site='lidar', channels=16, horizontal_samples=360,
                 max_range=20.0, vertical_fov_deg=(-15.0, 15.0), rate_hz=10.0):
        """Precompute ray directions (sensor frame), ring numbers and firing times."""
        self.site = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
        if self.site < 0:
            raise ValueError(f'model has no lidar site {site!r}')
        self.body = int(model.site_bodyid[self.site])
        self.max_range = float(max_range)
        elev = np.deg2rad(np.linspace(vertical_fov_deg[0], vertical_fov_deg[1], channels))
        azim = np.linspace(0.0, 2 * np.pi, horizontal_samples, endpoint=False)
        az, el = np.meshgrid(azim, elev, indexing='xy')  # [channels, samples]
        self.dirs = np.stack([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)],
                             axis=-1).reshape(-1, 3)
        self.ring = np.repeat(np.arange(channels, dtype=np.uint16), horizontal_samples)
        self.time = np.tile(azim / (2 * np.pi) / rate_hz, channels).astype(np.float32)
        self.num_rays = len(self.dirs)
        self._dist = np.zeros(self.num_rays)
        self._geom = np.zeros(self.num_rays, dtype=np.int32)
        self._normal = np.zeros((self.num_rays, 3))
        self._rgb = model.geom_rgba[:, :3].mean(axis=1)

    def scan(self, model, data):
        """Cast every ray from the site's current pose; return the hits as POINT_DTYPE."""
        rot = data.site_xmat[self.site].reshape(3, 3)
        world_dirs = self.dirs @ rot.T
        mujoco.mj_multiRay(model, data, data.site_xpos[self.site], world_dirs.reshape(-1),
                           None, 1, self.body, self._geom, self._dist, self._normal.reshape(-1),
                           self.num_rays, self.max_range)
        hit = (self._dist >= 0) & (self._dist <= self.max_range)
        d = self._dist[hit]
        out = np.empty(int(hit.sum()), dtype=POINT_DTYPE)
        xyz = self.dirs[hit] * d[:, None]
        out['x'], out['y'], out['z'] = xyz[:, 0], xyz[:, 1], xyz[:, 2]
        cos = np.abs(np.einsum('ij,ij->i', self._normal[hit], world_dirs[hit]))
        out['intensity'] = 255.0 * self._rgb[self._geom[hit]] * cos
        out['ring'] = self.ring[hit]
        out['time'] = self.time[hit]
        return out
