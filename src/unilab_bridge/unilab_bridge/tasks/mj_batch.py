# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Step many MjData copies of one model, spread over a few threads."""

from concurrent.futures import ThreadPoolExecutor
import os

import mujoco
import numpy as np

# Below this many envs the thread hand-off costs more than it saves.
_MIN_ENVS_FOR_THREADS = 16
_BAD_QACC = int(mujoco.mjtWarning.mjWARN_BADQACC)


class MjBatch:
    """
    A list of MjData sharing one MjModel, stepped with a given control decimation.

    After every step (and every read_env) the batched arrays ``qpos``, ``qvel`` (of the
    given joint addresses), ``actuator_force``, ``site_pos`` (of the given sites) and
    ``unstable`` hold the state of all envs. mj_step releases the GIL, so a small thread pool
    gives a real speed-up; each env only touches its own MjData and its own rows, so
    results do not depend on the thread count.
    """

    def __init__(self, model, num_envs, decimation, qpos_adr, qvel_adr, site_ids=(),
                 num_threads=None):
        """Create ``num_envs`` MjData and, if worthwhile, a thread pool."""
        self.model = model
        self.decimation = int(decimation)
        self.data = [mujoco.MjData(model) for _ in range(num_envs)]
        self._qpos_adr = np.asarray(qpos_adr, dtype=int)
        self._qvel_adr = np.asarray(qvel_adr, dtype=int)
        self._site_ids = np.asarray(site_ids, dtype=int)
        self.qpos = np.zeros((num_envs, len(self._qpos_adr)))
        self.qvel = np.zeros((num_envs, len(self._qvel_adr)))
        self.actuator_force = np.zeros((num_envs, model.nu))
        self.site_pos = np.zeros((num_envs, len(self._site_ids), 3))
        self.unstable = np.zeros(num_envs, dtype=bool)
        if num_threads is None:
            num_threads = min(os.cpu_count() or 1, 4)
        if num_envs < _MIN_ENVS_FOR_THREADS:
            num_threads = 1
        self._chunks = [range(lo, num_envs, num_threads) for lo in range(num_threads)]
        self._pool = ThreadPoolExecutor(num_threads) if num_threads > 1 else None

    def step(self, ctrl):
        """Set ctrl [N, nu], advance every env by ``decimation`` physics steps, read state."""
        if self._pool is None:
            self._step_chunk(range(len(self.data)), ctrl)
        else:
            # list() re-raises any exception from the workers.
            list(self._pool.map(self._step_chunk, self._chunks, [ctrl] * len(self._chunks)))

    def read_env(self, i):
        """Refresh the batched arrays' row ``i`` from its MjData (e.g. after a reset)."""
        data = self.data[i]
        # mj_step leaves poses one substep behind qpos; recomputing them makes site
        # positions match the reported joint positions.
        mujoco.mj_kinematics(self.model, data)
        self.qpos[i] = data.qpos[self._qpos_adr]
        self.qvel[i] = data.qvel[self._qvel_adr]
        self.actuator_force[i] = data.actuator_force
        self.site_pos[i] = data.site_xpos[self._site_ids]
        # MuJoCo resets an env whose accelerations blow up and counts this warning, so it
        # is the reliable divergence signal (it is cleared by mj_resetData).
        self.unstable[i] = data.warning[_BAD_QACC].number > 0

    def _step_chunk(self, indices, ctrl):
        model, nstep = self.model, self.decimation
        for i in indices:
            data = self.data[i]
            data.ctrl[:] = ctrl[i]
            mujoco.mj_step(model, data, nstep=nstep)
            self.read_env(i)

    def close(self):
        """Shut the thread pool down."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
