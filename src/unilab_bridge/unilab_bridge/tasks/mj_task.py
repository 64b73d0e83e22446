# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
MjTask: what every UniLab MuJoCo task shares on top of ``BatchedTask``.

A task keeps its envs in an ``MjBatch`` (``self._batch``), its IMU in ``self.imu``
(``unilab_bridge.sensors.ImuSensor``), resets one env in ``_reset_env(i)`` and builds its
StepState in ``_state(...)``; this class gives it ``sim``, the IMU switch and reading,
``reset`` of the whole batch and ``close``. ``_reseed(seed)`` restarts the task's random
streams (a task with more than ``self._rng`` extends it).
"""

import numpy as np

from unilab_bridge.sensors import set_sensors_enabled
from unilab_bridge.tasks.base import BatchedTask


class MjTask(BatchedTask):
    """A BatchedTask over an MjBatch, reset env by env (see the module doc)."""

    has_imu = True

    @property
    def sim(self):
        """Return the MjBatch holding the envs' models and data."""
        return self._batch

    def enable_sensors(self, enabled=True):
        """Compute MuJoCo sensors (the robot's IMU) while stepping; off by default."""
        set_sensors_enabled(self._batch.models, enabled)

    def imu_reading(self):
        """Return the IMU's gyro, accelerometer and orientation for every env."""
        return self.imu.read_sensordata(self._batch.sensordata)

    def reset(self, seed=None):
        """Reset every env (``_reset_env``); a seed restarts the task's random streams."""
        if seed is not None:
            self._reseed(seed)
        for i in range(self.num_envs):
            self._reset_env(i)
        self._batch_steps = 0
        self._was_reset = True
        z = np.zeros(self.num_envs)
        return self._state(z, z.astype(bool), z.astype(bool), np.full(self.num_envs, np.nan), z)

    def _reseed(self, seed):
        self._rng = np.random.default_rng(seed)

    def close(self):
        """Stop the stepping threads."""
        self._batch.close()
