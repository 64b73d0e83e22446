# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Every third-party import of a package is declared in its package.xml with a key rosdep resolves.

A ROS user installs a workspace's dependencies with ``rosdep install
--from-paths src``: what a package imports but does not declare is missing on
their robot. Each package's modules are read with ``ast`` (imports at the top
and inside functions); every import outside the standard library and UniLab
maps to a rosdep key through ``KEYS``, and the key must be declared
(``exec_depend`` / ``depend`` for the package's own modules, any kind for its
tests). Python packages that no rosdep key provides are in ``PIP_ONLY`` with
what installs them instead. Where the ROS tooling beside the checkout exists
(``../shared/ros/rosdep-check``, the real rosdep, offline against a snapshot of
ros/rosdistro), every package.xml key must resolve for Kilted and Jazzy.
"""

import ast
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

#: Import name -> rosdep key (rosdep/base.yaml, rosdep/python.yaml, or a ROS package).
KEYS = {
    'numpy': 'python3-numpy', 'yaml': 'python3-yaml', 'pydantic': 'python3-pydantic',
    'torch': 'python3-torch', 'mujoco': 'python3-mujoco-pip',
    'gymnasium': 'python3-gymnasium-pip', 'rich': 'python3-rich',
    'rosbags': 'python3-rosbags-pip', 'onnxruntime': 'python3-onnxruntime-pip',
    'tensorboard': 'python3-tensorboard-pip', 'matplotlib': 'python3-matplotlib',
    'PIL': 'python3-pil', 'imageio': 'python3-imageio', 'numba': 'python3-numba',
    'hypothesis': 'python3-hypothesis', 'pytest': 'python3-pytest',
    'selenium': 'python3-selenium', 'open3d': 'python3-open3d-pip',
    'stable_baselines3': 'python3-stable-baselines3-pip',
    # ROS 2 packages: the key is the package's name.
    **{name: name for name in (
        'rclpy', 'std_msgs', 'sensor_msgs', 'geometry_msgs', 'nav_msgs', 'trajectory_msgs',
        'diagnostic_msgs', 'std_srvs', 'builtin_interfaces', 'rcl_interfaces',
        'rosgraph_msgs', 'ament_index_python', 'launch', 'launch_ros', 'ament_pep257',
        'ament_flake8', 'ros2launch')},
}

#: Imports no rosdep key provides: what installs them instead (never a silent gap).
PIP_ONLY = {
    'onnx': 'requirements.txt (export); no rosdep key',
    'imageio_ffmpeg': 'requirements.txt (videos of play); no rosdep key',
    'safetensors': 'requirements.txt (the data factory); no rosdep key',
    'iceoryx2': 'optional transport backend, requirements.txt; no rosdep key',
    'cupy': 'optional CUDA path, requirements-gpu.txt; no rosdep key',
    'cupyx': 'optional CUDA path, requirements-gpu.txt; no rosdep key',
    'rsl_rl': 'requirements.txt (rsl-rl-lib, the interop package); no rosdep key',
    'tensordict': 'requirements.txt (rsl-rl-lib\'s observations); no rosdep key',
    'viser': 'the live view, requirements-view.txt; no rosdep key',
    'yourdfpy': 'the live view, requirements-view.txt; no rosdep key',
    'foxglove': 'the live view\'s Foxglove bridge, requirements-view.txt; no rosdep key',
    'websockets': 'the Foxglove bridge test\'s client, requirements-lock.txt; no rosdep key',
    'mcap': 'requirements.txt (the view\'s MCAP recording test reads the file); no rosdep key',
    'envpool': 'requirements-bench.txt (bench bridge\'s peer, optional); no rosdep key',
}

#: Test helpers one package's tests take from another's test folder (not installed).
TEST_HELPERS = {'conftest', 'ur5e_dh', 'test_factory_browser'}

#: Modules of a runtime package that only tests import: their imports are test imports.
TEST_SUPPORT = {'lint.py', 'pytest_fixtures.py', 'testing.py'}

SRC = next(p for p in pathlib.Path(__file__).resolve().parents
           if (p / 'unilab_core' / 'package.xml').is_file())
PACKAGES = sorted(p.name for p in SRC.iterdir()
                  if (p / 'package.xml').is_file() and (p / p.name).is_dir())


def _imports(files) -> dict[str, set[str]]:
    """Return third-party top-level import name -> the files importing it."""
    found: dict[str, set[str]] = {}
    for f in files:
        local = {x.stem for x in f.parent.glob('*.py')}
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split('.')[0]
                if (top in sys.stdlib_module_names or top.startswith('unilab')
                        or top in local or top == '__future__'):
                    continue
                found.setdefault(top, set()).add(f.name)
    return found


def _declared(package: str) -> tuple[set[str], set[str]]:
    """Return (runtime keys, every key) of a package.xml."""
    root = ET.parse(SRC / package / 'package.xml').getroot()
    run = {e.text.strip() for e in root if e.tag in ('exec_depend', 'depend')}
    every = run | {e.text.strip() for e in root if e.tag.endswith('depend')}
    return run, every


@pytest.mark.parametrize('package', PACKAGES)
def test_every_import_is_declared_with_a_rosdep_key(package):
    modules = sorted((SRC / package / package).rglob('*.py'))
    runtime = _imports(m for m in modules if m.name not in TEST_SUPPORT)
    tests = _imports([m for m in modules if m.name in TEST_SUPPORT]
                     + sorted((SRC / package / 'test').rglob('*.py')))
    tests.update(_imports(sorted((SRC / package / 'launch').glob('*.py'))))
    run_keys, every_key = _declared(package)
    unknown = sorted((set(runtime) | set(tests)) - set(KEYS) - set(PIP_ONLY) - TEST_HELPERS)
    assert not unknown, f'{package}: imports with no rosdep key or pip-only entry: {unknown}'
    missing_run = sorted(f'{KEYS[m]} ({", ".join(sorted(runtime[m]))})'
                         for m in runtime if m in KEYS and KEYS[m] not in run_keys)
    missing_test = sorted(f'{KEYS[m]} ({", ".join(sorted(tests[m]))})'
                          for m in tests if m in KEYS and KEYS[m] not in every_key)
    assert not missing_run, f'{package}/package.xml lacks exec_depend: {missing_run}'
    assert not missing_test, f'{package}/package.xml lacks test_depend: {missing_test}'


ROSDEP_CHECK = SRC.parent.parent / 'shared' / 'ros' / 'rosdep-check'


@pytest.mark.skipif(not ROSDEP_CHECK.is_file(),
                    reason='the ROS tooling (../shared/ros/rosdep-check) is not beside this '
                    'checkout')
@pytest.mark.parametrize('distro', ['kilted', 'jazzy'])
def test_every_package_xml_key_resolves_with_rosdep(distro):
    proc = subprocess.run(['bash', str(ROSDEP_CHECK), str(SRC), distro], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
