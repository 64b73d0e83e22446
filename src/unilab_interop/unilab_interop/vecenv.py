# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
UniLab's tasks as an rsl_rl ``VecEnv``: the same step as our training loop, in rsl_rl's shapes.

One step is ``unilab_bringup.sim_loop.SimLoop``'s, with the actor left to rsl_rl:
the observation (``unilab_bridge.tasks.observation``) goes out, the network's
actions come back, the task's action map (``unilab_policy.action_map``: for
arm6_reach joint targets ``q + scale * action``) turns them into commands,
envs whose episode just started get a fresh gate reference, and the safety
gate our training builds (``unilab_bringup.direct.make_gate``: same limits, clamps,
look-ahead) filters every command before the simulator steps. Actions mean
exactly what our own PPO's actions mean, so a network trained here runs
through our actor unchanged (``unilab_interop.convert``).

rsl_rl 5.x reads a TensorDict of observation groups (``rsl_rl.env.VecEnv``):
``policy`` and ``critic`` carry the same observation, mapped to the ``actor`` and
``critic`` sets by ``OBS_GROUPS``, except for a task with privileged extras
(``critic_only_extras``, e.g. go2_walk's true trunk velocity): ``policy`` leaves those
columns out, ``critic`` has them, as our actor-critic reads them (``model.critic_only``).
``extras["time_outs"]`` marks truncations (a time limit, not a failure), so
rsl_rl bootstraps their value (``PPO.process_env_step``).

With ``model.action_history`` H > 0 the observation ends with the last H commands, kept
as our actor keeps them (``unilab_policy.history.ActionHistory``: the command the action map
made, before the gate, clipped to the task's action range; at an episode start filled with
the measured joint positions of position-controlled tasks, else zeros), so the network sees
what it would see in our loop and imports with ``action_history: H`` in its spec.

The tasks reset themselves (``BatchedTask`` auto-reset): the observation
returned with ``dones`` is already the next episode's first. ``episode_length_buf``
mirrors the task's counter for reading only; rsl_rl's ``init_at_random_ep_len``
writes it and has no effect here.
"""

from __future__ import annotations

import pathlib

import numpy as np
from rsl_rl.env import VecEnv
from tensordict import TensorDict
import torch
from unilab_bridge.tasks import make_task, observation
from unilab_bringup.direct import make_gate
from unilab_bringup.paths import training_config
from unilab_core.graph import holds_joint_positions
from unilab_policy.action_map import ActionMap, resolve_action_map
from unilab_policy.history import ActionHistory

#: rsl_rl's observation sets -> our groups (runner config ``obs_groups``).
OBS_GROUPS = {'actor': ['policy'], 'critic': ['critic']}


class UniLabVecEnv(VecEnv):
    """``num_envs`` copies of a UniLab task behind rsl_rl's ``VecEnv`` (see the module doc)."""

    def __init__(self, task, gate, action_map: ActionMap, device: str = 'cpu',
                 seed: int = 0, cfg: dict | None = None, action_history: int = 0,
                 history_fill: str = 'zero'):
        """Wrap a built task, its gate and action map; reset every env with ``seed``."""
        if action_map.act_dim != task.action_dim:
            raise ValueError(f'action map for {action_map.act_dim} joints, task {task.name} '
                             f'has {task.action_dim}')
        self.task, self.gate, self.action_map = task, gate, action_map
        self.num_envs = int(task.num_envs)
        self.num_actions = int(task.action_dim)
        self.max_episode_length = int(task.max_episode_steps)
        self.device = torch.device(device)
        self.cfg = dict(cfg or {'task': task.name})
        self.episode_length_buf = torch.zeros(self.num_envs, dtype=torch.long)
        self.history = ActionHistory(self.num_envs, self.num_actions, action_history,
                                     task.action_low, task.action_high)
        self.history_fill = history_fill
        width = int(task.obs_dim) + self.history.length * self.num_actions
        private = int(getattr(task, 'critic_only_extras', 0))
        end = task.obs_dim  # the task's extras end here; the privileged ones last
        self._actor_cols = np.array([c for c in range(width)
                                     if not end - private <= c < end], dtype=np.intp)
        self.reset(seed)

    @property
    def obs_dim(self) -> int:
        """Return the ``policy`` group's width (the history in, privileged columns out)."""
        return len(self._actor_cols)

    def reset(self, seed: int | None = None) -> TensorDict:
        """Reset every env; return the first observations."""
        self.state = self.task.reset(seed=seed)
        self.gate.reset()  # no env continues its last command across a reset
        self._obs = observation(self.state, self.task)
        self._start_history(np.ones(self.num_envs, bool))
        self.episode_length_buf.zero_()
        return self.get_observations()

    def get_observations(self) -> TensorDict:
        """Return the current observations as rsl_rl's groups (``policy``, ``critic``)."""
        full = self.history.observe(self._obs)
        critic = torch.from_numpy(full).to(self.device)
        actor = critic if len(self._actor_cols) == full.shape[1] else \
            torch.from_numpy(np.ascontiguousarray(full[:, self._actor_cols])).to(self.device)
        return TensorDict({'policy': actor, 'critic': critic}, batch_size=[self.num_envs],
                          device=self.device)

    def commands(self, actions: np.ndarray) -> np.ndarray:
        """Return the gated commands for the network's ``actions`` at the current state."""
        s = self.state
        command = self.action_map.command(self._obs, np.asarray(actions, np.float32))
        self.history.push(command)
        starts = s.terminated | s.truncated
        if starts.any():
            # As SimLoop: new episodes are limited from the measured joint positions.
            self.gate.reset(starts)
        measured = getattr(s, 'joint_position', None)
        return self.gate.filter(command, state_position=measured, measured=measured).command

    def step(self, actions: torch.Tensor):
        """Apply ``actions`` [N, num_actions]; return (obs, rewards, dones, extras)."""
        a = actions.detach().to('cpu', torch.float32).numpy()
        if a.shape != (self.num_envs, self.num_actions):
            raise ValueError(f'actions must have shape ({self.num_envs}, {self.num_actions}), '
                             f'got {a.shape}')
        s = self.state = self.task.step(self.commands(a))
        self._obs = observation(s, self.task)
        done = s.terminated | s.truncated
        self._start_history(done)
        self.episode_length_buf += 1
        self.episode_length_buf[torch.from_numpy(done)] = 0
        extras = {'time_outs': torch.from_numpy(s.truncated & ~s.terminated).to(self.device)}
        if done.any():
            extras['log'] = {'/episode_return': float(np.mean(s.episode_return[done])),
                             '/episode_length': float(np.mean(s.episode_length[done]))}
        return (self.get_observations(),
                torch.from_numpy(np.asarray(s.reward, np.float32)).to(self.device),
                torch.from_numpy(done).to(self.device), extras)

    def _start_history(self, envs: np.ndarray) -> None:
        """Start the history of ``envs`` (a mask) as our actor does at an episode start."""
        if envs.any():
            fill = (self._obs[envs, :self.num_actions] if self.history_fill == 'joint_position'
                    else None)
            self.history.reset(envs, fill)

    def close(self) -> None:
        """Release the simulator."""
        self.task.close()


def task_config(task: str, overrides: dict | None = None):
    """Return the training config of ``task`` (defaults, the task's preset, ``overrides``)."""
    return training_config([], {'run.task': task, **(overrides or {})})


def make_vec_env(task: str, num_envs: int, seed: int, run_dir: str | pathlib.Path,
                 device: str = 'cpu', cfg=None) -> UniLabVecEnv:
    """
    Build ``task`` as our training loop would, as an rsl_rl VecEnv.

    ``cfg`` (a RunConfig; default: the task's training config) gives the
    gate's settings, the disturbances and the action map; ``run_dir``
    receives the joint-limits file of tasks whose limits come from the model.
    """
    cfg = cfg if cfg is not None else task_config(task)
    cfg = cfg.model_copy(update={'run': cfg.run.model_copy(update={'task': task})})
    run_dir = pathlib.Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    gate = make_gate(cfg.model_copy(update={'rollout': cfg.rollout.model_copy(
        update={'num_envs': num_envs})}), run_dir)
    sim = make_task(task, num_envs, seed=seed, disturbances=cfg.disturbances)
    model = resolve_action_map(cfg.model, sim)
    return UniLabVecEnv(sim, gate, ActionMap.of(model, sim.action_dim), device, seed,
                        cfg={'task': task, 'action_mode': model.action_mode,
                             'action_scale': list(model.action_scale),
                             'action_offset': list(model.action_offset),
                             'action_clip': model.action_clip,
                             'action_history': cfg.model.action_history},
                        action_history=cfg.model.action_history,
                        history_fill='joint_position' if holds_joint_positions(sim) else 'zero')
