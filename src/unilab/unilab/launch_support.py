# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""What ``train.launch.py`` starts, as plain data (testable without launch_ros)."""

from __future__ import annotations

from unilab_core.graph import Graph


def launch_node_kwargs(graph: Graph, params_file) -> list[dict]:
    """
    Return the ``launch_ros.actions.Node`` keyword arguments for every node of ``graph``.

    They come from the same graph description (:mod:`unilab.graphs`) and the
    same parameter file the CLI uses (namespace and remappings included), so
    the starters agree.
    """
    return [
        {'package': s.package, 'executable': s.executable, 'name': s.name,
         'namespace': graph.namespace or '',
         'remappings': list(graph.remappings.get(s.name, {}).items()),
         'parameters': [str(params_file)], 'output': 'screen'}
        for s in graph.nodes
    ]


def launch_overrides(task: str, steps: str, num_envs: str, seed: str) -> dict:
    """Turn launch arguments (strings, '' = unset) into config overrides."""
    out = {}
    if task:
        out['run.task'] = task
    if steps:
        out['run.total_steps'] = int(steps)
    if num_envs:
        out['rollout.num_envs'] = int(num_envs)
    if seed:
        out['run.seed'] = int(seed)
    return out
