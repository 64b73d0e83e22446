# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Sum the JUnit results of ``colcon test`` into one line: ``N passed, N failed, N skipped``."""

from __future__ import annotations

import pathlib
import sys
import xml.etree.ElementTree as ET


def count(build_dir: str | pathlib.Path) -> dict[str, int]:
    """Count tests over every package's JUnit XML under ``build_dir``."""
    totals = {'tests': 0, 'failed': 0, 'skipped': 0, 'files': 0}
    # One per package; ``bin/unilab test``'s second stream writes its own below test_stream2/.
    for xml in sorted(pathlib.Path(build_dir).rglob('pytest.xml')):
        root = ET.parse(xml).getroot()
        suites = [root] if root.tag == 'testsuite' else root.findall('testsuite')
        totals['files'] += 1
        for s in suites:
            totals['tests'] += int(s.get('tests', 0))
            totals['failed'] += int(s.get('failures', 0)) + int(s.get('errors', 0))
            totals['skipped'] += int(s.get('skipped', 0))
    return totals


def main(argv: list[str] | None = None) -> int:
    """Print the summary line; exit 1 on any failure or when nothing ran."""
    argv = sys.argv[1:] if argv is None else argv
    t = count(argv[0] if argv else 'build')
    passed = t['tests'] - t['failed'] - t['skipped']
    print(f"{passed} passed, {t['failed']} failed, {t['skipped']} skipped")
    return 0 if t['failed'] == 0 and passed > 0 else 1


if __name__ == '__main__':
    sys.exit(main())
