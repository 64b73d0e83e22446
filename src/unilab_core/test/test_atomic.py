# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Atomic writes."""

import pytest
from unilab_core.atomic import atomic_path, atomic_write_text


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path):
    path = tmp_path / 'f.txt'
    atomic_write_text(path, 'one')
    atomic_write_text(path, 'two')
    assert path.read_text() == 'two'
    assert [p.name for p in tmp_path.iterdir()] == ['f.txt']


def test_atomic_write_failure_keeps_old_file(tmp_path):
    path = tmp_path / 'f.txt'
    path.write_text('old')
    with pytest.raises(RuntimeError):
        with atomic_path(path) as tmp:
            tmp.write_text('half')
            raise RuntimeError('crash while writing')
    assert path.read_text() == 'old'
    assert [p.name for p in tmp_path.iterdir()] == ['f.txt']


def test_an_atomic_file_gets_the_mode_a_plain_open_gives(tmp_path):
    import os
    plain, atomic = tmp_path / 'plain.txt', tmp_path / 'atomic.txt'
    previous = os.umask(0o027)  # this test's process only; restored below
    try:
        plain.write_text('x')
        atomic_write_text(atomic, 'x')
    finally:
        os.umask(previous)
    assert (atomic.stat().st_mode & 0o777) == (plain.stat().st_mode & 0o777) == 0o640
