# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Atomic file writes: a reader sees the old file or the new one, never half."""

from __future__ import annotations

import contextlib
import os
import pathlib
import tempfile
from typing import Iterator


@contextlib.contextmanager
def atomic_path(path: str | pathlib.Path, sync_dir: bool = True) -> Iterator[pathlib.Path]:
    """
    Yield a temporary path beside ``path``; rename it over ``path`` on success.

    The temporary file lives in the same directory so ``os.replace`` is a
    rename within one file system (atomic on POSIX); it is fsynced first so a
    crash right after the rename cannot leave an empty file. It gets the mode a
    plain ``open`` would give (0666 less the umask), not ``mkstemp``'s 0600. ``sync_dir``
    False leaves the directory's fsync (the rename's durability) to the
    caller (``fsync_dir``), which may batch it over many files.
    """
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
    finally:
        os.close(fd)
    tmp_path = pathlib.Path(tmp)
    try:
        yield tmp_path
        with open(tmp_path, 'rb+') as f:
            os.fsync(f.fileno())
        os.replace(tmp_path, path)
        if sync_dir:
            fsync_dir(path.parent)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _umask() -> int:
    """Return the process's umask without changing it (``os.umask`` would, for all threads)."""
    try:
        with open('/proc/self/status') as f:
            for line in f:
                if line.startswith('Umask:'):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def fsync_dir(directory: pathlib.Path) -> None:
    """Persist a rename (best effort: not every file system lets a directory be fsynced)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_text(path: str | pathlib.Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def atomic_write_bytes(path: str | pathlib.Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def remove_stale_temp_files(directory: str | os.PathLike) -> list:
    """
    Delete temp files a killed writer left behind (``atomic_path``'s ``.<name>.<random>.tmp``).

    They are never read (the rename never happened); removing them when a writer starts
    keeps a directory that saw ``kill -9`` from filling up (checkpoints, the adapter's
    state). Returns the names removed.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        return []
    removed = []
    for name in os.listdir(directory):
        if name.startswith('.') and name.endswith('.tmp'):
            os.unlink(os.path.join(directory, name))
            removed.append(name)
    return removed
