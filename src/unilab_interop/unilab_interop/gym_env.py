# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
UniLab's tasks as gymnasium environments: ``gymnasium.make('unilab/Arm6Reach-v0')``.

One env of the rsl_rl environment (``unilab_interop.vecenv``): the same
observation, action map and safety gate as our training loop, so SB3, CleanRL
or any gymnasium learner trains on exactly what our PPO trains on. The ids are
registered when ``unilab_interop`` is imported (``unilab_interop.GYM_IDS``).

Actions are the network's, in units of the task's action map: for arm6_reach a
joint target ``q + action_scale * action`` (one unit is two slew steps, beyond
which the gate clamps), for the quadrupeds a target ``offset + action_scale *
action`` around the standing pose; the space is [-1, 1] per joint for both. A
task that commands absolutely takes its actuator range. The task resets itself
when an episode ends: the observation returned with ``terminated`` or
``truncated`` is already the next episode's first; ``reset`` starts afresh.
"""

from __future__ import annotations

import pathlib
import tempfile

import gymnasium
from gymnasium import spaces
import numpy as np
import torch
from unilab_interop.vecenv import make_vec_env


class UniLabGymEnv(gymnasium.Env):
    """One env of a UniLab task through our action map and safety gate (module doc)."""

    metadata = {'render_modes': []}

    def __init__(self, task: str = 'arm6_reach', run_dir: str | None = None, seed: int = 0):
        """Build ``task``; ``run_dir`` receives the gate's joint-limits file (default: temp)."""
        self._tmp = None
        if run_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix='unilab-gym-')
            run_dir = self._tmp.name
        self._env = make_vec_env(task, 1, seed, pathlib.Path(run_dir))
        sim = self._env.task
        self.observation_space = spaces.Box(-np.inf, np.inf, (self._env.obs_dim,), np.float32)
        if self._env.action_map.identity:
            self.action_space = spaces.Box(sim.action_low.astype(np.float32),
                                           sim.action_high.astype(np.float32), dtype=np.float32)
        else:
            self.action_space = spaces.Box(-1.0, 1.0, (sim.action_dim,), np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start a new episode (the task's own seeding: one seed, one start)."""
        super().reset(seed=seed)
        if seed is None:
            seed = int(self.np_random.integers(2**31 - 1))
        obs = self._env.reset(seed)
        return obs['policy'][0].numpy(), {}

    def step(self, action):
        """Apply one action; return (obs, reward, terminated, truncated, info)."""
        a = torch.as_tensor(np.asarray(action, np.float32).reshape(1, -1))
        obs, reward, _, extras = self._env.step(a)
        s = self._env.state
        info = {}
        if s.terminated[0] or s.truncated[0]:
            info['episode_return'] = float(s.episode_return[0])
        return (obs['policy'][0].numpy(), float(reward[0]), bool(s.terminated[0]),
                bool(s.truncated[0]), info)

    def close(self):
        """Release the simulator (and the temporary directory)."""
        self._env.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
