# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Episode starts in simulation, verified against the measured joint positions of the same step.

After an episode start the simulator has moved the joints to a new pose, so
the gate must limit that episode's first command from the measured position,
not from the previous episode's last command. Who may say that an episode
started is part of the gate's contract: only the simulator, on its own task
state (``terminated`` / ``truncated`` of step ``seq``), never the publisher of
actions. A start is applied only together with the joint positions the
simulator published for the same step (the same stamp); a start without them
cannot be verified and is refused (counted), so the rows stay limited from
their last command. A step's action gated before that step's task state
arrived cannot have its starts applied either: counted in ``missing``, and the
safety node waits for the task state of a step the simulator is known to be
publishing (``expects``) rather than gate its action blind. On a robot nothing
here is used: there are no episodes. No ROS import; the safety node feeds it.
"""

from __future__ import annotations

import collections

import numpy as np


class EpisodeStarts:
    """Pair each step's reported episode starts with that step's measured positions."""

    def __init__(self, num_envs: int, n_joints: int, keep: int = 64):
        self.shape = (int(num_envs), int(n_joints))
        self.keep = int(keep)
        self._positions: collections.OrderedDict[int, np.ndarray] = collections.OrderedDict()
        self._starts: collections.OrderedDict[int, tuple[int, np.ndarray]] = (
            collections.OrderedDict())
        self.verified = 0    # steps whose starts were applied
        self.unverified = 0  # steps with starts but no joint positions of that step
        self.bad = 0         # task states whose flags do not fit
        self.missing = 0     # steps gated before their task state arrived
        self.last_seq: int | None = None  # newest step with a task state

    @staticmethod
    def _bound(store: collections.OrderedDict, keep: int) -> None:
        while len(store) > keep:
            store.popitem(last=False)

    def joint_state(self, stamp_ns: int, positions: np.ndarray) -> None:
        """Record the measured positions ``[N, J]`` published with ``stamp_ns`` (copied)."""
        self._positions[int(stamp_ns)] = np.array(positions, dtype=np.float64)
        self._positions.move_to_end(int(stamp_ns))
        self._bound(self._positions, self.keep)

    def task_state(self, seq: int, stamp_ns: int, terminated, truncated) -> bool:
        """Record step ``seq``'s episode starts; False (counted) for flags that do not fit."""
        n = self.shape[0]
        term, trunc = np.asarray(terminated), np.asarray(truncated)
        if term.shape != (n,) or trunc.shape != (n,) or not (
                np.all(np.isfinite(term)) and np.all(np.isfinite(trunc))):
            self.bad += 1
            return False
        self._starts[int(seq)] = (int(stamp_ns), (term > 0.5) | (trunc > 0.5))
        self._starts.move_to_end(int(seq))
        self.last_seq = int(seq) if self.last_seq is None else max(self.last_seq, int(seq))
        self._bound(self._starts, self.keep)
        return True

    def expects(self, seq: int) -> bool:
        """
        Whether step ``seq``'s task state is still to come.

        In lock-step the simulator publishes each step's task state before the
        step's action can exist; when it has published step ``seq - 1`` but not
        ``seq``, that task state is on its way (another process, or a callback
        queued behind the action's) and the action must wait for it.
        """
        return self.last_seq is not None and self.last_seq == int(seq) - 1

    def for_step(self, seq: int) -> tuple[np.ndarray | None, np.ndarray | None]:
        """
        Return ``(starts, positions)`` to apply before gating step ``seq``'s action.

        ``starts`` is a bool ``[N]`` mask and ``positions`` the measured
        ``[N, J]`` of that step, both None when no env starts an episode then,
        or when the start cannot be verified (counted in ``unverified``), or
        when the step's task state has not arrived while the simulator publishes
        task states (counted in ``missing``).
        """
        entry = self._starts.get(int(seq))
        if entry is None and self.last_seq is not None:
            self.missing += 1
        if entry is None or not entry[1].any():
            return None, None
        stamp, starts = entry
        positions = self._positions.get(stamp)
        if positions is None:
            self.unverified += 1
            return None, None
        self.verified += 1
        return starts, positions
