# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Look tasks up by name: UniLab's own tasks first, then gymnasium MuJoCo env ids."""

from unilab_bridge.tasks.arm6_reach import Arm6Reach
from unilab_bridge.tasks.arm6_reach_velocity import Arm6ReachVelocity
from unilab_bridge.tasks.go2_walk import Go2Forward, Go2Walk
from unilab_bridge.tasks.gym_adapter import gym_mujoco_ids, GymBatchedTask, is_gym_mujoco_id
from unilab_bridge.tasks.quad12_walk import Quad12Walk
from unilab_bridge.tasks.quad_walk import QuadWalk
from unilab_bridge.tasks.ur5e_reach import Ur5eReach

DEFAULT_TASK = 'arm6_reach'

# name -> factory(num_envs, seed, **options)
_TASKS = {
    'arm6_reach': Arm6Reach,
    'arm6_reach_velocity': Arm6ReachVelocity,
    'go2_forward': Go2Forward,
    'go2_walk': Go2Walk,
    'quad_walk': QuadWalk,
    'quad12_walk': Quad12Walk,
    'ur5e_reach': Ur5eReach,
}

GYM_NOTE = 'any registered gymnasium MuJoCo env id (e.g. Hopper-v5) also works'


class UnknownTaskError(ValueError):
    """Raised by make_task for a name that is neither ours nor a gymnasium MuJoCo id."""


def available_tasks():
    """Return UniLab's own task names; see GYM_NOTE for the gymnasium ones."""
    return sorted(_TASKS)


def make_task(name, num_envs, seed=0, disturbances=None, **options):
    """
    Build the task ``name`` with ``num_envs`` parallel envs; options go to its factory.

    ``disturbances`` (a ``DisturbancesSection`` or its dict) wraps the task in a
    DisturbedTask when its master switch is on; the plain task is returned otherwise.
    """
    if name in _TASKS:
        task = _TASKS[name](num_envs, seed=seed, **options)
    elif is_gym_mujoco_id(name):
        task = GymBatchedTask(name, num_envs, seed=seed, **options)
    else:
        task = None
    if task is not None:
        if disturbances is None:
            return task
        from unilab_core.config import DisturbancesSection
        if isinstance(disturbances, dict):
            disturbances = DisturbancesSection.model_validate(disturbances)
        if not disturbances.enabled:
            return task  # the wrapper's module is not even imported (bridge cold start)
        from unilab_bridge.tasks.disturbed import DisturbedTask
        return DisturbedTask(task, disturbances, seed=seed)
    examples = [k for k in gym_mujoco_ids() if k.endswith('-v5')][:6]
    raise UnknownTaskError(
        f'unknown task {name!r}; available tasks: {", ".join(available_tasks())}; '
        f'{GYM_NOTE}, e.g. {", ".join(examples)}')
