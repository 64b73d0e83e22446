# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``python -m unilab_bringup.node_group GROUP.json``: several nodes of a graph in one process.

``unilab_bringup.runner.spin_processes`` starts a graph's ``together`` nodes this way
(the robot's control loop of ``unilab adapt``: perception, policy and safety on
one executor, as ``unilab deploy`` composes them, while the recorder and the
adapter run in their own processes). The JSON, written by ``group_command``,
names the parameter file and each node's module, class and ROS arguments.
"""

from __future__ import annotations

import json
import pathlib
import sys

from unilab_core.atomic import atomic_write_text
from unilab_core.entry import import_or_stop
from unilab_core.graph import NodeSpec


def group_command(graph, names: tuple[str, ...], params_file: pathlib.Path,
                  spec_path: pathlib.Path) -> list[str]:
    """Write the group's JSON to ``spec_path``; return the command that runs the group."""
    nodes = [{'module': s.module, 'node_class': s.node_class, 'name': s.name,
              'ros_args': graph.ros_args(s.name)} for s in graph.nodes if s.name in names]
    atomic_write_text(spec_path, json.dumps({'params_file': str(params_file),
                                             'nodes': nodes}, indent=1))
    return [sys.executable, '-m', 'unilab_bringup.node_group', str(spec_path)]


def main(argv=None) -> None:
    """Run the nodes the JSON names, composed on one executor, until one is done."""
    # rclpy and the nodes' modules take seconds to import: a stop meanwhile ends quietly.
    runtime = import_or_stop('unilab_core.ros.runtime')
    argv = sys.argv[1:] if argv is None else argv
    spec = json.loads(pathlib.Path(argv[0]).read_text())
    specs = [NodeSpec(n['name'], 'unilab_bringup', '', n['module'], n['node_class'])
             for n in spec['nodes']]
    ros_args = {n['name']: n['ros_args'] for n in spec['nodes']}
    runtime.spin_process(lambda: runtime.create_composed(specs, ros_args.get),
                         ['--ros-args', '--params-file', spec['params_file']])


if __name__ == '__main__':
    main()
