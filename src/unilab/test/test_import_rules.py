# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The import rules between UniLab's packages, read from every module with ``ast``.

Imports at the top of a module and inside functions both count. Packages import downward:

- ``unilab_core`` imports no UniLab package but the message definitions
  (``unilab_interfaces``);
- the four layers (bridge, perception, policy, safety) and ``unilab_bag`` import only
  ``unilab_core`` and ``unilab_interfaces``;
- ``unilab_bringup`` imports core and the layers; ``unilab_adapt`` also bag and bringup;
  ``unilab_datafactory`` core, bridge, perception and bag; neither feature the other;
- ``unilab`` (the CLI) may import all of these; only ``unilab_bench`` imports ``unilab``,
  and nothing imports ``unilab_bench`` but its own tests.

A function-level import is for a heavy optional dependency (HEAVY); the ones that are not
are counted per file in FUNCTION_LEVEL_DEBT, which may only shrink. No two modules import
each other, directly or round a circle, and each package.xml declares the UniLab packages
its modules import and none that the rules forbid.
"""

import ast
import pathlib
import sys
import xml.etree.ElementTree as ET

import pytest

SRC = pathlib.Path(__file__).resolve().parents[2]
LAYERS = {'unilab_bridge', 'unilab_perception', 'unilab_policy', 'unilab_safety'}
BASE = {'unilab_core', 'unilab_interfaces'}
#: package -> the UniLab packages its modules may import (besides itself).
ALLOWED = {
    'unilab_interfaces': set(),
    'unilab_core': {'unilab_interfaces'},
    **{layer: BASE for layer in LAYERS},
    'unilab_bag': BASE,
    'unilab_view': BASE | LAYERS,
    'unilab_bringup': BASE | LAYERS,
    'unilab_adapt': BASE | LAYERS | {'unilab_bag', 'unilab_bringup'},
    'unilab_datafactory': BASE | {'unilab_bridge', 'unilab_perception', 'unilab_bag'},
    'unilab': BASE | LAYERS | {'unilab_bag', 'unilab_bringup', 'unilab_adapt',
                               'unilab_datafactory'},
    'unilab_bench': BASE | LAYERS | {'unilab_bag', 'unilab_bringup', 'unilab_adapt',
                                     'unilab_datafactory', 'unilab'},
}
#: Imports across these rules in test files, each with its reason: (test file, package).
TEST_EXCEPTIONS = {
    # The data factory's live test plays a camera through the benchmark's camera driver
    # (the same double ``bench factory`` uses); it belongs with the factory once split.
    ('unilab/test/test_factory_live.py', 'unilab_bench'),
    # Agreement test: the perception inputs match what the bridge's tasks publish.
    ('unilab_perception/test/test_task_inputs.py', 'unilab_bridge'),
    # The tool-speed rule's test runs forward kinematics on the arm model the bridge ships
    # (a real MJCF, not a made-up one); the safety package declares unilab_bridge as a
    # test_depend for it and for test_e2e_bridge.
    ('unilab_safety/test/test_gate_robot.py', 'unilab_bridge'),
    # The view's browser test reads the gate panel's colours from the view's one table.
    ('unilab/test/test_view_browser.py', 'unilab_view'),
}
#: Third-party modules heavy or optional enough to import inside a function.
HEAVY = {
    'ament_flake8', 'ament_index_python', 'ament_pep257', 'cupy', 'cupyx',
    'diagnostic_msgs', 'geometry_msgs', 'gymnasium', 'iceoryx2', 'imageio', 'imageio_ffmpeg',
    'launch', 'launch_ros', 'matplotlib', 'mujoco', 'onnx', 'onnxruntime', 'open3d', 'PIL',
    'rclpy', 'rich', 'rosbags', 'selenium', 'sensor_msgs', 'stable_baselines3', 'std_msgs',
    'std_srvs', 'tensorboard', 'torch', 'trajectory_msgs'}
#: Function-level imports that are neither standard library nor HEAVY (UniLab modules
#: mostly), per source file: the debt the package split pays off. A count may only fall.
FUNCTION_LEVEL_DEBT = {
    'unilab/unilab/adapt/adapter.py': 2,
    'unilab/unilab/adapt/adapter_node.py': 6,
    'unilab/unilab/adapt/finetune.py': 2,
    'unilab/unilab/adapt/sim_robot.py': 8,
    'unilab/unilab/bag/player_node.py': 1,
    'unilab/unilab/bag/recorder_node.py': 3,
    'unilab/unilab/cli.py': 38,
    'unilab/unilab/cli_deploy.py': 2,
    'unilab/unilab/deploy.py': 7,
    'unilab/unilab/doctor/report.py': 7,
    'unilab/unilab/evaluation.py': 6,
    'unilab/unilab/export.py': 4,
    'unilab/unilab/factory/augment.py': 2,
    'unilab/unilab/factory/cli.py': 19,
    'unilab/unilab/factory/label.py': 2,
    'unilab/unilab/factory/live.py': 6,
    'unilab/unilab/factory/scene.py': 2,
    'unilab/unilab/factory/schedule.py': 3,
    'unilab/unilab/graphs.py': 2,
    'unilab/unilab/launch_support.py': 2,
    'unilab/unilab/node_group.py': 3,
    'unilab/unilab/paths.py': 2,
    'unilab/unilab/play.py': 7,
    'unilab/unilab/prepare.py': 3,
    'unilab/unilab/ranks.py': 1,
    'unilab/unilab/robot_sim.py': 5,
    'unilab/unilab/runner.py': 2,
    'unilab/unilab/sim_loop.py': 1,
    'unilab_bench/unilab_bench/adapt.py': 11,
    'unilab_bench/unilab_bench/adapt_latency.py': 4,
    'unilab_bench/unilab_bench/bridge.py': 4,
    'unilab_bench/unilab_bench/command.py': 3,
    'unilab_bench/unilab_bench/datafactory.py': 9,
    'unilab_bench/unilab_bench/deploy.py': 7,
    'unilab_bench/unilab_bench/deploy_baseline.py': 4,
    'unilab_bench/unilab_bench/gae.py': 1,
    'unilab_bench/unilab_bench/graph.py': 9,
    'unilab_bench/unilab_bench/learn.py': 15,
    'unilab_bench/unilab_bench/learn_quad.py': 2,
    'unilab_bench/unilab_bench/perception.py': 8,
    'unilab_bench/unilab_bench/procs.py': 7,
    'unilab_bench/unilab_bench/registry.py': 1,
    'unilab_bench/unilab_bench/safety.py': 10,
    'unilab_bench/unilab_bench/scale.py': 8,
    'unilab_bench/unilab_bench/sim2real.py': 5,
    'unilab_bench/unilab_bench/stress.py': 6,
    'unilab_bench/unilab_bench/stress_probe.py': 1,
    'unilab_bench/unilab_bench/train.py': 3,
    'unilab_bench/unilab_bench/transfer.py': 6,
    'unilab_bench/unilab_bench/transport.py': 7,
    'unilab_bridge/unilab_bridge/bridge_node.py': 2,
    'unilab_bridge/unilab_bridge/camera.py': 1,
    'unilab_bridge/unilab_bridge/robot_double.py': 1,
    'unilab_bridge/unilab_bridge/robot_double_node.py': 2,
    'unilab_bridge/unilab_bridge/robot_probe.py': 1,
    'unilab_bridge/unilab_bridge/scenario.py': 2,
    'unilab_bridge/unilab_bridge/scenario_node.py': 3,
    'unilab_bridge/unilab_bridge/tasks/registry.py': 2,
    'unilab_core/unilab_core/config.py': 1,
    'unilab_core/unilab_core/ros/joint_state_topic.py': 1,
    'unilab_core/unilab_core/ros/tensor_topic/publisher.py': 2,
    'unilab_core/unilab_core/transport/channel.py': 1,
    'unilab_core/unilab_core/transport/stress.py': 3,
    'unilab_core/unilab_core/two_hosts.py': 1,
    'unilab_perception/unilab_perception/perception_node.py': 3,
    'unilab_perception/unilab_perception/task_inputs.py': 1,
    'unilab_policy/unilab_policy/networks.py': 2,
    'unilab_policy/unilab_policy/policy_node.py': 1,
    'unilab_policy/unilab_policy/trainer_node.py': 1,
    'unilab_safety/unilab_safety/build.py': 3,
    'unilab_safety/unilab_safety/limits.py': 1,
    'unilab_safety/unilab_safety/rt_process.py': 1,
    'unilab_safety/unilab_safety/safety_node.py': 1,
}


def _packages():
    return sorted(p.name for p in SRC.iterdir() if (p / 'package.xml').is_file())


PACKAGES = _packages()


def _module_name(path: pathlib.Path) -> str:
    names = list(path.relative_to(SRC).with_suffix('').parts[1:])  # from the package dir
    return '.'.join(names[:-1] if names[-1] == '__init__' else names)


def _imports(path: pathlib.Path, module: str):
    """Yield (imported module, inside a function) for each import of ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    package = module.split('.') if path.name == '__init__.py' else module.split('.')[:-1]

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield alias.name, inner
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[:len(package) - child.level + 1]
                    name = '.'.join(base + ([child.module] if child.module else []))
                else:
                    name = child.module
                yield name, inner
                for alias in child.names:  # ``from pkg import module``
                    yield f'{name}.{alias.name}', inner
            yield from walk(child, inner)
    yield from walk(tree, False)


def _files(package: str, tests: bool):
    root = SRC / package / ('test' if tests else package)
    return sorted(root.rglob('*.py')) if root.is_dir() else []


SOURCES = {_module_name(f): f for p in PACKAGES for f in _files(p, False)}


def _unilab_imports(package: str, tests: bool):
    """Yield (file, imported UniLab package) for each import of another UniLab package."""
    for f in _files(package, tests):
        module = _module_name(f) if not tests else f'{package}_test.{f.stem}'
        for name, _ in _imports(f, module):
            top = name.split('.')[0]
            if top in PACKAGES and top != package:
                yield f, top


@pytest.mark.parametrize('package', PACKAGES)
def test_a_package_imports_only_the_packages_below_it(package):
    assert package in ALLOWED, f'{package} has no import rule here'
    wrong = sorted({f'{f.relative_to(SRC)} imports {top}'
                    for tests in (False, True) for f, top in _unilab_imports(package, tests)
                    if top not in ALLOWED[package]
                    and (str(f.relative_to(SRC)), top) not in TEST_EXCEPTIONS})
    assert not wrong, '\n'.join(wrong)


def test_nothing_imports_the_benchmarks():
    assert all('unilab_bench' not in allowed for p, allowed in ALLOWED.items()
               if p != 'unilab_bench')


def test_a_test_exception_still_applies():
    used = {(str(f.relative_to(SRC)), top) for p in PACKAGES
            for f, top in _unilab_imports(p, True)}
    assert TEST_EXCEPTIONS <= used, f'no longer needed: {sorted(TEST_EXCEPTIONS - used)}'


def test_function_level_imports_are_heavy_optional_dependencies():
    over = []
    for module, path in SOURCES.items():
        count = _function_level_count(path)
        key = str(path.relative_to(SRC))
        if count > FUNCTION_LEVEL_DEBT.get(key, 0):
            over.append(f'{key}: {count} function-level imports of UniLab modules or light '
                        f'libraries (allowed {FUNCTION_LEVEL_DEBT.get(key, 0)}): import '
                        'them at the top, or add a heavy optional library to HEAVY')
    assert not over, '\n'.join(over)


def _function_level_count(path: pathlib.Path) -> int:
    """Count the function-level import statements' names that are not stdlib or HEAVY."""
    count = 0
    tree = ast.parse(path.read_text(), str(path))

    def walk(node, in_function):
        nonlocal count
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda))
            if inner and isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif inner and isinstance(child, ast.ImportFrom):
                names = ['.' if child.level else child.module]
            else:
                names = []
            for name in names:
                top = name.split('.')[0]
                light = top not in sys.stdlib_module_names and top not in HEAVY
                if name == '.' or top in PACKAGES or light:
                    count += 1
            walk(child, inner)
    walk(tree, False)
    return count


def test_no_module_imports_itself_round_a_circle():
    graph = {m: {n for n, _ in _imports(p, m) if n in SOURCES and n != m}
             for m, p in SOURCES.items()}
    circles = _circles(graph)
    assert not circles, '\n'.join(' -> '.join(c) for c in circles)


def _circles(graph: dict) -> list:
    """Return the strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_circle_finder_finds_a_circle():
    assert _circles({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}) == [['a', 'b', 'c']]
    assert _circles({'a': {'b'}, 'b': set()}) == []


def _declared(package: str) -> set:
    root = ET.parse(SRC / package / 'package.xml').getroot()
    return {e.text.strip() for tag in ('depend', 'exec_depend') for e in root.iter(tag)}


@pytest.mark.parametrize('package', PACKAGES)
def test_package_xml_declares_what_the_modules_import_and_nothing_forbidden(package):
    declared = _declared(package) & set(PACKAGES)
    imported = {top for _, top in _unilab_imports(package, False)}
    assert imported <= declared, f'{package}/package.xml lacks {sorted(imported - declared)}'
    assert declared <= ALLOWED[package], \
        f'{package}/package.xml declares {sorted(declared - ALLOWED[package])}, forbidden'
