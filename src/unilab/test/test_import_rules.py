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
                               'unilab_datafactory', 'unilab_interop', 'unilab_view'},
    # Interoperability (rsl_rl, gymnasium): it builds the gate and run directories as
    # training does, so it stands on bringup; a feature, like adapt and the data factory.
    'unilab_interop': BASE | LAYERS | {'unilab_bringup'},
    'unilab_bench': BASE | LAYERS | {'unilab_bag', 'unilab_bringup', 'unilab_adapt',
                                     'unilab_datafactory', 'unilab', 'unilab_interop',
                                     'unilab_view'},
}
#: Modules that alone may import more than their package, each with its reason.
MODULE_ALLOWED = {
    # A bag becomes exactly the tensors the nodes build: the observation code of perception
    # and the action history of the policy, not a copy of them.
    'unilab_bag/unilab_bag/dataset.py': {'unilab_perception', 'unilab_policy'},
}
#: Imports across these rules in test files, each with its reason: (test file, package).
TEST_EXCEPTIONS = {
    # The data factory's live test plays a camera through the benchmark's camera driver
    # (the same double ``bench factory`` uses); it belongs with the factory once split.
    ('unilab/test/test_factory_live.py', 'unilab_bench'),
    # import-policy / export --format rsl_rl are CLI subcommands the interop package adds
    # through the CLI's entry point: its tests run them through the CLI, as a user does.
    ('unilab_interop/test/test_import_spec.py', 'unilab'),
    ('unilab_interop/test/test_roundtrip.py', 'unilab'),
    # Agreement test: the perception inputs match what the bridge's tasks publish.
    ('unilab_perception/test/test_task_inputs.py', 'unilab_bridge'),
    # The tool-speed rule's test runs forward kinematics on the arm model the bridge ships
    # (a real MJCF, not a made-up one); the safety package declares unilab_bridge as a
    # test_depend for it and for test_e2e_bridge.
    ('unilab_safety/test/test_gate_robot.py', 'unilab_bridge'),
}
#: Third-party modules heavy or optional enough to import inside a function.
HEAVY = {
    'ament_flake8', 'ament_index_python', 'ament_pep257', 'cupy', 'cupyx', 'diagnostic_msgs',
    'envpool', 'geometry_msgs', 'gymnasium', 'iceoryx2', 'imageio', 'imageio_ffmpeg',
    'launch', 'launch_ros', 'matplotlib', 'mujoco', 'nav_msgs', 'onnx', 'onnxruntime', 'open3d',
    'PIL', 'rclpy', 'rich', 'rosbags', 'selenium', 'sensor_msgs', 'stable_baselines3', 'std_msgs',
    'std_srvs', 'tensorboard', 'torch', 'trajectory_msgs', 'rsl_rl', 'tensordict'}
#: Function-level imports of light UniLab modules or light libraries, per source file
#: (``_function_level_count``): what is left to move to the top. A count may only fall.
FUNCTION_LEVEL_DEBT = {
    'unilab/unilab/cli.py': 3,
    'unilab_bench/unilab_bench/adapt.py': 4,
    'unilab_bench/unilab_bench/adapt_latency.py': 1,
    'unilab_bench/unilab_bench/datafactory.py': 1,
    'unilab_bench/unilab_bench/learn.py': 2,
    'unilab_bench/unilab_bench/perception.py': 1,
    'unilab_bench/unilab_bench/procs.py': 1,
    'unilab_bench/unilab_bench/safety.py': 2,
    'unilab_bench/unilab_bench/scale.py': 1,
    'unilab_bench/unilab_bench/stress.py': 1,
    'unilab_bridge/unilab_bridge/tasks/registry.py': 1,
    'unilab_core/unilab_core/ros/tensor_topic/publisher.py': 1,
    'unilab_core/unilab_core/transport/channel.py': 1,
    'unilab_datafactory/unilab_datafactory/cli.py': 2,
    'unilab_datafactory/unilab_datafactory/live.py': 1,
    'unilab_datafactory/unilab_datafactory/scene.py': 1,
    'unilab_policy/unilab_policy/networks.py': 1,
    'unilab_safety/unilab_safety/build.py': 2,
    'unilab_safety/unilab_safety/limits.py': 1,
    'unilab_safety/unilab_safety/rt_process.py': 1,
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
                    | MODULE_ALLOWED.get(str(f.relative_to(SRC)), set())
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
            over.append(f'{key}: {count} function-level imports of light UniLab modules or '
                        f'light libraries (allowed {FUNCTION_LEVEL_DEBT.get(key, 0)}): import '
                        'them at the top, or add a heavy optional library to HEAVY')
    assert not over, '\n'.join(over)


def _heavy_modules() -> set:
    """
    Return the UniLab modules that load a HEAVY library when imported.

    A module is heavy when its top level imports a HEAVY library or a heavy UniLab module:
    importing it inside a function keeps a light caller light (the CLI's ``--help``, a
    launch file), which is what a function-level import is for.
    """
    top_level = {m: {n for n, inner in _imports(p, m) if not inner} for m, p in SOURCES.items()}
    heavy = {m for m, names in top_level.items()
             if any(n.split('.')[0] in HEAVY for n in names)}
    while True:
        more = {m for m, names in top_level.items() if m not in heavy and names & heavy}
        if not more:
            return heavy
        heavy |= more


HEAVY_MODULES = _heavy_modules()


def _function_level_count(path: pathlib.Path) -> int:
    """
    Count the function-level imports that are neither stdlib, HEAVY, nor a heavy UniLab module.

    A relative import counts; so does a light UniLab module (one that loads nothing heavy:
    import it at the top) and a light third-party library.
    """
    count = 0
    tree = ast.parse(path.read_text(), str(path))

    def counts(name: str) -> bool:
        top = name.split('.')[0]
        if top in PACKAGES:
            return name not in HEAVY_MODULES
        return top not in sys.stdlib_module_names and top not in HEAVY

    def walk(node, in_function):
        nonlocal count
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                      ast.Lambda))
            if inner and isinstance(child, ast.Import):
                count += sum(counts(a.name) for a in child.names)
            elif inner and isinstance(child, ast.ImportFrom):
                if child.level:
                    count += 1
                else:  # ``from pkg import module`` names the module itself
                    subs = [f'{child.module}.{a.name}' for a in child.names]
                    name = next((s for s in subs if s in SOURCES), child.module)
                    count += counts(name)
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
    allowed = ALLOWED[package].union(*(extra for path, extra in MODULE_ALLOWED.items()
                                       if path.startswith(f'{package}/')))
    assert declared <= allowed, \
        f'{package}/package.xml declares {sorted(declared - allowed)}, forbidden'
