# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Fine-tune a deployed policy on what the robot recorded: the window, robot rewards, PPO.

A robot has no reward signal. The rollout chunks the policy sends in ``adapt``
mode carry everything else (observations, sampled actions, their log-probs
and values, the episode boundaries: a new goal truncates the old episode, a fall
terminates a walk), so the reward is recomputed here from the observations with the
task's own reward terms, and each episode's success decided, by the task's rule
(``unilab_adapt.robot_reward``: for the reach task, the tool within ``SUCCESS_M`` of the
goal when the goal times out, the simulation test's rule; for go2_walk, a walk segment
without a fall).

``Window`` keeps the most recent steps in order; ``score_versions`` gives the
robot success of each acting version over its complete episodes;
``finetune`` first fits the critic to the robot's returns (``adapt.critic_epochs``:
the recorded values are the critic's guesses for the simulated robot), then runs
PPO epochs (``unilab_policy.ppo.PPO``, the trainer's update) on a copy of the
policy over the window and returns its flat weights. No ROS import.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
from typing import Callable

import numpy as np
import torch
from unilab_adapt.params import AdaptSection
from unilab_adapt.robot_reward import REACH
from unilab_core.config import AdvantageSection, PolicyUpdateSection
from unilab_policy.models import PolicyBundle
from unilab_policy.ppo import num_mini_batches_for, PPO, PPOParams
from unilab_policy.storage import RolloutStorage
from unilab_policy.weights import flatten_state, unflatten_into

#: Tasks adaptation fine-tunes on a robot: their robot reward is recomputed from what
#: perception sends (``unilab_adapt.robot_reward``; go2_walk's needs the robot's state
#: estimate, ``task_inputs.estimate_topic``).
ROBOT_REWARD_TASKS = ('arm6_reach', 'go2_walk')


class AdaptDataError(ValueError):
    """Recorded steps the fine-tuning cannot use (named in the message)."""


@dataclasses.dataclass
class Steps:
    """Robot steps in time order (one robot), each tagged with the acting version."""

    obs: np.ndarray        # [T, D]
    next_obs: np.ndarray   # [T, D]
    actions: np.ndarray    # [T, A]
    log_prob: np.ndarray   # [T]
    values: np.ndarray     # [T]
    mu: np.ndarray         # [T, A]
    sigma: np.ndarray      # [T, A]
    ends: np.ndarray       # [T] bool: the episode ends with this step (new goal next)
    version: np.ndarray    # [T] int
    reward: np.ndarray     # [T]
    distance: np.ndarray   # [T] the rule's outcome after the step (reach: tool to goal, m)
    fell: np.ndarray       # [T] bool: the episode ends here terminated (a fall, a fall stop)

    def __len__(self) -> int:
        return int(self.obs.shape[0])


def chunk_steps(tensors: dict, version: int, reward=REACH) -> Steps:
    """
    Return the steps of one rollout chunk of one robot (``num_envs`` 1).

    ``reward``: the task's robot reward rule (``unilab_adapt.robot_reward``).
    """
    try:
        obs = np.asarray(tensors['obs'], np.float32)
        if obs.ndim != 3 or obs.shape[1] != 1:
            raise AdaptDataError(f'rollout chunk `obs` of shape {obs.shape}: one robot '
                                 '([K, 1, D]) expected')
        o = obs[:, 0]
        nxt = np.concatenate([o[1:], np.asarray(tensors['next_obs'], np.float32)[:1]])
        act = np.asarray(tensors['actions'], np.float32)[:, 0]
        f = {k: np.asarray(tensors[k], np.float32)[:, 0]
             for k in ('log_prob', 'values', 'terminated', 'truncated')}
        mu = np.asarray(tensors['mu'], np.float32)[:, 0]
        sigma = np.asarray(tensors['sigma'], np.float32)[:, 0]
    except KeyError as exc:
        raise AdaptDataError(f'rollout chunk lacks `{exc.args[0]}`') from None
    except (ValueError, IndexError, TypeError) as exc:
        raise AdaptDataError(f'rollout chunk of the wrong shape ({exc})') from None
    arrays = (o, nxt, act, mu, sigma, *f.values())
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise AdaptDataError('rollout chunk has NaN or Inf values')
    prev = np.concatenate([act[:1], act[:-1]])
    ends = (f['terminated'] > 0.5) | (f['truncated'] > 0.5)
    # The observation after an episode's last step belongs to the next episode (a robot's
    # new goal; a simulator's reset pose): that step is scored on its own observation.
    after = np.where(ends[:, None], o, nxt)
    rew, dist = reward.rewards(o, after, act, prev)
    return Steps(o, nxt, act, f['log_prob'], f['values'], mu, sigma, ends,
                 np.full(len(o), int(version), np.int64), rew, dist, f['terminated'] > 0.5)


def concat_steps(parts: list[Steps]) -> Steps:
    """Return the steps of ``parts`` one after the other."""
    return Steps(*(np.concatenate([getattr(p, f.name) for p in parts])
                   for f in dataclasses.fields(Steps)))


class Window:
    """The most recent ``max_steps`` robot steps, chunk by chunk; what falls out is counted."""

    def __init__(self, max_steps: int):
        self.max_steps = int(max_steps)
        self.chunks: collections.deque[Steps] = collections.deque()
        self.size = 0
        self.dropped_steps = 0
        self.total_steps = 0

    def add(self, steps: Steps) -> None:
        """Append one chunk's steps; drop the oldest chunks beyond the bound."""
        self.chunks.append(steps)
        self.size += len(steps)
        self.total_steps += len(steps)
        while self.size - len(self.chunks[0]) >= self.max_steps:
            old = self.chunks.popleft()
            self.size -= len(old)
            self.dropped_steps += len(old)

    def clear(self) -> None:
        """Forget the kept steps (the counters stay: nothing dropped goes unreported)."""
        self.chunks.clear()
        self.size = 0

    def steps(self) -> Steps | None:
        """Return the window's steps in order (None while empty)."""
        return concat_steps(list(self.chunks)) if self.chunks else None


@dataclasses.dataclass(frozen=True)
class EpisodeScore:
    """Robot success of one acting version over its complete episodes."""

    version: int
    episodes: int
    successes: int

    @property
    def success(self) -> float:
        """Return the success fraction."""
        return self.successes / self.episodes if self.episodes else float('nan')


def episodes(steps: Steps) -> list[tuple[int, int]]:
    """Return ``(start, end)`` index ranges of the complete episodes in ``steps``."""
    ends = np.flatnonzero(steps.ends)
    # The first segment started before the window (or mid-episode): not complete.
    return [(int(a) + 1, int(b) + 1) for a, b in zip(ends[:-1], ends[1:])]


def score_versions(steps: Steps, reward=REACH) -> dict[int, EpisodeScore]:
    """
    Return each version's robot success over the complete episodes it acted in alone.

    An episode counts for a version only if every step of it was acted by that
    version (an episode that spans a weight swap belongs to neither); ``reward``'s
    ``success`` rule decides whether it succeeded.
    """
    out: dict[int, list[int]] = {}
    for a, b in episodes(steps):
        versions = np.unique(steps.version[a:b])
        if versions.size != 1:
            continue
        ok = int(reward.success(steps.distance, steps.fell, a, b))
        tally = out.setdefault(int(versions[0]), [0, 0])
        tally[0] += 1
        tally[1] += ok
    return {v: EpisodeScore(v, n, s) for v, (n, s) in out.items()}


def _trainable(ac, layers: str, last_layers: int) -> list[torch.nn.Parameter]:
    """Set ``requires_grad``: all weights, or the last linear layers of actor and critic."""
    if layers == 'all':
        for p in ac.parameters():
            p.requires_grad_(True)
        return list(ac.parameters())
    for p in ac.parameters():
        p.requires_grad_(False)
    chosen = [ac.log_std]
    for net in (ac.actor, ac.critic):
        linear = [m for m in net.modules() if isinstance(m, torch.nn.Linear)]
        for m in linear[-last_layers:]:
            chosen += list(m.parameters())
    for p in chosen:
        p.requires_grad_(True)
    return chosen


def finetune(bundle: PolicyBundle, flat: np.ndarray, steps: Steps, cfg: AdaptSection,
             advantage: AdvantageSection, update: PolicyUpdateSection,
             seed: int = 0, pause: Callable[[], None] | None = None
             ) -> tuple[np.ndarray, dict]:
    """
    Return the flat weights of ``flat`` fine-tuned on ``steps`` (``cfg.method``), and metrics.

    ``bundle`` is a template (its layout); it is not changed. The observation
    normaliser stays as trained. ``cfg.sabotage`` (bench and tests only) makes
    the update harm the policy: ``sign_flip`` ascends instead of descending the
    surrogate (negated advantages), ``huge_lr`` uses a learning rate of 0.05.
    ``pause`` (the adapter's ``ControlPacer.pause``) is called before every
    optimiser step: the work yields to the control loop between minibatches.
    """
    if len(steps) < 2:
        raise AdaptDataError(f'{len(steps)} recorded steps: nothing to fine-tune on')
    torch.manual_seed(seed)
    work = copy.deepcopy(bundle).cpu()
    _, spec = flatten_state(work)
    unflatten_into(work, torch.from_numpy(np.asarray(flat, np.float32)), spec)
    ac = work.actor_critic
    trainable = _trainable(ac, cfg.layers, cfg.last_layers)
    lr = 0.05 if cfg.sabotage == 'huge_lr' else cfg.lr
    upd = update.model_copy(update={'lr': lr, 'epochs': cfg.epochs, 'schedule': 'fixed',
                                    'batch_size': cfg.batch_size})
    t = len(steps)
    params = PPOParams(update=upd, advantage=advantage,
                       num_mini_batches=num_mini_batches_for(cfg.batch_size, t, 1))
    if cfg.method == 'iql':
        metrics = _iql(work, steps, cfg, advantage, lr, seed, pause)
        return _result(work, steps, metrics)
    ppo = PPO(ac, params, 'cpu')
    ppo.optimizer = _paced(torch.optim.Adam(trainable, lr=lr), pause)
    storage = RolloutStorage(t, 1, ac.obs_dim, ac.act_dim, 'cpu')
    with torch.no_grad():
        obs = work.normalize(torch.from_numpy(steps.obs))
        nxt = work.normalize(torch.from_numpy(steps.next_obs[-1:]))
    ends = torch.from_numpy(steps.ends)

    def col(a):
        return torch.from_numpy(np.asarray(a, np.float32))[:, None]

    fell = torch.from_numpy(steps.fell)
    storage.add_chunk({
        'obs': obs[:, None], 'actions': torch.from_numpy(steps.actions)[:, None],
        # A fall ends its episode for good (no value after it); any other end is a cut.
        'rewards': col(steps.reward), 'terminated': fell[:, None],
        'truncated': (ends & ~fell)[:, None], 'values': col(steps.values),
        'log_prob': col(steps.log_prob), 'mu': torch.from_numpy(steps.mu)[:, None],
        'sigma': torch.from_numpy(steps.sigma)[:, None]}, 0)
    with torch.no_grad():
        last_value = ac.value(nxt)
    storage.compute_returns(last_value, advantage.gamma, advantage.gae_lambda)
    metrics = (_fit_critic(ac, storage, nxt, cfg, advantage, lr, pause)
               if cfg.critic_epochs else {})
    if cfg.sabotage == 'sign_flip':
        storage.advantages.neg_()
    metrics.update(ppo.update(storage))
    return _result(work, steps, metrics)


def _paced(opt: torch.optim.Optimizer, pause) -> torch.optim.Optimizer:
    """Return ``opt`` calling ``pause`` before each of its steps (when given)."""
    if pause is not None:
        opt.register_step_pre_hook(lambda *_: pause())
    return opt


def _fit_critic(ac, storage: RolloutStorage, nxt: torch.Tensor, cfg: AdaptSection,
                advantage: AdvantageSection, lr: float, pause=None) -> dict:
    """
    Fit the critic's trainable layers to the robot's returns; recompute the advantages.

    The recorded values are the critic's guesses for the robot it was trained
    on; on a shifted robot they bias every advantage. Each of
    ``cfg.critic_epochs`` passes regresses V on the current GAE returns in
    minibatches of ``cfg.batch_size``, then replaces the stored values (and the
    truncation bootstraps, the rsl_rl approximation) with the new V and
    recomputes returns and advantages, so the policy update that follows sees
    advantages of this robot. The PPO update's clipped value loss then starts
    from the fitted values.
    """
    params = [p for p in ac.critic.parameters() if p.requires_grad]
    if not params:
        return {}
    opt = _paced(torch.optim.Adam(params, lr=lr), pause)
    obs = storage.obs[:, 0]
    t = obs.shape[0]
    before = float((storage.values[:, 0] - storage.returns[:, 0]).square().mean())
    after = before
    for _ in range(cfg.critic_epochs):
        returns = storage.returns[:, 0].clone()
        for idx in torch.randperm(t).split(cfg.batch_size):
            loss = (ac.value(obs[idx]) - returns[idx]).square().mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        with torch.no_grad():
            values = ac.value(obs)
            after = float((values - returns).square().mean())
            storage.values[:, 0] = values
            storage.truncation_values[:, 0] = values
            storage.compute_returns(ac.value(nxt), advantage.gamma, advantage.gae_lambda)
    # Error of V against the returns it was fitted to: the recorded values before the
    # first pass, the fitted ones after the last.
    return {'critic_fit/value_mse_before': before, 'critic_fit/value_mse_after': after}


def _result(work: PolicyBundle, steps: Steps, metrics: dict) -> tuple[np.ndarray, dict]:
    """Return the fine-tuned flat weights (finite, else AdaptDataError) and the metrics."""
    new, _ = flatten_state(work)
    new = new.numpy()
    if not np.all(np.isfinite(new)):
        raise AdaptDataError('fine-tuning produced non-finite weights; candidate discarded')
    metrics.update({'steps': float(len(steps)), 'mean_reward': float(np.mean(steps.reward))})
    return new, metrics


def _iql(work: PolicyBundle, steps: Steps, cfg: AdaptSection, advantage: AdvantageSection,
         lr: float, seed: int, pause=None) -> dict:
    """
    Fine-tune ``work`` in place by IQL on the window as a fixed dataset; return the losses.

    The offline learner of ``train --offline`` (``unilab_policy.offline.iql``) with the
    round's trainable layers (``_trainable`` already set them): V is the policy's critic,
    the twin Q starts fresh. An episode's last step does not bootstrap into the next goal's
    observation (the dataset's time-out rule: next_obs = obs). ``sign_flip`` (bench and
    tests only) negates the rewards.
    """
    from unilab_policy.offline.dataset import TransitionTensors
    from unilab_policy.offline.iql import IQL
    ends = steps.ends.astype(bool)
    rewards = -steps.reward if cfg.sabotage == 'sign_flip' else steps.reward
    data = TransitionTensors.from_arrays({
        'obs': steps.obs, 'actions': steps.actions, 'rewards': rewards,
        'next_obs': np.where(ends[:, None], steps.obs, steps.next_obs),
        'terminated': np.zeros(len(steps), np.float32), 'truncated': ends.astype(np.float32)})
    iql = IQL(work, lr=lr, gamma=advantage.gamma)
    gen = torch.Generator().manual_seed(seed)
    losses: dict = {}
    for _ in range(cfg.epochs * max(1, len(steps) // cfg.batch_size)):
        if pause is not None:
            pause()
        losses = iql.update(data, cfg.batch_size, gen)
    return losses
