# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Copyright-header and package.xml checks used by every package's lint test.

ament_copyright and ament_xmllint are not published for pip-only installs,
so the project carries these two small checks itself (no ROS dependency).
"""

from __future__ import annotations

import pathlib
import xml.etree.ElementTree as ET

HEADER_MARKERS = ('Copyright', 'SPDX-License-Identifier: Apache-2.0')
SKIP_DIRS = {'build', 'install', 'log', '__pycache__', '.pytest_cache'}


def check_copyright(root: str | pathlib.Path) -> list[str]:
    """Return the Python files under ``root`` lacking the copyright header."""
    missing = []
    for path in sorted(pathlib.Path(root).rglob('*.py')):
        if SKIP_DIRS.intersection(path.parts):
            continue
        head = '\n'.join(path.read_text().splitlines()[:5])
        if not all(m in head for m in HEADER_MARKERS):
            missing.append(f'{path}: missing copyright / SPDX header')
    return missing


REQUIRED = ('name', 'version', 'description', 'maintainer', 'license')


def check_package_xml(path: str | pathlib.Path) -> list[str]:
    """Check a package.xml is well formed, format 3, with the required tags."""
    path = pathlib.Path(path)
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        return [f'{path}: not well-formed XML: {exc}']
    problems = []
    if root.tag != 'package' or root.get('format') != '3':
        problems.append(f'{path}: root must be <package format="3">')
    for tag in REQUIRED:
        if root.find(tag) is None or not (root.find(tag).text or '').strip():
            problems.append(f'{path}: missing <{tag}>')
    if root.find('export/build_type') is None:
        problems.append(f'{path}: missing <export><build_type>')
    name = root.findtext('name', '')
    if name and name != path.parent.name:
        problems.append(f'{path}: <name>{name}</name> differs from folder {path.parent.name}')
    return problems


#: The last line of the flake8 child's output: this marker, then its errors as JSON.
_FLAKE8_MARK = 'unilab-flake8-errors '
_FLAKE8_CHILD = (
    'import json, sys\n'
    'from ament_flake8.main import main_with_errors\n'
    'rc, errors = main_with_errors(argv=[sys.argv[1]])\n'
    f'print({_FLAKE8_MARK!r} + json.dumps(list(errors) if rc else []))\n')


def ament_flake8_errors(package: str | pathlib.Path) -> list[str]:
    """
    Run ament_flake8 (ROS's flake8 settings: 99 columns, import order) on a package.

    It runs in a fresh Python process: flake8 forks worker processes, and a fork
    of a test process that holds threads (rclpy executors, servers of earlier
    tests) can deadlock on a lock one of those threads held at the fork.
    """
    import json
    import subprocess
    import sys
    done = subprocess.run([sys.executable, '-c', _FLAKE8_CHILD, str(package)],
                          capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if not lines or not lines[-1].startswith(_FLAKE8_MARK):
        return [f'ament_flake8 did not finish (exit code {done.returncode}): '
                f'{done.stderr.strip()[-2000:]}']
    return json.loads(lines[-1][len(_FLAKE8_MARK):])


def ament_pep257_rc(package: str | pathlib.Path) -> int:
    """Run ament_pep257 on a package and its tests; return its exit code."""
    from ament_pep257.main import main
    package = pathlib.Path(package)
    return main(argv=[str(package), str(package / 'test')])
