# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Helpers of the robot-double node tests: start nodes, spin until, a tiny IK."""

import pathlib
import time

import numpy as np
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter

ROBOTS = pathlib.Path(__file__).resolve().parents[2] / 'unilab_bringup' / 'config' / 'robots'


def profile_file(name: str) -> str:
    """Return the path of a shipped robot profile."""
    return str(ROBOTS / f'{name}.yaml')


def overrides(**params) -> list:
    """Return ``parameter_overrides`` for a node from keyword arguments."""
    return [Parameter(k, value=v) for k, v in params.items()]


class Graph:
    """Nodes on one executor in a test's context; ``close()`` destroys them."""

    def __init__(self, context):
        self.context = context
        self.executor = SingleThreadedExecutor(context=context)
        self.nodes = []

    def add(self, node):
        """Add a node to the executor; return it."""
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def spin_until(self, condition, timeout_s: float = 30.0) -> bool:
        """Spin until ``condition()`` is true; return it (False on the time-out)."""
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if condition():
                return True
            self.executor.spin_once(timeout_sec=0.01)
        return bool(condition())

    def spin_for(self, seconds: float) -> None:
        """Spin for ``seconds``."""
        self.spin_until(lambda: False, seconds)

    def close(self) -> None:
        """Close (nodes with ``close``) and destroy every node, shut the executor down."""
        self.executor.shutdown()
        for node in self.nodes:
            if hasattr(node, 'close'):
                node.close()
            node.destroy_node()


def solve_ik(fk, goal, lower, upper, iterations=100, restarts=10) -> np.ndarray:
    """
    Return joints whose ``fk(q)`` is at ``goal``: damped least squares, numeric Jacobian.

    Starts from zero, then from seeded random poses until one converges (a start can
    get stuck on a joint limit).
    """
    rng = np.random.default_rng(0)
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    best, best_err = None, np.inf
    for attempt in range(restarts):
        q = np.zeros(len(lower)) if attempt == 0 else rng.uniform(0.5 * lower, 0.5 * upper)
        for _ in range(iterations):
            x = fk(q)
            err = np.asarray(goal) - x
            if np.linalg.norm(err) < 1e-4:
                break
            jac = np.empty((3, len(q)))
            for j in range(len(q)):
                dq = np.zeros(len(q))
                dq[j] = 1e-5
                jac[:, j] = (fk(q + dq) - x) / 1e-5
            step = jac.T @ np.linalg.solve(jac @ jac.T + 1e-4 * np.eye(3), err)
            q = np.clip(q + step, lower, upper)
        err = np.linalg.norm(np.asarray(goal) - fk(q))
        if err < best_err:
            best, best_err = q, err
        if err < 1e-3:
            break
    return best
