# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Operator scenarios without ROS: goals for K robots and a score per goal.

Reach (``task_inputs.kind: reach``): each robot gets ``goals`` target positions one
after another, sampled by the task's own reachable-target sampler
(``sample_targets``: arm6_reach takes forward kinematics of random joint
configurations, ur5e_reach its workspace box; every goal is reachable). The tool
position is computed from the robot's measured joints (``SiteKinematics`` on the
profile's ``model_file`` and ``task_inputs.tool_site``), as an operator's tools
would. A goal succeeds when the tool comes within ``tolerance_m`` before
``goal_timeout_s``; then the next goal follows at once. 5 cm is the success radius
of ``unilab bench sim2real``.

Walk (``kind: walk``), a minimal scenario: each goal is a forward velocity (from the
task's command range) held for ``goal_timeout_s``; it succeeds when the base never
falls (height from odometry above the task's fall height) and the mean error of
the forward speed (base frame) over the goal's second half is below
``speed_tolerance_mps``. No turning, no lateral goals.

Times are simulated seconds (the node scales its clock by ``time_scale``).
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class _Running:
    """One robot's current goal."""

    index: int = -1
    start: float = 0.0
    best: float = float('inf')  # reach: closest distance; walk: unused
    last: float = float('nan')  # reach: last distance
    errors: list = dataclasses.field(default_factory=list)  # walk: speed errors
    fallen: bool = False


class _Scenario:
    """Goal bookkeeping shared by the scenarios: one goal per robot at a time."""

    def __init__(self, goals: np.ndarray, timeout_s: float):
        self.goals = np.asarray(goals, dtype=np.float64)  # [K, G, ...]
        self.num_robots, self.num_goals = self.goals.shape[:2]
        self.timeout_s = float(timeout_s)
        self.running = [_Running() for _ in range(self.num_robots)]
        self.results: list[dict] = []

    @property
    def done(self) -> bool:
        """Return whether every robot has finished all its goals."""
        return len(self.results) == self.num_robots * self.num_goals

    def begin(self, t: float) -> list[tuple[int, np.ndarray]]:
        """Start every robot's first goal at time ``t``; return ``(robot, goal)`` to publish."""
        return [self._next(k, t) for k in range(self.num_robots)]

    def _next(self, k: int, t: float) -> tuple[int, np.ndarray] | None:
        r = self.running[k]
        if r.index + 1 >= self.num_goals:
            r.index = self.num_goals
            return None
        self.running[k] = _Running(index=r.index + 1, start=float(t))
        return k, self.goals[k, r.index + 1]

    def active(self, k: int) -> bool:
        """Return whether robot ``k`` is working on a goal."""
        return 0 <= self.running[k].index < self.num_goals

    def _finish(self, k: int, t: float, success: bool, **extra) -> list:
        r = self.running[k]
        self.results.append({'robot': k, 'goal': r.index,
                             'target': self.goals[k, r.index].round(4).tolist(),
                             'success': bool(success), 'elapsed_s': round(t - r.start, 4),
                             **extra})
        nxt = self._next(k, t)
        return [nxt] if nxt is not None else []

    def summary(self) -> dict:
        """Return goals scored, successes and the success fraction (overall and per robot)."""
        ok = [r['success'] for r in self.results]
        per = {}
        for k in range(self.num_robots):
            mine = [r['success'] for r in self.results if r['robot'] == k]
            per[str(k)] = round(float(np.mean(mine)), 4) if mine else None
        return {'goals_scored': len(ok), 'goals_planned': self.num_robots * self.num_goals,
                'successes': int(sum(ok)),
                'success_fraction': round(float(np.mean(ok)), 4) if ok else None,
                'success_fraction_per_robot': per}


class ReachScenario(_Scenario):
    """Reach goals: success when the tool is within ``tolerance_m`` before the time-out."""

    kind = 'reach'

    def __init__(self, goals: np.ndarray, tool_position, timeout_s: float,
                 tolerance_m: float = 0.05):
        """``goals`` [K, G, 3]; ``tool_position(q [J]) -> [3]`` (forward kinematics)."""
        super().__init__(goals, timeout_s)
        self.tool_position = tool_position
        self.tolerance_m = float(tolerance_m)

    def on_joints(self, k: int, t: float, q) -> list[tuple[int, np.ndarray]]:
        """Score robot ``k``'s measured joints ``q`` at time ``t``; return new goals."""
        if not self.active(k):
            return []
        r = self.running[k]
        dist = float(np.linalg.norm(np.asarray(self.tool_position(q)) - self.goals[k, r.index]))
        r.last, r.best = dist, min(r.best, dist)
        if t - r.start > self.timeout_s:
            return self._time_out(k, t)
        if dist < self.tolerance_m:
            return self._finish(k, t, True, time_to_reach_s=round(t - r.start, 4),
                                final_distance_m=round(dist, 4),
                                min_distance_m=round(r.best, 4))
        return []

    def on_time(self, t: float) -> list[tuple[int, np.ndarray]]:
        """Time out goals past ``goal_timeout_s`` (also without joint states)."""
        out = []
        for k in range(self.num_robots):
            if self.active(k) and t - self.running[k].start > self.timeout_s:
                out += self._time_out(k, t)
        return out

    def _time_out(self, k, t):
        r = self.running[k]
        return self._finish(k, t, False, time_to_reach_s=None,
                            final_distance_m=None if np.isnan(r.last) else round(r.last, 4),
                            min_distance_m=None if np.isinf(r.best) else round(r.best, 4))

    def summary(self) -> dict:
        """Add the mean time to reach of the successful goals."""
        out = super().summary()
        times = [r['time_to_reach_s'] for r in self.results if r['success']]
        out['mean_time_to_reach_s'] = round(float(np.mean(times)), 4) if times else None
        out['tolerance_m'] = self.tolerance_m
        return out


class WalkScenario(_Scenario):
    """Velocity goals (forward speed, m/s) held for ``timeout_s`` each; see the module doc."""

    kind = 'walk'

    def __init__(self, goals: np.ndarray, timeout_s: float, speed_tolerance_mps: float = 0.1,
                 fall_height_m: float = 0.14):
        """``goals`` [K, G] forward speeds."""
        super().__init__(goals, timeout_s)
        self.speed_tolerance_mps = float(speed_tolerance_mps)
        self.fall_height_m = float(fall_height_m)

    def on_odometry(self, k: int, t: float, forward_speed: float,
                    height: float) -> list[tuple[int, np.ndarray]]:
        """Record robot ``k``'s base forward speed (base frame) and height at time ``t``."""
        if not self.active(k):
            return []
        r = self.running[k]
        r.fallen |= height < self.fall_height_m
        if t - r.start >= 0.5 * self.timeout_s:
            r.errors.append(abs(forward_speed - float(self.goals[k, r.index])))
        return self.on_time(t)

    def on_time(self, t: float) -> list[tuple[int, np.ndarray]]:
        """Score goals whose holding time is over."""
        out = []
        for k in range(self.num_robots):
            r = self.running[k]
            if self.active(k) and t - r.start >= self.timeout_s:
                err = float(np.mean(r.errors)) if r.errors else float('inf')
                out += self._finish(k, t, not r.fallen and err < self.speed_tolerance_mps,
                                    mean_speed_error_mps=round(err, 4) if r.errors else None,
                                    fallen=r.fallen)
        return out


def sample_reach_goals(task_name: str, robots: int, goals: int, seed: int) -> np.ndarray:
    """Return [robots, goals, 3] targets from the task's own sampler (robot-major)."""
    from unilab_bridge.tasks import make_task
    with make_task(task_name, 1, seed=seed) as task:
        if not hasattr(task, 'sample_targets'):
            raise ValueError(f'task {task_name} has no reachable-target sampler '
                             '(sample_targets)')
        return task.sample_targets(robots * goals).reshape(robots, goals, 3)


def sample_walk_goals(task_name: str, robots: int, goals: int, seed: int) -> np.ndarray:
    """Return [robots, goals] forward speeds from the task's command range."""
    from unilab_bridge.tasks import make_task
    with make_task(task_name, 1, seed=seed) as task:
        lo, hi = getattr(task, 'command_velocity', (0.0, 0.0))
    return np.random.default_rng(seed).uniform(lo, hi, (robots, goals))
