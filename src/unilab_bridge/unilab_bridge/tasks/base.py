# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The batched-task interface shared by the simulator bridge and the policy side."""

import abc
import dataclasses

import numpy as np

# ros2_control joint_limits keys every task must report for every joint.
JOINT_LIMIT_KEYS = (
    'has_position_limits', 'min_position', 'max_position',
    'has_velocity_limits', 'max_velocity',
    'has_acceleration_limits', 'max_acceleration',
    'has_effort_limits', 'max_effort',
)


@dataclasses.dataclass
class StepState:
    """
    Batched state of all envs after a reset or a step.

    After a step, ``reward``, ``terminated``, ``truncated``, ``episode_return`` and
    ``episode_length`` describe the transition just taken, while the joint arrays and
    ``extras`` of envs that finished are already the observation after their auto-reset.
    """

    joint_position: np.ndarray  # [N, J] float64, rad or m
    joint_velocity: np.ndarray  # [N, J] float64
    joint_effort: np.ndarray  # [N, J] float64, actuator force
    extras: np.ndarray  # [N, E] float32, task-specific observation
    reward: np.ndarray  # [N] float32
    terminated: np.ndarray  # [N] bool
    truncated: np.ndarray  # [N] bool
    episode_return: np.ndarray  # [N] float32, NaN where the episode did not just end
    episode_length: np.ndarray  # [N] int32, 0 where the episode did not just end
    sim_time: float  # seconds simulated since the batch was reset

    @property
    def done(self):
        """Return which envs finished their episode in this step."""
        return self.terminated | self.truncated


class EpisodeCounter:
    """
    Per-env episode length and return, and the time limit that truncates an episode.

    Every task ends a control step with ``end_step`` and resets an env's counters
    with ``reset(i)``; a time-out never overrides a termination. ``max_episode_steps``
    None means no time limit (a task in its no-reset mode, see ``auto_reset``).
    """

    def __init__(self, num_envs: int, max_episode_steps: int | None):
        self.max_episode_steps = max_episode_steps
        self.steps = np.zeros(num_envs, dtype=np.int32)
        self.returns = np.zeros(num_envs, dtype=np.float64)

    def end_step(self, reward, terminated, truncated=None):
        """Count one step; return (truncated, done, episode_return, episode_length)."""
        self.steps += 1
        self.returns += reward
        if self.max_episode_steps is None:
            time_out = np.zeros_like(terminated)
        else:
            time_out = (self.steps >= self.max_episode_steps) & ~terminated
        truncated = time_out if truncated is None else truncated | time_out
        done = terminated | truncated
        return (truncated, done, np.where(done, self.returns, np.nan),
                np.where(done, self.steps, 0))

    def reset(self, i) -> None:
        """Start a new episode for env(s) ``i``."""
        self.steps[i] = 0
        self.returns[i] = 0.0


def observation(state, task):
    """
    Build the policy observation [N, obs_dim] float32 from a state.

    Tasks that use the joint state observe concat(joint_position, joint_velocity, extras);
    the others (e.g. wrapped gymnasium envs) carry their whole observation in extras.
    """
    extras = np.asarray(state.extras, dtype=np.float32)
    if not task.uses_joint_state:
        return extras
    return np.concatenate(
        [np.asarray(state.joint_position, dtype=np.float32),
         np.asarray(state.joint_velocity, dtype=np.float32),
         extras], axis=1)


class BatchedTask(abc.ABC):
    """
    N copies of one simulated task stepped in lockstep, with auto-reset.

    UniLab's own tasks take ``auto_reset=False`` (``make_task(..., auto_reset=False)``):
    the robot double's mode, in which no episode ever ends and no env is reset (a real
    robot does not teleport). Subclasses set the attributes below in their constructor
    and implement reset/step/close.
    """

    name: str
    num_envs: int
    joint_names: list
    action_dim: int
    extras_dim: int
    uses_joint_state: bool
    command_interface: str  # 'position' (rad targets) or 'effort' (actuator ctrl)
    control_dt: float
    max_episode_steps: int
    joint_limits: dict
    action_low: np.ndarray
    action_high: np.ndarray
    #: The policy output's meaning the task suggests (``ModelSection.action_mode`` 'task'):
    #: 'absolute' commands, 'relative' position targets ``q + action_scale * action`` or
    #: 'offset' targets ``action_offset + action_scale * action``.
    action_mode: str = 'absolute'
    action_scale: tuple = ()
    action_offset: tuple = ()  # 'offset': the pose actions are around
    #: |action| is clipped to this before a relative or offset map (0: no clip).
    action_clip: float = 0.0
    #: The last this many columns of ``extras`` are simulator truth for the critic only
    #: (privileged: e.g. the trunk's true velocity); the actor never reads them
    #: (``ModelSection.critic_only``, set by the graph from this).
    critic_only_extras: int = 0
    #: Where the task's goals lie (``unilab_core.graph.Workspace``: a box in the robot's
    #: base frame), or None where the task has no goals. Checkpoints carry it; on a robot
    #: goals outside it are refused (docs/safety.md, "On a robot").
    workspace = None

    @property
    def obs_dim(self):
        """Return the size of the policy observation built by observation()."""
        if self.uses_joint_state:
            return 2 * len(self.joint_names) + self.extras_dim
        return self.extras_dim

    @abc.abstractmethod
    def reset(self, seed=None):
        """Reset all envs and return their StepState; a seed makes the batch reproducible."""

    @abc.abstractmethod
    def step(self, command):
        """Apply a [num_envs, action_dim] command, advance one control step, auto-reset."""

    def close(self):
        """Release simulator resources."""

    def goal_positions(self):
        """Return every env's goal position [N, 3] in the workspace's frame, or None."""
        return None

    def check_command(self, command):
        """Return the command as a clipped float64 array, or raise ValueError."""
        command = np.asarray(command, dtype=np.float64)
        expected = (self.num_envs, self.action_dim)
        if command.shape != expected:
            raise ValueError(
                f'{self.name}: command must have shape {expected} '
                f'(num_envs, action_dim), got {command.shape}')
        if not np.all(np.isfinite(command)):
            raise ValueError(f'{self.name}: command contains NaN or inf')
        # Actuators saturate at their range anyway; clipping here keeps rewards such as the
        # action-rate penalty in terms of what was actually applied.
        return np.clip(command, self.action_low, self.action_high)

    def __enter__(self):
        """Return self for use in a with statement."""
        return self

    def __exit__(self, *exc):
        """Close the task when leaving a with statement."""
        self.close()
