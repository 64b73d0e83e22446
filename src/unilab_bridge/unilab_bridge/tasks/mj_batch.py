# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Step many MjData copies of one model, spread over a few threads."""

from concurrent.futures import ThreadPoolExecutor
import copy
import os

import mujoco
import numpy as np

# Below this many envs the thread hand-off costs more than it saves.
_MIN_ENVS_FOR_THREADS = 16
_BAD_QACC = int(mujoco.mjtWarning.mjWARN_BADQACC)
# Everything mj_step integrates from (qpos, qvel, act, warm start, ctrl, applied forces,
# mocap poses, ...); the rest of MjData is recomputed by mj_forward (MuJoCo docs, "State").
_STATE = mujoco.mjtState.mjSTATE_INTEGRATION


class MjBatch:
    """
    A list of MjData sharing one MjModel, stepped with a given control decimation.

    After every step (and every read_env) the batched arrays ``qpos``, ``qvel`` (of the
    given joint addresses), ``actuator_force``, ``site_pos`` (of the given sites) and
    ``unstable`` hold the state of all envs. mj_step releases the GIL, so a small thread pool
    gives a real speed-up; each env only touches its own MjData and its own rows, so
    results do not depend on the thread count.

    All envs share ``model`` until ``private_models()`` gives each env its own copy (needed
    when dynamics or gains are randomised per env). With ``root_joint`` (a free joint id) set,
    ``root_pos``, ``root_quat`` (w, x, y, z), ``root_linvel`` (world frame) and
    ``root_angvel`` (body frame) are read as well.

    The per-env MjData are created lazily: constructing one costs ~0.5 ms in MuJoCo's Python
    bindings whatever the model (64 envs: ~35 ms, most of the bridge's model-to-first-
    observation time), and the first observation needs none of them. Until
    ``materialize()`` (called by ``step``, by ``data`` and by the bridge right after its first
    publish), resets run in one scratch MjData (``env_data``) and ``read_env`` keeps each
    env's integration state; materialising restores it with ``mj_setState`` + ``mj_forward``,
    which gives bit-identical trajectories (tested against eager creation).
    """

    def __init__(self, model, num_envs, decimation, qpos_adr, qvel_adr, site_ids=(),
                 num_threads=None, root_joint=None):
        """Create ``num_envs`` MjData and, if worthwhile, a thread pool."""
        self.model = model
        self.models = [model] * num_envs
        self.num_envs = int(num_envs)
        self.decimation = int(decimation)
        self._data = [None] * self.num_envs
        self._scratch = mujoco.MjData(model)
        self._staged = -1  # env whose reset is being built in the scratch data
        self._saved = np.zeros((self.num_envs, mujoco.mj_stateSize(model, _STATE)))
        self._has_saved = np.zeros(self.num_envs, dtype=bool)
        self._root = None
        if root_joint is not None:
            self._root = (int(model.jnt_qposadr[root_joint]), int(model.jnt_dofadr[root_joint]))
        self.root_pos = np.zeros((num_envs, 3))
        self.root_quat = np.zeros((num_envs, 4))
        self.root_linvel = np.zeros((num_envs, 3))
        self.root_angvel = np.zeros((num_envs, 3))
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

    @property
    def has_root(self) -> bool:
        """Return whether the envs have a floating base (``root_*`` arrays are read)."""
        return self._root is not None

    def private_models(self):
        """Give every env its own MjModel copy (idempotent); return the list."""
        if len(self.models) and self.models[0] is self.model:
            self.models = [copy.deepcopy(self.model) for _ in range(self.num_envs)]
        return self.models

    @property
    def data(self):
        """Return the per-env MjData list (creating any not made yet)."""
        self.materialize()
        return self._data

    def env_data(self, i):
        """Return the MjData to reset env ``i`` in; finish the reset with ``read_env(i)``."""
        if self._data[i] is not None:
            return self._data[i]
        self._staged = i
        return self._scratch

    def materialize(self):
        """Create every env's MjData that does not exist yet, in its current state."""
        for i in range(self.num_envs):
            if self._data[i] is None:
                model, data = self.models[i], mujoco.MjData(self.models[i])
                if self._has_saved[i]:
                    mujoco.mj_setState(model, data, self._saved[i], _STATE)
                    mujoco.mj_forward(model, data)
                self._data[i] = data
        self._staged = -1

    def step(self, ctrl):
        """Set ctrl [N, nu], advance every env by ``decimation`` physics steps, read state."""
        self.materialize()
        if self._pool is None:
            self._step_chunk(range(len(self.data)), ctrl)
        else:
            # list() re-raises any exception from the workers.
            list(self._pool.map(self._step_chunk, self._chunks, [ctrl] * len(self._chunks)))

    def step_motor(self, motor):
        """
        Advance every env by ``decimation`` physics steps, ctrl recomputed at each one.

        ``motor(qpos, qvel)`` returns ctrl [N, nu] from the joint positions and velocities
        [N, J] of the current physics step (a motor driver's PD at the physics rate,
        ``unilab_core.actuator``); it runs on the calling thread, vectorised over the envs,
        between the threads' physics steps.
        """
        self.materialize()
        for _ in range(self.decimation):
            ctrl = motor(self.qpos, self.qvel)
            if self._pool is None:
                self._substep_chunk(range(self.num_envs), ctrl)
            else:
                list(self._pool.map(self._substep_chunk, self._chunks,
                                    [ctrl] * len(self._chunks)))
        if self._pool is None:
            self._read_chunk(range(self.num_envs))
        else:
            list(self._pool.map(self._read_chunk, self._chunks))

    def _substep_chunk(self, indices, ctrl):
        models, data, qa, va = self.models, self._data, self._qpos_adr, self._qvel_adr
        for i in indices:
            d = data[i]
            d.ctrl[:] = ctrl[i]
            mujoco.mj_step(models[i], d)
            self.qpos[i] = d.qpos[qa]
            self.qvel[i] = d.qvel[va]

    def _read_chunk(self, indices):
        for i in indices:
            self.read_env(i)

    def read_env(self, i):
        """Refresh the batched arrays' row ``i`` from its MjData (e.g. after a reset)."""
        data = self._data[i]
        if data is None:
            if self._staged != i:  # never reset through env_data: a fresh MjData
                self.materialize()
                data = self._data[i]
            else:
                data = self._scratch
                mujoco.mj_getState(self.models[i], data, self._saved[i], _STATE)
                self._has_saved[i] = True
        # mj_step leaves poses one substep behind qpos; recomputing them makes site
        # positions match the reported joint positions.
        mujoco.mj_kinematics(self.models[i], data)
        self.qpos[i] = data.qpos[self._qpos_adr]
        self.qvel[i] = data.qvel[self._qvel_adr]
        self.actuator_force[i] = data.actuator_force
        self.site_pos[i] = data.site_xpos[self._site_ids]
        # MuJoCo resets an env whose accelerations blow up and counts this warning, so it
        # is the reliable divergence signal (it is cleared by mj_resetData).
        self.unstable[i] = data.warning[_BAD_QACC].number > 0
        if self._root is not None:
            qa, da = self._root
            self.root_pos[i] = data.qpos[qa:qa + 3]
            self.root_quat[i] = data.qpos[qa + 3:qa + 7]
            # A free joint's qvel is the linear velocity in the world frame followed by the
            # angular velocity in the body frame (MuJoCo docs, "Floating objects").
            self.root_linvel[i] = data.qvel[da:da + 3]
            self.root_angvel[i] = data.qvel[da + 3:da + 6]

    def _step_chunk(self, indices, ctrl):
        models, nstep = self.models, self.decimation
        for i in indices:
            data = self._data[i]
            data.ctrl[:] = ctrl[i]
            mujoco.mj_step(models[i], data, nstep=nstep)
            self.read_env(i)

    def close(self):
        """Shut the thread pool down."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
