# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab robot-sim``: start the robot double (and optionally a scenario) in this process.

The graph is ``unilab_bringup.graphs.robot_sim_graph``; its parameters go to a ROS parameter
file that the nodes read like any other start (``ros2 run unilab_bridge
robot_double_node --ros-args --params-file FILE`` starts the same node).
"""

from __future__ import annotations

import json
import pathlib
import tempfile
import time

from pydantic import ValidationError
from unilab_bridge.params import LeggedDoubleParams, RobotDoubleParams, ScenarioParams
from unilab_bringup.paths import profile_path
from unilab_core.config import ConfigError, format_errors
from unilab_core.robot_profile import load_profile


def robot_sim_params(robot: str, variant: str = 'nominal', robots: int = 1,
                     time_scale: float = 1.0, seed: int = 0, goals: int = 0,
                     goal_timeout_s: float | None = None, results: str = '',
                     stats: str = '', start: str = '', tilt_rad: float | None = None):
    """
    Return (double, scenario or None) parameters; errors name the option.

    A legged profile (``legged:`` set) gets the legged double (``LeggedDoubleParams``), its
    own 1 kHz simulation with its own variants, alone; ``start`` (lie, stand, tilt) and
    ``tilt_rad`` set its start pose (other robots have none: an error).
    """
    path = profile_path(robot).resolve()
    # A bad profile is a configuration error before any node starts.
    profile = load_profile(path)
    if profile.legged is not None:
        if robots != 1 or goals:
            raise ConfigError(f'robot-sim --robot {robot}: the legged double runs one robot '
                              'and no scenario (leave out --robots and --goals)')
        pose = {'start': start} if start else {}
        if tilt_rad is not None:
            pose['tilt_rad'] = tilt_rad
        try:
            return LeggedDoubleParams(profile=str(path), variant=variant, seed=seed,
                                      time_scale=time_scale, stats_file=stats, **pose), None
        except ValidationError as exc:
            raise ConfigError(format_errors(exc, 'robot-sim')) from None
    if start or tilt_rad is not None:
        raise ConfigError(f'robot-sim --robot {robot}: --start and --tilt-rad are for legged '
                          'robots (a profile with `legged:`)')
    try:
        double = RobotDoubleParams(profile=str(path), variant=variant, robots=robots,
                                   time_scale=time_scale, seed=seed, stats_file=stats)
        scenario = None
        if goals:
            extra = {} if goal_timeout_s is None else {'goal_timeout_s': goal_timeout_s}
            scenario = ScenarioParams(profile=str(path), goals=goals, results_file=results,
                                      seed=seed + 1, **extra)
    except ValidationError as exc:
        raise ConfigError(format_errors(exc, 'robot-sim')) from None
    return double, scenario


def run_robot_sim(double, scenario=None, duration_s: float = 0.0) -> dict:
    """Run the robot-sim graph until the scenario ends, ``duration_s`` passes or Ctrl-C."""
    from unilab_bringup.graphs import robot_sim_graph
    from unilab_bringup.runner import spin_composed
    graph = robot_sim_graph(double, scenario)
    t_end = time.monotonic() + duration_s if duration_s > 0 else float('inf')
    out = {}

    def until(nodes):
        end = next((n for n in nodes if n.get_name() == graph.end_node), None)
        return (end is not None and end.done) or time.monotonic() >= t_end

    def collect(nodes):
        for n in nodes:
            double = n.get_name() in ('robot_double', 'legged_double')
            out['robot_double' if double else 'scenario'] = \
                n.stats() if double else n.report()

    with tempfile.TemporaryDirectory(prefix='unilab-robot-sim-') as tmp:
        params_file = graph.write_params(pathlib.Path(tmp) / 'robot_sim_params.yaml')
        spin_composed(graph, params_file, until=until, on_tick=collect)
    return out


def print_summary(out: dict) -> None:
    """Print the double's counters and the scenario's summary (if any)."""
    print(f'unilab: robot double: {json.dumps(out["robot_double"])}')
    if 'scenario' in out:
        print(f'unilab: scenario: {json.dumps(out["scenario"]["summary"])}')
