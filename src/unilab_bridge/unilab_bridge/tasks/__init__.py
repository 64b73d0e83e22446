# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Batched simulation tasks and the registry that builds them by name."""

from unilab_bridge.tasks.base import BatchedTask, observation, StepState
from unilab_bridge.tasks.registry import (
    available_tasks, DEFAULT_TASK, GYM_NOTE, make_task, UnknownTaskError)

__all__ = [
    'available_tasks', 'BatchedTask', 'DEFAULT_TASK', 'GYM_NOTE', 'make_task', 'observation',
    'StepState', 'UnknownTaskError',
]
