# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The safety fuse of online adaptation: which weight version runs on the robot, and why.

Every fine-tuned candidate passes two tests:

1. **Simulation test** (before it touches the robot): its success on a fixed
   set of simulated episodes (the profile's task and model, a fixed
   evaluation seed) must not be below the running version's by more than
   ``sim_tolerance``; otherwise it is rejected and never deployed.
2. **Robot record** (after it is deployed): its success on the robot over an
   evaluation window. A version more than ``drop_tolerance`` below the best
   robot success seen (the *last good* version's) counts as a drop; after
   ``consecutive_drops`` drops in a row the fuse rolls back to the last good
   version and raises an alert (the seed's rule: 3 fine-tunes, 5 %). A version
   at or above the last good one becomes the last good one. Robot success
   over a few episodes is noisy: with ``drop_z`` > 0 a drop must also exceed
   that many standard errors of the difference of the two success fractions
   (0: the seed's bare threshold). With ``hold_after_rollback`` the fuse
   deploys no further candidate after a rollback until an operator calls
   ``resume``: a learner that just did harm is not trusted again unseen.

An operator may *pin* a version: the fuse then deploys it and proposes no
other until unpinned. The state (every version's scores and decisions, the
running, last good and pinned versions, the drop streak) is written
atomically after every change, so a restarted adapter resumes where it
stopped and an operator can read the history (``fuse.json``). No ROS import.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import NamedTuple

from unilab_core.atomic import atomic_write_text


@dataclasses.dataclass
class VersionRecord:
    """What the fuse knows of one weight version."""

    version: int
    parent: int | None = None      # the version it was fine-tuned from
    sim_success: float | None = None
    robot_success: float | None = None
    robot_episodes: int = 0
    status: str = 'candidate'      # candidate, rejected, deployed, rolled_back
    note: str = ''


class Decision(NamedTuple):
    """What to run next and why (``alert`` True: an operator should look)."""

    deploy: int
    reason: str
    alert: bool = False


class Fuse:
    """Keep / reject / roll back weight versions by their simulation and robot scores."""

    def __init__(self, path: str | pathlib.Path, sim_tolerance: float = 0.05,
                 drop_tolerance: float = 0.05, consecutive_drops: int = 3,
                 drop_z: float = 0.0, hold_after_rollback: bool = False):
        if consecutive_drops < 1:
            raise ValueError(f'consecutive_drops must be >= 1, got {consecutive_drops}')
        self.path = pathlib.Path(path)
        self.sim_tolerance, self.drop_tolerance = float(sim_tolerance), float(drop_tolerance)
        self.consecutive_drops = int(consecutive_drops)
        self.drop_z = float(drop_z)
        self.hold_after_rollback = bool(hold_after_rollback)
        self.held = False
        self.versions: dict[int, VersionRecord] = {}
        self.running = 0
        self.last_good = 0
        self.pinned: int | None = None
        self.drop_streak = 0
        self.rollbacks = 0
        if self.path.is_file():
            self._load()
        else:
            self.versions[0] = VersionRecord(0, status='deployed', note='the trained policy')

    # -- persistence -------------------------------------------------------------------
    def _load(self) -> None:
        data = json.loads(self.path.read_text())
        self.versions = {int(k): VersionRecord(**v) for k, v in data['versions'].items()}
        self.running, self.last_good = int(data['running']), int(data['last_good'])
        self.pinned = data.get('pinned')
        self.drop_streak, self.rollbacks = int(data['drop_streak']), int(data['rollbacks'])
        self.held = bool(data.get('held', False))

    def save(self) -> None:
        """Write the whole state atomically."""
        atomic_write_text(self.path, json.dumps({
            'running': self.running, 'last_good': self.last_good, 'pinned': self.pinned,
            'drop_streak': self.drop_streak, 'rollbacks': self.rollbacks, 'held': self.held,
            'rules': {'sim_tolerance': self.sim_tolerance,
                      'drop_tolerance': self.drop_tolerance,
                      'consecutive_drops': self.consecutive_drops, 'drop_z': self.drop_z,
                      'hold_after_rollback': self.hold_after_rollback},
            'versions': {str(v): dataclasses.asdict(r) for v, r in self.versions.items()},
        }, indent=2))

    # -- decisions ---------------------------------------------------------------------
    def next_version(self) -> int:
        """Return the number the next candidate gets."""
        return max(self.versions) + 1

    def set_sim_success(self, version: int, success: float) -> None:
        """Record a version's simulation-test success (e.g. of the trained policy at start)."""
        self.versions[version].sim_success = float(success)
        self.save()

    def propose(self, version: int, sim_success: float) -> Decision:
        """Judge a fine-tuned candidate by its simulation test; deploy it or keep the running."""
        rec = VersionRecord(version, parent=self.running, sim_success=float(sim_success))
        self.versions[version] = rec
        if self.pinned is not None:
            rec.status, rec.note = 'rejected', f'version {self.pinned} is pinned'
            self.save()
            return Decision(self.running, rec.note)
        if self.held:
            rec.status = 'rejected'
            rec.note = (f'held at version {self.running} after a rollback until an operator '
                        'resumes adaptation')
            self.save()
            return Decision(self.running, rec.note)
        base = self.versions[self.running].sim_success
        if base is not None and sim_success < base - self.sim_tolerance:
            rec.status = 'rejected'
            rec.note = (f'simulation success {sim_success:.3f} below the running version '
                        f'{self.running}\'s {base:.3f} by more than {self.sim_tolerance:g}')
            self.save()
            return Decision(self.running, rec.note)
        rec.status = 'deployed'
        self.running = version
        self.save()
        return Decision(version, f'simulation success {sim_success:.3f} (running version '
                        f'had {base if base is not None else float("nan"):.3f})')

    def robot_result(self, version: int, success: float, episodes: int) -> Decision:
        """Record a deployed version's robot success over a window; keep or roll back."""
        rec = self.versions[version]
        # Several windows of one version: their episode-weighted mean.
        total = rec.robot_episodes + int(episodes)
        old = (rec.robot_success or 0.0) * rec.robot_episodes
        rec.robot_success = (old + float(success) * int(episodes)) / max(total, 1)
        rec.robot_episodes = total
        success = rec.robot_success
        if version != self.running:
            self.save()
            return Decision(self.running, f'version {version} no longer runs')
        good = self.versions[self.last_good].robot_success
        if good is None or version == self.last_good or success >= good:
            if good is None or success >= good:
                self.last_good = version
            self.drop_streak = 0
            self.save()
            best = max(success, good or 0.0)
            return Decision(version, f'robot success {success:.3f} (best {best:.3f})')
        if success < good - self.drop_tolerance - self._noise(rec, success):
            self.drop_streak += 1
        else:
            self.drop_streak = 0
        if self.drop_streak < self.consecutive_drops:
            self.save()
            return Decision(version, f'robot success {success:.3f} vs best {good:.3f} '
                            f'(drop {self.drop_streak} of {self.consecutive_drops})')
        # Roll back: the streak of versions since the last good one all fell short.
        for v, r in self.versions.items():
            if r.status == 'deployed' and v != self.last_good and v > self.last_good:
                r.status = 'rolled_back'
        self.rollbacks += 1
        self.drop_streak = 0
        self.running = self.last_good
        self.held = self.hold_after_rollback
        reason = (f'rolled back to version {self.last_good}: {self.consecutive_drops} '
                  f'fine-tunes in a row more than {self.drop_tolerance:g} below its robot '
                  f'success {good:.3f} (latest {success:.3f})')
        rec.note = reason
        self.save()
        return Decision(self.last_good, reason, alert=True)

    def _noise(self, rec: VersionRecord, success: float) -> float:
        """Return ``drop_z`` standard errors of the difference of two success fractions."""
        if self.drop_z <= 0.0:
            return 0.0
        good = self.versions[self.last_good]
        p = (success * rec.robot_episodes + (good.robot_success or 0.0) * good.robot_episodes) \
            / max(rec.robot_episodes + good.robot_episodes, 1)
        se = (p * (1.0 - p) * (1.0 / max(rec.robot_episodes, 1)
                               + 1.0 / max(good.robot_episodes, 1))) ** 0.5
        return self.drop_z * se

    def resume(self) -> Decision:
        """Let candidates be deployed again after a rollback held adaptation (operator)."""
        self.held = False
        self.save()
        return Decision(self.running, f'adaptation resumed at version {self.running}')

    def pin(self, version: int | None) -> Decision:
        """Pin a known version (deploy it, propose nothing else), or unpin with None."""
        if version is not None and version not in self.versions:
            raise ValueError(f'no version {version} (known: {sorted(self.versions)})')
        self.pinned = version
        if version is not None:
            self.running = version
        self.save()
        return Decision(self.running, f'pinned version {version}' if version is not None
                        else 'unpinned')
