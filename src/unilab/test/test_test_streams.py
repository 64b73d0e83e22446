# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bin/unilab test``'s two streams: every test of this folder in exactly one, all counted."""

import os
import pathlib
import subprocess
import sys

from conftest import LAUNCH_TESTS, pytest_ignore_collect
from unilab.test_summary import count

HERE = pathlib.Path(__file__).parent


def test_the_launch_part_and_the_rest_split_this_folder_without_a_gap(monkeypatch):
    assert all((HERE / name).is_file() for name in LAUNCH_TESTS), LAUNCH_TESTS
    files = sorted(HERE.glob('test_*.py'))
    taken = {}
    for part in ('launch', 'rest', ''):
        monkeypatch.setenv('UNILAB_TEST_PART', part)
        taken[part] = {f.name for f in files if not pytest_ignore_collect(f, None)}
    assert taken['launch'] == set(LAUNCH_TESTS)
    assert not taken['launch'] & taken['rest']
    assert taken['launch'] | taken['rest'] == taken[''] == {f.name for f in files}


def test_an_unknown_part_is_a_usage_error():
    env = dict(os.environ, UNILAB_TEST_PART='lunch')
    proc = subprocess.run([sys.executable, '-m', 'pytest', '--collect-only', '-q',
                           '-p', 'no:cacheprovider', str(HERE / 'test_plot.py')],
                          capture_output=True, text=True, env=env, cwd=HERE, timeout=300)
    assert proc.returncode != 0 and "UNILAB_TEST_PART='lunch'" in proc.stdout + proc.stderr


def test_the_summary_counts_the_second_streams_results(tmp_path):
    xml = ('<testsuites><testsuite tests="{}" failures="{}" errors="0" skipped="{}">'
           '</testsuite></testsuites>')
    (tmp_path / 'unilab').mkdir()
    (tmp_path / 'unilab' / 'pytest.xml').write_text(xml.format(10, 1, 2))
    (tmp_path / 'test_stream2' / 'unilab').mkdir(parents=True)
    (tmp_path / 'test_stream2' / 'unilab' / 'pytest.xml').write_text(xml.format(5, 0, 1))
    assert count(tmp_path) == {'tests': 15, 'failed': 1, 'skipped': 3, 'files': 2}
