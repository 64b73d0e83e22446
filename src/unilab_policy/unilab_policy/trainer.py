# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The trainer's loop body, free of ROS: chunks in, PPO updates, weights and checkpoints out.

Normalisation contract: the policy acted with normaliser statistics of
version ``v``; the trainer normalises the stored observations with the same
statistics, so the first PPO epoch sees ratio 1 exactly. Only after the
update are this rollout's raw observations merged into the statistics, and
version ``v + 1`` (network + statistics) is published.
"""

from __future__ import annotations

import copy
import math
import pathlib
import time
from typing import Callable
import warnings

import numpy as np
import torch
from unilab_core.atomic import remove_stale_temp_files
from unilab_core.errors import one_line
from unilab_core.stop import STOP_DEFERRED

from unilab_policy import distributed
from unilab_policy.checkpoint import (capture_rng_state, load_checkpoint, restore_rng_state,
                                      restoring, save_checkpoint)
from unilab_policy.chunk import CHUNK_FIELDS
from unilab_policy.envelope import KEY as ENVELOPE_KEY, TrainedEnvelope
from unilab_policy.models import PolicyBundle
from unilab_policy.ppo import PPO, PPOParams
from unilab_policy.reward_scale import RewardScaler
from unilab_policy.run_log import RunLog
from unilab_policy.storage import RolloutStorage
from unilab_policy.weights import flatten_state


# Chunks arrive as read-only arrays (handed over by the transport); the trainer
# only reads them (copied into storage), which torch warns about needlessly.
warnings.filterwarnings('ignore', message='The given NumPy array is not writable',
                        category=UserWarning)


class StaleChunkError(ValueError):
    """A rollout chunk was produced by another weight version than the one being trained."""


class BadChunkError(ValueError):
    """A rollout chunk has missing fields, wrong shapes or dtypes, or non-finite values."""


#: What a trainer checkpoint holds (``Trainer.state_dict``) and ``load`` needs.
RESUME_KEYS = ('bundle', 'ppo', 'weights_version', 'updates', 'env_steps', 'wall_s',
               'episode_returns', 'rng')


class TrainingFailedError(RuntimeError):
    """The run must stop: PPO updates failed too often in a row, or a checkpoint write failed."""


#: A failed update (an exception inside it, e.g. CUDA out of memory) is skipped: the
#: weights stay as they were and a new version (same weights) lets collection go on.
#: This many failures in a row stop the run instead (the cause is not passing).
MAX_CONSECUTIVE_FAILURES = 3


_VECTOR_FIELDS = ('obs', 'actions', 'mu', 'sigma')
_FINITE_FIELDS = ('obs', 'actions', 'values', 'log_prob', 'rewards', 'mu', 'sigma', 'next_obs')


class _NoLog:
    """The metrics log of a rank that does not write (data-parallel ranks other than 0)."""

    def write(self, update: int, env_steps: int, metrics: dict[str, float]) -> None:
        """Drop the row: rank 0 writes the run's metrics."""

    def truncate(self, update: int, env_steps: int) -> int:
        """Drop nothing: rank 0 owns the metrics file."""
        return 0

    def close(self) -> None:
        """Close nothing."""


class Trainer:
    """
    PPO over rollout chunks with versioned weights.

    Under ``torch.distributed`` with several ranks (``unilab_policy.distributed``)
    each rank's trainer trains on its own rollouts, the ranks' weights stay
    identical, ``total_steps`` and ``env_steps`` count the steps of all ranks,
    and only rank 0 writes metrics and checkpoints.
    """

    def __init__(self, bundle: PolicyBundle, params: PPOParams, num_steps: int, num_envs: int,
                 device: torch.device,
                 run_dir: str | pathlib.Path, total_steps: int, checkpoint_every: int = 20,
                 tensorboard: bool = True, normalize_obs: bool = True,
                 reward_scaler: RewardScaler | None = None,
                 envelope: TrainedEnvelope | None = None):
        self.bundle = bundle
        #: The joint range seen in the rollouts and the task's workspace (checkpointed).
        self.envelope = envelope
        self.device = device
        #: Data-parallel ranks (1 without a process group of several ranks).
        self.world = distributed.world_size() if distributed.active() else 1
        #: Whether this rank writes metrics and checkpoints (rank 0; always with one rank).
        self.writer = distributed.is_writer()
        distributed.broadcast_module(bundle)  # every rank starts from rank 0's weights
        self.params = params
        self.ppo = PPO(bundle.actor_critic, params, device)
        obs_dim, act_dim = bundle.actor_critic.obs_dim, bundle.actor_critic.act_dim
        self.storage = RolloutStorage(num_steps, num_envs, obs_dim, act_dim, device)
        # Raw observations of the current rollout, for the post-update statistics merge.
        self.raw_obs = torch.zeros(num_steps, num_envs, obs_dim, device=device)
        self.num_steps, self.num_envs = num_steps, num_envs
        self.normalize_obs = normalize_obs
        #: Scales each rollout's rewards before GAE (``normalization.rewards``), or None.
        self.reward_scaler = reward_scaler.to(device) if reward_scaler is not None else None
        self.run_dir = pathlib.Path(run_dir)
        self.total_steps = total_steps
        self.checkpoint_every = checkpoint_every
        self.version = 0
        self.updates = 0
        self.env_steps = 0
        self.episode_returns: list[float] = []
        #: Lengths of the episodes that ended since the last metrics row.
        self.episode_lengths: list[float] = []
        #: Columns of the graph (success, safety, transport) the node adds to each row.
        self.extra_metrics: Callable[[], dict[str, float]] | None = None
        #: the metrics row of the last update ({} before the first)
        self.last_metrics: dict[str, float] = {}
        self.stale_chunks = 0
        self.bad_chunks = 0
        self.rejected_updates = 0
        self.last_update_rejected = ''
        self.failed_updates = 0
        self.consecutive_failures = 0
        self.last_update_failed = ''
        self.last_checkpoint = ''
        self.wall_start = time.monotonic()
        self.wall_offset = 0.0
        self.log = RunLog(self.run_dir, tensorboard=tensorboard) if self.writer else _NoLog()
        self.removed_temp_files = (remove_stale_temp_files(self.run_dir / 'checkpoints')
                                   if self.writer else [])

    # ------------------------------------------------------------------ state
    @property
    def done(self) -> bool:
        """Return True once the step budget is used."""
        return self.env_steps >= self.total_steps

    def weights(self) -> np.ndarray:
        """Return the flat float32 weights of the current version."""
        flat, _ = flatten_state(self.bundle)
        return flat.numpy()

    def wall_s(self) -> float:
        """Return training wall time, including time before a resume."""
        return self.wall_offset + time.monotonic() - self.wall_start

    # ------------------------------------------------------------------ data
    def add_chunk(self, t: dict[str, np.ndarray], version: int) -> bool:
        """Store one chunk; run the update when the rollout is complete (returns True)."""
        if version != self.version:
            self.stale_chunks += 1
            raise StaleChunkError(f'chunk of version {version}, training version {self.version}')
        k = self._validate_chunk(t)
        start = self.storage.step
        raw = torch.as_tensor(t['obs'], device=self.device)
        self.raw_obs[start:start + k].copy_(raw)
        if self.envelope is not None:
            self.envelope.update(raw)
        with torch.no_grad():
            obs = self.bundle.normalize(raw) if self.normalize_obs else raw
        dev = self.device
        self.storage.add_chunk({
            'obs': obs,
            'actions': torch.as_tensor(t['actions'], device=dev),
            'rewards': torch.as_tensor(t['rewards'], device=dev),
            'terminated': torch.as_tensor(t['terminated'] > 0.5, device=dev),
            'truncated': torch.as_tensor(t['truncated'] > 0.5, device=dev),
            'values': torch.as_tensor(t['values'], device=dev),
            'log_prob': torch.as_tensor(t['log_prob'], device=dev),
            'mu': torch.as_tensor(t['mu'], device=dev),
            'sigma': torch.as_tensor(t['sigma'], device=dev),
        }, start)
        ended = ~np.isnan(t['episode_return'])
        self.episode_returns.extend(float(x) for x in t['episode_return'][ended])
        if 'episode_length' in t:
            self.episode_lengths.extend(float(x) for x in t['episode_length'][ended])
        if not self.storage.is_full:
            return False
        self._update(torch.as_tensor(t['next_obs'], device=self.device))
        return True

    def _validate_chunk(self, t: dict) -> int:
        """Check fields, shapes, dtypes and finiteness; return K. Nothing is stored on error."""
        obs_dim = self.bundle.actor_critic.obs_dim
        act_dim = self.bundle.actor_critic.act_dim
        missing = [f for f in CHUNK_FIELDS + ('next_obs',) if f not in t]
        if missing:
            self.bad_chunks += 1
            raise BadChunkError(f'rollout chunk lacks {missing}')
        k = int(t['rewards'].shape[0]) if t['rewards'].ndim == 2 else -1
        n = self.num_envs
        for name in CHUNK_FIELDS + ('next_obs',):
            arr = t[name]
            if name == 'next_obs':
                expected = (n, obs_dim)
            elif name in _VECTOR_FIELDS:
                expected = (k, n, obs_dim if name == 'obs' else act_dim)
            else:
                expected = (k, n)
            problem = ''
            if k < 1 or tuple(arr.shape) != expected:
                problem = f'shape {tuple(arr.shape)}, expected {expected}'
            elif arr.dtype != np.float32:
                problem = f'dtype {arr.dtype}, expected float32'
            elif name in _FINITE_FIELDS and not np.all(np.isfinite(arr)):
                problem = 'NaN or Inf values'
            if problem:
                self.bad_chunks += 1
                raise BadChunkError(f'rollout chunk field `{name}`: {problem}')
        return k

    def _update(self, next_obs_raw: torch.Tensor) -> None:
        t0 = time.monotonic()
        # Keep the last good state: a NaN loss or NaN weights must never be published.
        good = copy.deepcopy((self.bundle.state_dict(), self.ppo.state_dict()))
        self.last_update_rejected = self.last_update_failed = ''
        try:
            metrics = self._ppo_update(next_obs_raw)
            self.last_update_rejected = self._check_update(metrics)
        except Exception as exc:  # noqa: BLE001 - any failure inside the update is handled
            metrics = dict.fromkeys(PPO.METRICS, math.nan)  # the row keeps every column
            self.last_update_failed = f'{type(exc).__name__}: {exc}'
        if distributed.active():
            # The ranks keep or roll back an update together, so their weights stay equal.
            self._agree_on_update()
        if self.last_update_rejected or self.last_update_failed:
            self.bundle.load_state_dict(good[0])
            self.ppo.load_state_dict(good[1])
        if self.last_update_failed:
            self.failed_updates += 1
            self.consecutive_failures += 1
        else:
            self.consecutive_failures = 0
            if self.last_update_rejected:
                self.rejected_updates += 1
            elif self.normalize_obs:
                # With several ranks, every rank's observations (same result on all).
                self.bundle.obs_normalizer.update(
                    distributed.gather_rows(self.raw_obs.flatten(0, 1)))
        # The rollout is used (or given up) either way: the next one starts empty, and the
        # new version (possibly the same weights) lets the policy collect it.
        self.storage.clear()
        self.version += 1
        self.updates += 1
        self.env_steps += self.num_steps * self.num_envs * self.world
        wall = self.wall_s()
        recent = self.episode_returns[-self.num_envs:]
        metrics.update({
            'charts/env_steps': float(self.env_steps),
            'charts/fps': self.env_steps / max(wall, 1e-9),
            'charts/update_s': time.monotonic() - t0,
            'charts/mean_return': float(np.mean(recent)) if recent else math.nan,
            'charts/episodes': float(len(self.episode_returns)),
            'charts/wall_s': wall,
            'policy/weights_version': float(self.version),
            'policy/action_std': float(self.bundle.actor_critic.action_std.mean().detach()),
            'policy/rejected_updates': float(self.rejected_updates),
            'policy/failed_updates': float(self.failed_updates),
            'episodes/length_mean': (float(np.mean(self.episode_lengths))
                                     if self.episode_lengths else math.nan),
        })
        self.episode_lengths.clear()
        if self.extra_metrics is not None:
            metrics.update(self.extra_metrics())
        self.log.write(self.updates, self.env_steps, metrics)
        self.last_metrics = metrics
        if self.consecutive_failures >= MAX_CONSECUTIVE_FAILURES:
            raise TrainingFailedError(
                f'{self.consecutive_failures} PPO updates in a row failed, the last with '
                f'{self.last_update_failed}; stopping (last good weights: '
                f'{self.last_checkpoint or "no checkpoint yet"})')
        if self.updates % self.checkpoint_every == 0 or self.done:
            self.save_checkpoint()

    def _agree_on_update(self) -> None:
        """Roll the update back on every rank when any rank rejected it or failed."""
        if distributed.any_rank(bool(self.last_update_failed), self.device):
            self.last_update_failed = self.last_update_failed or 'failed on another rank'
        elif distributed.any_rank(bool(self.last_update_rejected), self.device):
            self.last_update_rejected = self.last_update_rejected or 'rejected on another rank'

    def _ppo_update(self, next_obs_raw: torch.Tensor) -> dict:
        """Bootstrap, GAE and the PPO epochs; return the update's metrics."""
        with torch.no_grad():
            nxt = self.bundle.normalize(next_obs_raw) if self.normalize_obs else next_obs_raw
            last_values = self.bundle.actor_critic.value(nxt)
        adv = self.params.advantage
        if self.reward_scaler is not None:
            st = self.storage
            st.rewards.copy_(self.reward_scaler(st.rewards, st.terminated | st.truncated))
        self.storage.compute_returns(last_values, adv.gamma, adv.gae_lambda)
        return dict(self.ppo.update(self.storage))

    def _check_update(self, metrics: dict) -> str:
        """Return why the update must be rejected ('' when it is sound)."""
        bad = [k for k, v in metrics.items() if isinstance(v, float) and k.startswith('losses/')
               and not math.isfinite(v)]
        if bad:
            return f'non-finite {", ".join(sorted(bad))}'
        for name, tensor in self.bundle.state_dict().items():
            if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
                return f'non-finite weights in {name}'
        return ''

    # ------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict:
        """Everything needed to resume."""
        return {
            'bundle': self.bundle.state_dict(),
            'ppo': self.ppo.state_dict(),
            'weights_version': self.version,
            'updates': self.updates,
            'env_steps': self.env_steps,
            'wall_s': self.wall_s(),
            'episode_returns': torch.tensor(self.episode_returns, dtype=torch.float64),
            'rng': capture_rng_state(),
            **({'reward_scaler': self.reward_scaler.state_dict()}
               if self.reward_scaler is not None else {}),
            **({ENVELOPE_KEY: self.envelope.state_dict()} if self.envelope is not None else {}),
        }

    def save_checkpoint(self) -> str:
        """
        Write ``checkpoints/model_<updates>.pt`` and ``latest.pt`` atomically; return the path.

        Only rank 0 writes; the other ranks return the path rank 0 writes.
        """
        ckpt_dir = self.run_dir / 'checkpoints'
        path = ckpt_dir / f'model_{self.updates:06d}.pt'
        if not self.writer:
            self.last_checkpoint = str(path)
            return self.last_checkpoint
        state = self.state_dict()
        with STOP_DEFERRED:  # a Ctrl-C comes after both files, not between them
            for target in (path, ckpt_dir / 'latest.pt'):
                try:
                    save_checkpoint(target, state)
                except (OSError, RuntimeError) as exc:  # disk full, directory gone, zip
                    raise TrainingFailedError(
                        f'could not write checkpoint {target}: {one_line(exc)} (last '
                        f'written: {self.last_checkpoint or "none"})') from exc
        self.last_checkpoint = str(path)
        return self.last_checkpoint

    def load(self, path: str | pathlib.Path) -> None:
        """
        Resume from a checkpoint file or a run directory (its ``latest.pt``).

        The run's metrics go back to the checkpoint too: rows and TensorBoard
        steps logged after it (by a run that was killed later) are dropped, so
        the updates that follow are not logged twice.
        """
        path = pathlib.Path(path)
        if path.is_dir():
            path = path / 'checkpoints' / 'latest.pt'
        state = load_checkpoint(path, map_location=self.device, required=RESUME_KEYS)
        with restoring(path):
            self.bundle.load_state_dict(state['bundle'])
            self.ppo.load_state_dict(state['ppo'])
            self.version = int(state['weights_version'])
            self.updates = int(state['updates'])
            self.env_steps = int(state['env_steps'])
            if min(self.version, self.updates, self.env_steps) < 0:
                raise ValueError(f'negative counters (updates {self.updates}, env_steps '
                                 f'{self.env_steps}, weights_version {self.version})')
            self.wall_offset = float(state['wall_s'])
            self.episode_returns = [float(x) for x in state['episode_returns']]
            restore_rng_state(state['rng'])
            if self.reward_scaler is not None and 'reward_scaler' in state:
                self.reward_scaler.load_state_dict(state['reward_scaler'])
            if self.envelope is not None and ENVELOPE_KEY in state:
                self.envelope.load_state_dict(state[ENVELOPE_KEY])
        if distributed.active():
            # Every rank read rank 0's checkpoint: the same weights (broadcast to be sure),
            # but the ranks' sampling noise must differ again.
            distributed.broadcast_module(self.bundle)
            if distributed.rank() > 0:
                torch.manual_seed(distributed.rank_seed(self.updates * 1_000_003))
        self.wall_start = time.monotonic()
        self.last_checkpoint = str(path)
        self.log.truncate(self.updates, self.env_steps)

    def summary(self) -> dict:
        """Return the figures for ``summary.json``."""
        r = self.episode_returns
        w = max(1, min(self.num_envs, len(r) // 2))
        wall = self.wall_s()
        return {
            'steps': self.env_steps,
            'updates': self.updates,
            'weights_version': self.version,
            'wall_s': round(wall, 3),
            'fps': round(self.env_steps / max(wall, 1e-9), 1),
            'episodes': len(r),
            'return_first': float(np.mean(r[:w])) if r else None,
            'return_last': float(np.mean(r[-w:])) if r else None,
            'checkpoint': self.last_checkpoint,
            'stale_chunks': self.stale_chunks,
            'bad_chunks': self.bad_chunks,
            'rejected_updates': self.rejected_updates,
            'failed_updates': self.failed_updates,
        }

    def close(self) -> None:
        """Flush logs."""
        self.log.close()
