# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The policy's step protocol without ROS: observation in, action (and rollout chunks) out.

One ``PolicyActor`` serves the policy node, the direct training loop, offline
and sim-to-real evaluation, deployment and the benchmarks. It owns

- the **weight version** and the swap rule: weights change between two steps,
  never during one (``load_weights`` / ``set_version``);
- the **action history** (``model.action_history``) and its episode-start fill
  (the held command: the measured joint positions that lead the observation
  for position-controlled joints, else zeros);
- the **rollout chunks** (``ChunkBuilder``): a transition is opened when the
  actor acts on ``obs_t`` and closed by the next step's outcome;
- the **action map** (``action_map.ActionMap``): the network's actions become
  commands in joint units; chunks keep the actions PPO learns in;
- the **duplicate answer**: a re-sent step (same ``seq``, e.g. after a lost
  message) gets the same action again, never a new sample.

Modes:

- ``on_policy`` (training, rsl_rl's rule): act with version ``v`` for exactly
  ``rollout_length`` steps, send them as chunks tagged ``v``, then hold the
  next observation (``pending``) until version ``v + 1`` arrives, so no
  rollout mixes two versions; actions are samples of the Gaussian policy.
- ``deploy`` (a robot): deterministic actions (the policy mean) with whatever
  weights are loaded; never waits for a version and sends no chunks. Before
  any weights exist it has nothing to act with and returns no action (the
  safety gate's watchdog holds the robot). ``runtime='onnx'`` runs the
  deployable policy exported in memory through onnxruntime
  (``exported_inference.OnnxBundlePolicy``, re-exported at each version).
- ``adapt`` (a robot that learns online): samples like ``on_policy`` and sends
  chunks tagged with the acting version, but never waits: a robot cannot
  pause for an update. New weights swap in between two steps whenever they
  arrive; steps of the old version not yet sent are dropped.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, NamedTuple

import numpy as np
import torch

from unilab_policy.action_map import ActionMap
from unilab_policy.chunk import ChunkBuilder
from unilab_policy.exported_inference import OnnxBundlePolicy
from unilab_policy.history import ActionHistory
from unilab_policy.inference import InferencePolicy
from unilab_policy.models import PolicyBundle
from unilab_policy.weights import flatten_state, unflatten_into

MODES = ('on_policy', 'deploy', 'adapt')
#: How the network runs: torch, or (deploy mode) exported in memory to onnxruntime.
RUNTIMES = ('torch', 'onnx')
HISTORY_FILLS = ('zero', 'joint_position')
#: Step outcome fields an observation may carry, each ``[N]``.
OUTCOME_FIELDS = ('reward', 'terminated', 'truncated', 'episode_return', 'episode_length')


class ObservationError(ValueError):
    """An observation has the wrong shape or non-finite values; it is not acted on."""


@dataclasses.dataclass
class StepIn:
    """One control step as the perception layer delivers it."""

    seq: int
    obs: np.ndarray                       # [N, obs_dim]
    reward: np.ndarray | None = None      # [N]: outcome of the previous step (None at start)
    terminated: np.ndarray | None = None  # [N]
    truncated: np.ndarray | None = None   # [N]
    episode_return: np.ndarray | None = None  # [N], NaN while an episode runs
    episode_length: np.ndarray | None = None  # [N]
    stamp_ns: int = 0

    @classmethod
    def from_tensors(cls, seq: int, tensors: dict, stamp_ns: int = 0) -> 'StepIn':
        """Build a step from a tensor batch (``obs`` plus optional outcome fields)."""
        return cls(seq, tensors['obs'], stamp_ns=stamp_ns,
                   **{k: tensors.get(k) for k in OUTCOME_FIELDS})

    def episode_starts(self) -> np.ndarray | None:
        """Return the envs whose episode starts with this observation (bool [N]), if known."""
        if self.terminated is None or self.truncated is None:
            return None
        return np.logical_or(self.terminated > 0.5, self.truncated > 0.5)


class ActOut(NamedTuple):
    """The actor's answer to one step."""

    seq: int
    version: int
    stamp_ns: int
    action: np.ndarray           # [N, act] float32, in command units (``action_map``)
    value: np.ndarray            # [N]
    log_prob: np.ndarray         # [N]
    episode_start: np.ndarray | None  # bool [N]: envs whose episode started at this step


class Chunk(NamedTuple):
    """K steps of transitions for the trainer (arrays of the actor's own)."""

    first_seq: int
    version: int
    tensors: dict


class StepResult(NamedTuple):
    """What one call produced: an action to send and/or a finished chunk."""

    action: ActOut | None = None
    chunk: Chunk | None = None
    duplicate: bool = False   # ``action`` answers a re-sent step (send it again)


_NOTHING = StepResult()


class PolicyActor:
    """Act on observation batches with versioned weights (see the module docstring)."""

    def __init__(self, bundle: PolicyBundle, num_envs: int, act_dim: int, *,
                 mode: str = 'on_policy', action_map: ActionMap | None = None,
                 rollout_length: int = 32, chunk_length: int = 8,
                 action_history: int = 0, action_low=(), action_high=(),
                 history_fill: str = 'zero', device: torch.device | None = None,
                 graph_capture: bool = False, runtime: str = 'torch',
                 log: Callable[[str], None] = print):
        if mode not in MODES:
            raise ValueError(f'mode must be one of {MODES}, got {mode!r}')
        if runtime not in RUNTIMES:
            raise ValueError(f'runtime must be one of {RUNTIMES}, got {runtime!r}')
        if runtime == 'onnx' and mode != 'deploy':
            raise ValueError(f'runtime onnx acts deterministically (deploy mode); mode '
                             f'{mode!r} samples actions and needs torch')
        if history_fill not in HISTORY_FILLS:
            raise ValueError(f'action_history_fill must be one of {HISTORY_FILLS}, got '
                             f'{history_fill!r}')
        chunk_length = min(chunk_length, rollout_length)
        if rollout_length % chunk_length:
            raise ValueError(f'rollout_length {rollout_length} must be a multiple of '
                             f'chunk_length {chunk_length}')
        self.bundle = bundle
        self.mode = mode
        self.num_envs, self.act_dim = int(num_envs), int(act_dim)
        self.action_map = action_map if action_map is not None else ActionMap(
            'absolute', (), self.act_dim)
        if self.action_map.act_dim != self.act_dim:
            raise ValueError(f'action map for {self.action_map.act_dim} joints, the actor has '
                             f'{self.act_dim}')
        self.input_dim = bundle.actor_critic.obs_dim
        self.obs_dim = self.input_dim - int(action_history) * self.act_dim
        self.rollout_length, self.chunk_length = int(rollout_length), int(chunk_length)
        self.history_fill = history_fill
        self.device = device if device is not None else torch.device('cpu')
        self.history = ActionHistory(self.num_envs, self.act_dim, action_history,
                                     action_low, action_high)
        self.chunk = ChunkBuilder(self.chunk_length, self.num_envs, self.input_dim,
                                  self.act_dim) if mode != 'deploy' else None
        self.inference = InferencePolicy(bundle, self.num_envs, self.device,
                                         graph_capture=graph_capture, log=log)
        if runtime == 'onnx':
            # Exported from the loaded weights at each version (set_version).
            self.inference = OnnxBundlePolicy(self.action_map, self.num_envs, self.input_dim,
                                              threads=torch.get_num_threads(), log=log)
        self._spec = flatten_state(bundle)[1]
        # Value and log-prob of an exported runtime's step: zeros, shared read-only.
        self._no_estimate = np.zeros(self.num_envs, np.float32)
        self._no_estimate.flags.writeable = False
        self.version = -1  # no weights yet
        self.steps_in_version = 0
        self.pending: StepIn | None = None
        self.last_seq = -1
        self.last_out: ActOut | None = None
        self._last_input: np.ndarray | None = None  # the network's last input (rehearse)
        self._history_started = False
        self.counters = {'steps': 0, 'chunks': 0, 'duplicates': 0, 'weight_swaps': 0,
                         'waiting': 0}

    # ------------------------------------------------------------------ weights
    def load_weights(self, flat: np.ndarray, version: int) -> StepResult:
        """
        Swap in flat weights (``weights.flatten_state`` layout) of ``version``.

        Versions at or below the current one are ignored (a re-delivered
        latched message). Raises ValueError for weights of another layout.
        Returns the action for a held observation, if one was waiting.
        """
        if version <= self.version:
            return _NOTHING
        unflatten_into(self.bundle, torch.from_numpy(np.array(flat, np.float32)), self._spec)
        return self.set_version(version)

    def set_version(self, version: int) -> StepResult:
        """Start acting with ``version`` (the bundle already holds its weights)."""
        reload = getattr(self.inference, 'reload', None)
        if reload is not None:  # the in-memory ONNX export follows the bundle's weights
            reload(self.bundle)
        self.version = int(version)
        self.steps_in_version = 0
        if self.chunk is not None:
            # Steps of the old version not yet sent (a swap mid-rollout, e.g. a resumed
            # trainer) must not go out tagged with the new one: drop them.
            self.chunk.clear()
        self.counters['weight_swaps'] += 1
        if self.pending is None:
            return _NOTHING
        step, self.pending = self.pending, None
        return self._act(step, continue_chunk=False)

    # -------------------------------------------------------------- observation
    def validate(self, step: StepIn) -> None:
        """Raise ObservationError for a step the actor must not act on."""
        obs = step.obs
        if getattr(obs, 'shape', None) != (self.num_envs, self.obs_dim):
            raise ObservationError(f'obs shape {getattr(obs, "shape", None)}, expected '
                                   f'{(self.num_envs, self.obs_dim)}')
        for name in OUTCOME_FIELDS:
            extra = getattr(step, name)
            if extra is not None and extra.shape != (self.num_envs,):
                raise ObservationError(f'`{name}` shape {extra.shape}, expected '
                                       f'{(self.num_envs,)}')
        if not np.all(np.isfinite(obs)):
            raise ObservationError('obs contains NaN or Inf')

    def step(self, step: StepIn) -> StepResult:
        """Act on one observation; raise ObservationError for a bad one (nothing changes)."""
        self.validate(step)
        if step.seq <= self.last_seq:
            # A re-sent state (the simulator's timeout): answer with the same action.
            self.counters['duplicates'] += 1
            if step.seq == self.last_seq and self.last_out is not None:
                return StepResult(action=self.last_out, duplicate=True)
            return _NOTHING
        if self.pending is not None and step.seq == self.pending.seq:
            return _NOTHING
        if self.version < 0:
            self.pending = step
            self.counters['waiting'] += 1
            return _NOTHING
        return self._act(step, continue_chunk=True)

    def _act(self, step: StepIn, continue_chunk: bool) -> StepResult:
        raw = step.obs
        starts = step.episode_starts()
        if not self._history_started:
            self._history_started = True
            self._start_history(np.ones(self.num_envs, bool), raw)
        elif starts is not None:
            # This observation starts a new episode for these envs.
            self._start_history(starts, raw)
        obs = self.history.observe(raw)
        self._last_input = obs
        chunk = None
        if self.chunk is not None:
            if continue_chunk and self.chunk.has_open_step() \
                    and step.seq == self.last_seq + 1 and step.reward is not None:
                if self.chunk.close_step(step.reward, step.terminated, step.truncated,
                                         step.episode_return, step.episode_length):
                    chunk = self._take_chunk(obs)
                    self.steps_in_version += self.chunk_length
                    if self.mode == 'on_policy' and \
                            self.steps_in_version >= self.rollout_length:
                        # Rollout of this version complete: hold this observation until
                        # the next version arrives.
                        self.pending = step
                        return StepResult(chunk=chunk)
            else:
                self.chunk.drop_open_step()
        exported = getattr(self.inference, 'command', None)
        if exported is not None:
            # An exported runtime (deploy mode): numpy in, the command out, no torch on the
            # control path; nothing trains on a deployed policy's value or log-prob.
            command = exported(obs)
            log_prob = value = self._no_estimate
        else:
            out = self.inference.act(obs, deterministic=self.mode == 'deploy')
            action = out.action.cpu().numpy()
            # Commands in joint units (an exported model already gives them, export.py).
            command = action if getattr(self.inference, 'outputs_commands', False) \
                else self.action_map.command(raw, action)
            log_prob, value = out.log_prob.cpu().numpy(), out.value.cpu().numpy()
        self.history.push(command)
        if self.chunk is not None:
            # PPO learns in action space: the chunk keeps the sampled action.
            self.chunk.open_step(obs, action, log_prob, value, out.mean.cpu().numpy(),
                                 out.std.cpu().numpy(), step.seq)
        self.last_out = ActOut(step.seq, self.version, step.stamp_ns, command, value,
                               log_prob, starts)
        self.last_seq = step.seq
        self.counters['steps'] += 1
        return StepResult(action=self.last_out, chunk=chunk)

    def rehearse(self) -> bool:
        """
        Run the network on the last step's input and throw the output away; say if it ran.

        Deploy mode only (it acts deterministically: no random number is drawn, so what
        the next step computes is unchanged); history, counters and versions stay as they
        are (``unilab_core.rehearsal``).
        """
        obs = self._last_input
        if self.mode != 'deploy' or obs is None:
            return False
        exported = getattr(self.inference, 'command', None)
        if exported is not None:
            exported(obs)
        else:
            self.inference.act(obs, deterministic=True)
        return True

    def _start_history(self, envs: np.ndarray, obs: np.ndarray) -> None:
        if envs.any():
            fill = obs[envs, :self.act_dim] if self.history_fill == 'joint_position' else None
            self.history.reset(envs, fill)

    def _take_chunk(self, next_obs: np.ndarray) -> Chunk:
        # Copies: the builder's buffers are reused for the next chunk, and published
        # arrays are handed over read-only to in-process readers.
        tensors = {k: np.array(v, dtype=np.float32)
                   for k, v in self.chunk.tensors(next_obs).items()}
        chunk = Chunk(self.chunk.first_seq, self.version, tensors)
        self.counters['chunks'] += 1
        self.chunk.clear()
        return chunk
