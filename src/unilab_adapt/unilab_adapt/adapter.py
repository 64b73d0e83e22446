# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
One adaptation round after another: score the running version, fine-tune, test, deploy.

The adapter's core without ROS (``adapter_node`` wires it). Its run directory
``<run>/adapt`` holds everything an operator needs to see or undo:

- ``versions/v<NNNN>.npy``: every version's flat weights (version 0: the
  deployed policy), written atomically before the version is proposed;
- ``fuse.json``: the fuse's state (``unilab_adapt.fuse``): every version's
  simulation and robot success, status and reason;
- ``deployments.json``: which weight message (its ``version`` on the weights
  topic, always increasing, as the policy requires) carried which fuse
  version, so chunks tagged with a message version are attributed correctly,
  also after a rollback re-publishes an old version;
- ``history.jsonl``: one line per round (time, versions, scores, decision);
- ``window.json``: up to when (wall clock, ns) the recorded steps were scored, so a
  restarted adapter rebuilds its window from the recorder's closed bags
  (``replay_recordings``) without scoring an episode twice.

A round (``step``) runs when the running version has ``min_episodes`` complete
robot episodes it acted alone: its robot success goes to the fuse (which may
roll back); otherwise a copy is fine-tuned on those episodes' steps
(``finetune``), scored by the simulation test, and deployed if the fuse
agrees.
"""

from __future__ import annotations

import dataclasses
import io
import json
import pathlib
import time
from typing import Callable

import numpy as np
from unilab_adapt.finetune import (AdaptDataError, chunk_steps, finetune, score_versions, Steps,
                                   Window)
from unilab_adapt.fuse import Fuse
from unilab_adapt.params import AdaptSection
from unilab_adapt.robot_reward import REACH
from unilab_core.atomic import atomic_write_bytes, atomic_write_text, remove_stale_temp_files
from unilab_core.config import AdvantageSection, PolicyUpdateSection


@dataclasses.dataclass
class RoundResult:
    """What one round decided; ``publish`` = (message version, fuse version, weights)."""

    kind: str              # 'wait', 'rollback', 'held', 'deployed', 'rejected', 'failed'
    reason: str
    publish: tuple[int, int, np.ndarray] | None = None
    alert: bool = False


class RoundStopped(Exception):
    """
    The node is closing: raised by its ``pause`` between two pieces of a round's work.

    Nothing half-done is kept: a candidate whose simulation test was cut short is never
    proposed (its weights file is written again by the next round that gets its number).
    """


class Adapter:
    """Online adaptation with a safety fuse (see the module docstring)."""

    def __init__(self, run_dir: str | pathlib.Path, bundle, flat0: np.ndarray,
                 cfg: AdaptSection, advantage: AdvantageSection, update: PolicyUpdateSection,
                 sim_test: Callable[[np.ndarray], float], log=print,
                 pause: Callable[[], None] | None = None, reward=REACH):
        self.dir = pathlib.Path(run_dir) / 'adapt'
        (self.dir / 'versions').mkdir(parents=True, exist_ok=True)
        # What an adapter killed while writing left (the state files are written
        # atomically: the real ones are whole); said, then removed.
        for d in (self.dir, self.dir / 'versions'):
            for name in remove_stale_temp_files(d):
                log(f'adapt: removed {d / name}, the temp file of a write a killed adapter '
                    'left unfinished')
        self.cfg, self.advantage, self.update = cfg, advantage, update
        self.bundle = bundle
        self.sim_test = sim_test
        self.reward = reward  # the task's robot reward and success (unilab_adapt.robot_reward)
        self.pause = pause  # the fine-tuning yields to the control loop (unilab_adapt.pacer)
        self.log = log
        self.fuse = Fuse(self.dir / 'fuse.json', cfg.sim_tolerance, cfg.drop_tolerance,
                         cfg.consecutive_drops, cfg.drop_z, cfg.hold_after_rollback)
        self.window = Window(cfg.window_steps)
        # Wall-clock time (ns) up to which recorded steps were taken into a scored round.
        self.consumed_ns = _consumed_ns(self.dir / 'window.json')
        self.rounds = 0
        self.bad_chunks = 0
        self.unknown_version_steps = 0
        if not self.weights_file(0).is_file():
            self._save_weights(0, flat0)
        dep = self.dir / 'deployments.json'
        # message version -> fuse version; the deployed policy starts as message version 0
        self.deployments = ({int(k): int(v) for k, v in json.loads(dep.read_text()).items()}
                            if dep.is_file() else {0: 0})
        # The deployed policy's simulation test runs with the first round (``step``), on the
        # round's thread and paced like a round's work, not while the node is being made:
        # there the phase of the control steps is not known yet, and an unpaced test beside
        # a legged robot's control loop starved it into its fall stop (docs/adapt.md).
        self._flat0 = flat0

    # -------------------------------------------------------------------- files
    def weights_file(self, version: int) -> pathlib.Path:
        """Return the file of a version's flat weights."""
        return self.dir / 'versions' / f'v{version:04d}.npy'

    def _save_weights(self, version: int, flat: np.ndarray) -> None:
        buf = io.BytesIO()
        np.save(buf, np.asarray(flat, np.float32), allow_pickle=False)
        atomic_write_bytes(self.weights_file(version), buf.getvalue())

    def load_weights(self, version: int) -> np.ndarray:
        """Return a version's flat weights."""
        return np.load(self.weights_file(version), allow_pickle=False)

    def _history(self, kind: str, reason: str, **fields) -> None:
        line = json.dumps({'time': round(time.time(), 3), 'round': self.rounds, 'kind': kind,
                           'running': self.fuse.running, 'reason': reason, **fields})
        with open(self.dir / 'history.jsonl', 'a') as f:
            f.write(line + '\n')

    def _deploy(self, version: int) -> tuple[int, int, np.ndarray]:
        msg = max(self.deployments) + 1
        self.deployments[msg] = version
        atomic_write_text(self.dir / 'deployments.json', json.dumps(
            {str(k): v for k, v in self.deployments.items()}, indent=1))
        return msg, version, self.load_weights(version)

    def republish_running(self) -> tuple[int, int, np.ndarray] | None:
        """At a restart: the running version's weights again, unless it is the trained one."""
        return self._deploy(self.fuse.running) if self.fuse.running != 0 else None

    # --------------------------------------------------------------------- data
    def add_chunk(self, tensors: dict, message_version: int) -> None:
        """Take one rollout chunk of the robot (tagged with its weight message's version)."""
        version = self.deployments.get(int(message_version), -1)
        ac = self.bundle.actor_critic
        try:
            steps = chunk_steps(tensors, version, self.reward)
            if steps.obs.shape[1] != ac.obs_dim or steps.actions.shape[1] != ac.act_dim:
                raise AdaptDataError(
                    f'rollout chunk of {steps.obs.shape[1]} observation and '
                    f'{steps.actions.shape[1]} action columns; the policy has {ac.obs_dim} '
                    f'and {ac.act_dim}')
        except AdaptDataError:
            self.bad_chunks += 1
            raise
        if version < 0:
            self.unknown_version_steps += len(steps)
        self.window.add(steps)

    def replay_recordings(self, recordings, topic: str) -> dict:
        """
        Rebuild the window from the recorder's closed bags after a restart; return counts.

        Only rollout chunks recorded after the last scored round (``consumed_ns``) are
        taken, newest bags first until the window is full, then added oldest first: the
        window ends as it would have if the adapter had run on. The bag being written
        (no ``metadata.yaml`` yet) is not read: its chunks are lost to the window, and
        counted as ``open_bags``. A chunk that does not decode or fit is counted.
        """
        from unilab_bag.dataset import batch_tensors
        from unilab_bag.storage import BagError, BagReader
        root = pathlib.Path(recordings)
        out = {'bags': 0, 'open_bags': 0, 'chunks': 0, 'steps': 0, 'bad_chunks': 0,
               'unreadable_bags': 0}
        if not root.is_dir():
            return out
        bags = sorted(p for p in root.iterdir() if p.name.isdigit() and p.is_dir())
        picked, steps = [], 0
        for bag in reversed(bags):
            if steps >= self.window.max_steps:
                break
            if not (bag / 'metadata.yaml').is_file():
                out['open_bags'] += 1
                continue
            chunks = []
            try:
                with BagReader(bag, allow_damaged=True) as reader:
                    if topic in reader.topics:
                        for m, msg in reader.decoded([topic]):
                            if m.timestamp > self.consumed_ns:
                                try:
                                    chunks.append((batch_tensors(msg), int(msg.version)))
                                except BagError:
                                    out['bad_chunks'] += 1
                    out['bad_chunks'] += sum(reader.health.undecodable.values())
            except (BagError, OSError):
                out['unreadable_bags'] += 1
                continue
            out['bags'] += 1
            picked.append(chunks)
            steps += sum(t['rewards'].size for t, _ in chunks if 'rewards' in t)
        for chunks in reversed(picked):
            for tensors, version in chunks:
                try:
                    self.add_chunk(tensors, version)
                except AdaptDataError:
                    out['bad_chunks'] += 1
                    continue
                out['chunks'] += 1
                out['steps'] += int(tensors['rewards'].size)
        return out

    def running_episodes(self) -> int:
        """Return the complete robot episodes the running version acted alone."""
        steps = self.window.steps()
        if steps is None:
            return 0
        score = score_versions(steps, self.reward).get(self.fuse.running)
        return score.episodes if score else 0

    def resume(self) -> str:
        """Let adaptation deploy candidates again after a rollback held it (operator)."""
        decision = self.fuse.resume()
        self._history('resume', decision.reason)
        return decision.reason

    # ------------------------------------------------------------------- rounds
    def start_test(self) -> None:
        """Run the deployed policy's simulation test once (the fuse's first reference)."""
        if self.fuse.versions[0].sim_success is None:
            self.fuse.set_sim_success(0, self.sim_test(self._flat0))
            self._history('start', 'simulation test of the deployed policy', version=0,
                          sim_success=self.fuse.versions[0].sim_success)

    def step(self, seed: int | None = None, taken_ns: int | None = None) -> RoundResult:
        """
        Run one round if the running version has enough episodes (see the module doc).

        ``taken_ns``: wall-clock time the window's newest chunk was taken in (the node's
        inbox drain); what was recorded before it counts as scored once this round
        scores the window (``window.json``).
        """
        running = self.fuse.running
        steps = self.window.steps()
        score = score_versions(steps, self.reward).get(running) if steps is not None else None
        if score is None or score.episodes < self.cfg.min_episodes:
            have = score.episodes if score else 0
            return RoundResult('wait', f'version {running}: {have} of '
                               f'{self.cfg.min_episodes} robot episodes')
        self.start_test()
        self.rounds += 1
        decision = self.fuse.robot_result(running, score.success, score.episodes)
        self._history('robot', decision.reason, version=running,
                      robot_success=score.success, episodes=score.episodes)
        mine = _only_version(steps, running)
        # Scored episodes are not scored again: the window restarts after them (and a
        # restarted adapter replays only what was recorded after this round).
        self.window.clear()
        self.consumed_ns = int(time.time_ns() if taken_ns is None else taken_ns)
        atomic_write_text(self.dir / 'window.json',
                          json.dumps({'consumed_ns': self.consumed_ns}))
        if decision.deploy != running:
            self.log(f'adapt: ALERT: {decision.reason}')
            self._history('rollback', decision.reason, version=decision.deploy, alert=True)
            return RoundResult('rollback', decision.reason, self._deploy(decision.deploy),
                               alert=True)
        if self.fuse.held:
            reason = (f'held at version {running} after a rollback: no fine-tuning until an '
                      'operator resumes adaptation')
            self._history('held', reason)
            return RoundResult('held', reason)
        try:
            flat, metrics = finetune(self.bundle, self.load_weights(running), mine, self.cfg,
                                     self.advantage, self.update,
                                     seed=self.rounds if seed is None else seed,
                                     pause=self.pause)
        except AdaptDataError as exc:
            self._history('failed', str(exc))
            return RoundResult('failed', str(exc))
        version = self.fuse.next_version()
        self._save_weights(version, flat)
        sim = self.sim_test(flat)
        decision = self.fuse.propose(version, sim)
        self._history('candidate', decision.reason, version=version, parent=running,
                      sim_success=sim, deployed=decision.deploy == version,
                      mean_reward=metrics['mean_reward'], steps=metrics['steps'])
        if decision.deploy != version:
            return RoundResult('rejected', f'version {version}: {decision.reason}')
        return RoundResult('deployed', f'version {version}: {decision.reason}',
                           self._deploy(version))


def _consumed_ns(path: pathlib.Path) -> int:
    """Return ``consumed_ns`` of ``window.json`` (0 without one); ValueError naming a bad one."""
    if not path.is_file():
        return 0
    try:
        value = json.loads(path.read_text())['consumed_ns']
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f'{path}: not a window state ({type(exc).__name__}: {exc}); remove '
                         'it to replay every recorded step') from None
    if not isinstance(value, int) or value < 0:
        raise ValueError(f'{path}: consumed_ns must be an integer >= 0, got {value!r}')
    return value


def _only_version(steps: Steps, version: int) -> Steps:
    """Return the steps acted by ``version``; where others' steps are left out, a cut."""
    keep = steps.version == version
    out = Steps(*(getattr(steps, f.name)[keep].copy() for f in dataclasses.fields(Steps)))
    # A step followed by a step not kept ends a segment: no return flows across the gap.
    gap = keep & ~np.append(keep[1:], False)
    out.ends |= gap[keep]
    return out
