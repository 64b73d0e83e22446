# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Look tasks up by name: UniLab's own tasks first, then gymnasium MuJoCo env ids."""

from unilab_bridge.tasks.arm6_reach import Arm6Reach
from unilab_bridge.tasks.gym_adapter import gym_mujoco_ids, GymBatchedTask, is_gym_mujoco_id

DEFAULT_TASK = 'arm6_reach'

# name -> factory(num_envs, seed, **options)
_TASKS = {
    'arm6_reach': Arm6Reach,
}

GYM_NOTE = 'any registered gymnasium MuJoCo env id (e.g. Hopper-v5) also works'


class UnknownTaskError(ValueError):
    """Raised by make_task for a name that is neither ours nor a gymnasium MuJoCo id."""


def available_tasks():
    """Return UniLab's own task names; see GYM_NOTE for the gymnasium ones."""
    return sorted(_TASKS)


def make_task(name, num_envs, seed=0, **options):
    """Build the task ``name`` with ``num_envs`` parallel envs; options go to its factory."""
    if name in _TASKS:
        return _TASKS[name](num_envs, seed=seed, **options)
    if is_gym_mujoco_id(name):
        return GymBatchedTask(name, num_envs, seed=seed, **options)
    examples = [k for k in gym_mujoco_ids() if k.endswith('-v5')][:6]
    raise UnknownTaskError(
        f'unknown task {name!r}; available tasks: {", ".join(available_tasks())}; '
        f'{GYM_NOTE}, e.g. {", ".join(examples)}')
