# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Helpers for the packages' tests (no ROS import at module level)."""

from __future__ import annotations

import fcntl
import os
import random
import tempfile
import time
from typing import Callable

_LOCK = None  # held for the life of the process: the domain stays ours


def isolate_ros_domain(first: int = 20, last: int = 99) -> int:
    """
    Give this test process its own ROS domain, on this machine only.

    Tests of several packages (and a training run a developer left going in
    domain 0) must not see each other's topics; call this before
    ``rclpy.init``. A domain is claimed with an exclusive lock file, so two
    test processes never share one. Children inherit the environment, so a
    node started in a subprocess joins the test's domain.
    """
    global _LOCK
    if _LOCK is not None:
        return int(os.environ['ROS_DOMAIN_ID'])
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    candidates = list(range(first, last + 1))
    random.Random(os.getpid()).shuffle(candidates)
    for domain in candidates:
        path = os.path.join(tempfile.gettempdir(), f'unilab-ros-domain-{domain}.lock')
        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _LOCK = fd
        os.environ['ROS_DOMAIN_ID'] = str(domain)
        return domain
    raise RuntimeError(f'all ROS domains {first}..{last} are taken by other test processes')


def spin_until(executor, predicate: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """Spin ``executor`` until ``predicate()`` holds; return whether it did before the timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        executor.spin_once(timeout_sec=0.05)
    return predicate()
