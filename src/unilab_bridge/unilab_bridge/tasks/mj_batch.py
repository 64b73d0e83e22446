# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Step N simulations of one model in MuJoCo's own batch (``mujoco.batch``), on its threads.

Why: stepping a Python list of MjData (one ``mj_step`` call, a ``ctrl`` write and a dozen
small array copies per env, all but ``mj_step`` holding the GIL) left the bridge at 0.6x
envpool's batched stepper with a second thread worth nothing (issue 54). MuJoCo 4's
``mujoco.batch.Batch`` keeps every simulation's integration state as one row of an
``[N, nstate]`` array, steps all of them in C++ on its own thread pool with the GIL
released, and copies the derived fields we bind (``actuator_force``, ``site_xpos``,
``sensordata``) into ``[N, ...]`` arrays; its documentation promises results bit-identical
to a loop over one MjData per simulation at any thread count (checked in our tests against
trajectories recorded from that loop: ``test_step_reference.py``).
"""

import copy
import os

import mujoco
from mujoco.batch import Batch
import numpy as np

# Below this many envs the thread hand-off costs more than it saves.
_MIN_ENVS_FOR_THREADS = 16
_BAD_QACC = int(mujoco.mjtWarning.mjWARN_BADQACC)
# Everything mj_step integrates from (qpos, qvel, act, warm start, ctrl, applied forces,
# mocap poses, ...); the rest of MjData is recomputed by mj_forward (MuJoCo docs, "State").
# It is also the layout of the batch's state rows.
_STATE = mujoco.mjtState.mjSTATE_INTEGRATION
# After a step, recompute the position stage at the new state: site positions then match
# the reported joint positions (mj_step leaves poses one substep behind qpos).
_STAGE_POS = int(mujoco.mjtStage.mjSTAGE_POS)
_STAGE_NONE = int(mujoco.mjtStage.mjSTAGE_NONE)


class MjBatch:
    """
    ``num_envs`` simulations of one MjModel, stepped with a given control decimation.

    After every step (and every ``read_env``) the batched arrays ``qpos``, ``qvel`` (of the
    given joint addresses), ``actuator_force``, ``site_pos`` (of the given sites) and
    ``unstable`` hold the state of all envs, gathered with one vectorised copy each. With
    ``root_joint`` (a free joint id) set, ``root_pos``, ``root_quat`` (w, x, y, z),
    ``root_linvel`` (world frame) and ``root_angvel`` (body frame) are read as well. Results
    do not depend on the thread count.

    The state lives in the batch's rows; ``state_field(name)`` is a live ``[N, ...]`` view of
    one field of them (a write is that env's state at its next step). Resets run in one
    scratch MjData: ``env_data(i)`` hands it out, ``read_env(i)`` stores it as env ``i``'s
    state. ``data`` gives one MjData per env for code that needs MuJoCo's functions on a
    single env (rendering, ray casts, tests): each is refreshed from the rows when read
    after a step (state, then ``mj_kinematics``; ``sensordata`` from the last step), and an
    edit to one becomes that env's state through ``read_env(i)``.

    All envs share ``model`` until ``private_models()`` gives each env its own copy (needed
    when dynamics or gains are randomised per env); the batch steps on these models
    themselves, so edits to them take effect at the next step.
    """

    def __init__(self, model, num_envs, decimation, qpos_adr, qvel_adr, site_ids=(),
                 num_threads=None, root_joint=None):
        """Create the batch of ``num_envs`` simulations at the model's default state."""
        self.model = model
        self.models = [model] * num_envs
        self.num_envs = n = int(num_envs)
        self.decimation = int(decimation)
        if num_threads is None:
            num_threads = min(os.cpu_count() or 1, 4)
        if n < _MIN_ENVS_FOR_THREADS:
            num_threads = 1
        self.num_threads = int(num_threads)
        # The batch's thread count includes the calling thread, as our pool's did not need
        # to: the caller only waited.
        self._sim = Batch(model, n, self.num_threads)
        self._sim.set_models(model)  # the caller's model: later edits to it are seen
        self._sim.reset(stage=_STAGE_NONE)
        s = self._sim
        self._rows = s.state
        self._qpos_rows, self._qvel_rows = s.bind('qpos'), s.bind('qvel')
        self._ctrl_rows = s.bind('ctrl')
        self._force_out = s.bind('actuator_force')
        self._sensor_out = s.bind('sensordata') if model.nsensordata else None
        self._warn = s.warning  # [N, mjNWARNING, (lastinfo, number)], live
        self._site_ids = np.asarray(site_ids, dtype=int)
        self._site_out = s.bind('site_xpos') if len(self._site_ids) else None
        self._stage = _STAGE_POS if len(self._site_ids) else _STAGE_NONE
        self._scratch = mujoco.MjData(model)
        self._staged = -1  # env whose reset is being built in the scratch data
        self._data = [None] * n  # per-env MjData views, made on demand (``data``)
        self._fresh = np.zeros(n, dtype=bool)  # view i holds env i's current state
        self._pre_last = None  # rows before the last substep (``keep_contacts``)
        self._root = None
        if root_joint is not None:
            self._root = (int(model.jnt_qposadr[root_joint]), int(model.jnt_dofadr[root_joint]))
        self.root_pos = np.zeros((n, 3))
        self.root_quat = np.zeros((n, 4))
        self.root_linvel = np.zeros((n, 3))
        self.root_angvel = np.zeros((n, 3))
        self._qpos_adr = np.asarray(qpos_adr, dtype=int)
        self._qvel_adr = np.asarray(qvel_adr, dtype=int)
        self.qpos = np.zeros((n, len(self._qpos_adr)))
        self.qvel = np.zeros((n, len(self._qvel_adr)))
        self.actuator_force = np.zeros((n, model.nu))
        self.site_pos = np.zeros((n, len(self._site_ids), 3))
        self.unstable = np.zeros(n, dtype=bool)
        self._sensordata = np.zeros((n, model.nsensordata))

    @property
    def has_root(self) -> bool:
        """Return whether the envs have a floating base (``root_*`` arrays are read)."""
        return self._root is not None

    def private_models(self):
        """Give every env its own MjModel copy (idempotent); return the list."""
        if len(self.models) and self.models[0] is self.model:
            self.models = [copy.deepcopy(self.model) for _ in range(self.num_envs)]
            self._sim.set_models(self.models)
        return self.models

    def state_field(self, name):
        """Return a live [N, ...] view of a state field (``qpos``, ``qvel``, ``ctrl``, ...)."""
        self._fresh[:] = False  # a write here is newer than any handed-out MjData
        return self._sim.bind(name)

    @property
    def sensordata(self):
        """Return every env's sensor readings of the last step [N, nsensordata]."""
        return self._sensordata

    def keep_contacts(self):
        """Keep each step's state before its last substep, for ``contact_data`` (idempotent)."""
        if self._pre_last is None:
            self._pre_last = np.zeros_like(self._rows)

    def contact_data(self, i):
        """
        Return an MjData with env ``i``'s contacts of the last step (``keep_contacts`` first).

        mj_step detects contacts at the state it starts from, so after a step an env's
        contacts are those of the state before its last substep: that state is kept, and
        collision detection is run on it again here.
        """
        d, model = self._scratch, self.models[i]
        mujoco.mj_setState(model, d, self._pre_last[i], _STATE)
        mujoco.mj_kinematics(model, d)
        mujoco.mj_collision(model, d)
        return d

    @property
    def data(self):
        """Return the per-env MjData list, each holding its env's current state."""
        for i in range(self.num_envs):
            self.view(i)
        return self._data

    def env_data(self, i):
        """Return the MjData to reset env ``i`` in; finish the reset with ``read_env(i)``."""
        self._staged = i
        return self._scratch

    def materialize(self):
        """Create every env's MjData view that does not exist yet."""
        for i in range(self.num_envs):
            if self._data[i] is None:
                self._data[i] = mujoco.MjData(self.models[i])

    def step(self, ctrl):
        """Set ctrl [N, nu], advance every env by ``decimation`` physics steps, read state."""
        self.materialize()
        self._ctrl_rows[:] = ctrl
        if self._pre_last is None:
            self._sim.step(nstep=self.decimation, stage=self._stage)
        else:
            if self.decimation > 1:
                self._sim.step(nstep=self.decimation - 1)
            self._pre_last[:] = self._rows
            self._sim.step(nstep=1, stage=self._stage)
        self._read_all()

    def step_motor(self, motor):
        """
        Advance every env by ``decimation`` physics steps, ctrl recomputed at each one.

        ``motor(qpos, qvel)`` returns ctrl [N, nu] from the joint positions and velocities
        [N, J] of the current physics step (a motor driver's PD at the physics rate,
        ``unilab_core.actuator``); it runs on the calling thread, vectorised over the envs,
        between the batch's physics steps.
        """
        self.materialize()
        for k in range(self.decimation):
            self._ctrl_rows[:] = motor(self.qpos, self.qvel)
            last = k == self.decimation - 1
            if last and self._pre_last is not None:
                self._pre_last[:] = self._rows
            self._sim.step(nstep=1, stage=self._stage if last else _STAGE_NONE)
            np.take(self._qpos_rows, self._qpos_adr, axis=1, out=self.qpos)
            np.take(self._qvel_rows, self._qvel_adr, axis=1, out=self.qvel)
        self._read_all()

    def _read_all(self):
        """Gather every env's state into the batched arrays (after a step)."""
        self._fresh[:] = False
        np.take(self._qpos_rows, self._qpos_adr, axis=1, out=self.qpos)
        np.take(self._qvel_rows, self._qvel_adr, axis=1, out=self.qvel)
        self.actuator_force[:] = self._force_out
        if self._sensor_out is not None:
            self._sensordata[:] = self._sensor_out
        if self._site_out is not None:
            np.take(self._site_out, self._site_ids, axis=1, out=self.site_pos)
        # MuJoCo resets an env whose accelerations blow up and counts this warning, so it
        # is the reliable divergence signal (it is cleared by mj_resetData).
        np.greater(self._warn[:, _BAD_QACC, 1], 0, out=self.unstable)
        if self._root is not None:
            qa, da = self._root
            q, v = self._qpos_rows, self._qvel_rows
            self.root_pos[:] = q[:, qa:qa + 3]
            self.root_quat[:] = q[:, qa + 3:qa + 7]
            # A free joint's qvel is the linear velocity in the world frame followed by the
            # angular velocity in the body frame (MuJoCo docs, "Floating objects").
            self.root_linvel[:] = v[:, da:da + 3]
            self.root_angvel[:] = v[:, da + 3:da + 6]

    def view(self, i):
        """Return env ``i``'s MjData (as ``data[i]``), refreshed from its state if stale."""
        if self._data[i] is None:
            self._data[i] = mujoco.MjData(self.models[i])
        d = self._data[i]
        if not self._fresh[i]:
            model = self.models[i]
            mujoco.mj_setState(model, d, self._rows[i], _STATE)
            mujoco.mj_kinematics(model, d)
            d.sensordata[:] = self._sensordata[i]
            for w in range(len(d.warning)):
                d.warning[w].lastinfo, d.warning[w].number = self._warn[i, w]
            self._fresh[i] = True
        return d

    def read_env(self, i):
        """
        Store env ``i``'s MjData as its state and refresh the batched arrays' row ``i``.

        The MjData is the scratch one after ``env_data(i)`` (a reset), else env ``i``'s
        view in ``data`` if it was read since the last step (and maybe edited).
        """
        if self._staged == i:
            src, self._staged = self._scratch, -1
        elif self._data[i] is not None and self._fresh[i]:
            src = self._data[i]
        else:
            src = self.view(i)
        model = self.models[i]
        mujoco.mj_getState(model, src, self._rows[i], _STATE)
        for w in range(len(src.warning)):
            self._warn[i, w] = (src.warning[w].lastinfo, src.warning[w].number)
        if src is not self._data[i]:
            self._fresh[i] = False
        # The reported site positions are those of the reported joint positions.
        mujoco.mj_kinematics(model, src)
        self.qpos[i] = src.qpos[self._qpos_adr]
        self.qvel[i] = src.qvel[self._qvel_adr]
        self.actuator_force[i] = src.actuator_force
        self._sensordata[i] = src.sensordata
        self.site_pos[i] = src.site_xpos[self._site_ids]
        self.unstable[i] = src.warning[_BAD_QACC].number > 0
        if self._root is not None:
            qa, da = self._root
            self.root_pos[i] = src.qpos[qa:qa + 3]
            self.root_quat[i] = src.qpos[qa + 3:qa + 7]
            self.root_linvel[i] = src.qvel[da:da + 3]
            self.root_angvel[i] = src.qvel[da + 3:da + 6]

    def close(self):
        """Release the batch's threads (stepping after this is an error)."""
        self._sim = None
