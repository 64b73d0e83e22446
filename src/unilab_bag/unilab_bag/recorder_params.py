# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The recorder node's parameters when a graph starts it (a typed model, no ROS)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from unilab_core.config import Section


class RecorderNodeParams(Section):
    """Parameters of the recorder node (``unilab_bag.recorder_node``) in a graph."""

    out: str = Field('', min_length=1, description='Bag directory (rotating: numbered bags '
                     'inside it).')
    topics: list[str] = Field(default_factory=list, min_length=1,
                              description='Topics to record.')
    storage: Literal['mcap', 'sqlite3'] = Field('mcap', description='rosbag2 storage.')
    flush_period_s: float = Field(1.0, gt=0.0, description='Flush to disk this often.')
    rotate_mb: float = Field(0.0, ge=0.0, description='Start a new bag after this many MB '
                             '(0 = one bag).')
    keep_mb: float = Field(1024.0, gt=0.0, description='Delete the oldest closed bags beyond '
                           'this many MB in total (with rotate_mb).')
    sched_idle: bool = Field(False, description='Write under SCHED_IDLE (Linux): only when no '
                             'other process wants the core (beside a robot\'s control loop; '
                             'the subscriptions\' queues, 1000 messages each, hold what '
                             'arrives meanwhile).')
