# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The graph's step protocol without ROS: simulator -> observation -> actor -> gate -> simulator.

One loop serves every place that runs a policy against the simulator in one
Python process: direct training (the baseline the graph's overhead is
measured against), offline and sim-to-real evaluation, and the benchmarks.
Each step does what the nodes do, in their order: the bridge's state becomes
the perception node's observation (``tasks.observation``) with the step
outcome; the policy's ``PolicyActor`` acts; envs whose episode starts get a
fresh gate reference (as the safety node does for them); the gated command
steps the simulator. Only ROS messaging is left out.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from unilab_bridge.tasks import observation
from unilab_policy.actor import ActOut, Chunk, PolicyActor, StepIn, StepResult


class ZeroPolicy:
    """A stand-in actor that always commands zeros (the 'robot holds still' baseline)."""

    def __init__(self, num_envs: int, act_dim: int):
        self._zero = np.zeros((num_envs, act_dim), np.float32)
        self._none = np.zeros(num_envs, np.float32)

    def step(self, step: StepIn) -> StepResult:
        """Return the zero action for any observation."""
        return StepResult(action=ActOut(step.seq, 0, 0, self._zero, self._none, self._none,
                                        step.episode_starts()))


class SimLoop:
    """
    Step a batched simulator task with an actor and a safety gate, one control step a call.

    ``on_chunk`` receives every finished rollout chunk (on-policy actors) and may
    return the actor's next result (after a weight update the held observation is
    acted on); ``on_step`` sees every new state after the step.
    """

    def __init__(self, task, actor: PolicyActor | ZeroPolicy, gate,
                 on_chunk: Callable[[Chunk], StepResult | None] | None = None,
                 on_step: Callable[[object], None] | None = None):
        self.task, self.actor, self.gate = task, actor, gate
        self.on_chunk, self.on_step = on_chunk, on_step
        self.state = None
        self.seq = 0

    def reset(self, seed: int | None = None):
        """Reset every env; return the first state."""
        self.state = self.task.reset(seed=seed)
        self.seq = 0
        return self.state

    def step(self) -> None:
        """Advance one control step; the state after it is ``self.state``."""
        s = self.state
        result = self.actor.step(StepIn(
            self.seq, observation(s, self.task), s.reward, s.terminated, s.truncated,
            s.episode_return, s.episode_length))
        if result.chunk is not None and self.on_chunk is not None:
            after = self.on_chunk(result.chunk)
            if result.action is None and after is not None:
                result = after
        out = result.action
        if out is None:
            raise RuntimeError('the actor did not act: an on-policy rollout is complete and '
                               'no new weight version arrived (on_chunk must update)')
        starts = s.terminated | s.truncated
        if starts.any():
            # The simulator started new episodes: their first command is limited from the
            # measured joint positions, not from the previous episode's last command (the
            # safety node takes the same starts from the simulator's task state).
            self.gate.reset(starts)
        measured = getattr(s, 'joint_position', None)
        command = self.gate.filter(out.action, state_position=measured,
                                   measured=measured).command
        self.state = self.task.step(command)
        self.seq += 1
        if self.on_step is not None:
            self.on_step(self.state)

    def run(self, until: Callable[[], bool]) -> None:
        """Step until ``until()`` is true (checked before every step)."""
        while not until():
            self.step()


def run_episodes(task, actor, gate, episodes: int, seed: int,
                 on_finished: Callable[[object, np.ndarray], None] | None = None) -> np.ndarray:
    """
    Step until ``episodes`` episodes have finished; return the first ``episodes`` returns.

    ``on_finished(state, done)`` sees each state in which some episodes ended
    (``done`` bool [N]), e.g. to read the task's reward terms at the end.
    """
    returns: list[float] = []

    def on_step(state):
        done = state.terminated | state.truncated
        if done.any():
            returns.extend(state.episode_return[done].tolist())
            if on_finished is not None:
                on_finished(state, done)

    loop = SimLoop(task, actor, gate, on_step=on_step)
    loop.reset(seed=seed)
    loop.run(until=lambda: len(returns) >= episodes)
    return np.asarray(returns[:episodes])
