# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Shared-memory segments: naming, creation (mode 0600), owner identity, stale reclaim, unlink.

A segment is a file under ``/dev/shm`` (POSIX ``shm_open`` names live there on
Linux) created with ``O_CREAT | O_EXCL`` and mode 0600 so that only the same
user can map it. ``multiprocessing.shared_memory`` is not used: it cannot set
the mode and its resource tracker unlinks (and warns about) segments that
another process still owns.

Names are ``unilab_d<domain>_<node>_<topic>``: scoped by ROS domain and node,
so two graphs in different domains (tests, a developer's training run) never
share a segment. The owner's identity (pid, process start time, boot id) is
written into the segment header; a segment whose owner is gone is *stale*
and is unlinked by the next writer that starts in the same domain.
"""

from __future__ import annotations

import atexit
import mmap
import os
import re
import signal
import threading
import uuid

SHM_DIR = '/dev/shm'
PREFIX = 'unilab_d'
_NAME_RE = re.compile(r'^unilab_d\d+_[A-Za-z0-9_]+$')
#: POSIX/Linux file name limit is 255; keep well below.
MAX_NAME = 200


def _sanitise(text: str) -> str:
    return re.sub(r'[^A-Za-z0-9]+', '_', text).strip('_') or 'x'


def segment_name(domain: int, node: str, topic: str) -> str:
    """Return the segment name for ``topic`` written by ``node`` in ROS ``domain``."""
    name = f'{PREFIX}{int(domain)}_{_sanitise(node)}_{_sanitise(topic)}'
    return name[:MAX_NAME]


def ros_domain() -> int:
    """Return the ROS domain id of this process (``ROS_DOMAIN_ID``, default 0)."""
    try:
        return int(os.environ.get('ROS_DOMAIN_ID', '0') or 0)
    except ValueError:
        return 0


def valid_name(name: str) -> bool:
    """Return whether ``name`` is a UniLab segment name (guards path traversal)."""
    return bool(_NAME_RE.match(name)) and len(name) <= MAX_NAME


def segment_path(name: str) -> str:
    """Return the file path of segment ``name``; raise ValueError for a foreign name."""
    if not valid_name(name):
        raise ValueError(f'`{name}` is not a UniLab shared-memory segment name')
    return os.path.join(SHM_DIR, name)


def boot_id() -> bytes:
    """Return this machine's boot id (16 bytes); a pid is only meaningful within one boot."""
    try:
        with open('/proc/sys/kernel/random/boot_id') as f:
            return uuid.UUID(f.read().strip()).bytes
    except (OSError, ValueError):
        return bytes(16)


#: tests only: replaces host_identity() (a reader that plays another host on this machine)
HOST_ID_ENV = 'UNILAB_TRANSPORT_HOST_ID'
_HOST_ID: str | None = None


def host_identity() -> str:
    """
    Return who can share memory with this process: boot id, ``/dev/shm`` instance, pid namespace.

    Two processes can share a ring only with the same boot (another host has
    another boot id), the same ``/dev/shm`` (the device and inode of the tmpfs
    as ``stat`` reports them: a container with its own ``/dev/shm`` differs,
    one that bind-mounts the host's does not, whatever its mount namespace) and
    the same pid namespace (the ring identifies readers and writers by pid and
    start time, and reaps those it cannot find in ``/proc``). Host names are
    not used: containers share them or repeat them. ``UNILAB_TRANSPORT_HOST_ID``
    replaces the value (tests that play another host in one machine).
    """
    override = os.environ.get(HOST_ID_ENV)
    if override:
        return override
    global _HOST_ID
    if _HOST_ID is None:
        try:
            st = os.stat(SHM_DIR)
            where = f'shm{st.st_dev:x}.{st.st_ino}'
        except OSError:
            where = 'shm-'
        try:
            pidns = os.stat('/proc/self/ns/pid').st_ino
        except OSError:
            pidns = 0
        _HOST_ID = f'{uuid.UUID(bytes=boot_id())}/{where}/pid{pidns}'
    return _HOST_ID


def _stat(pid: int) -> list[bytes]:
    """Return the fields of ``/proc/<pid>/stat`` after the command name ([] if unreadable)."""
    try:
        with open(f'/proc/{pid}/stat', 'rb') as f:
            data = f.read()
    except OSError:
        return []
    # The command name (field 2) is in parentheses and may contain spaces.
    return data[data.rfind(b')') + 2:].split()


def process_start_time(pid: int) -> int:
    """
    Return the start time of ``pid`` in clock ticks since boot (0 if unknown).

    Field 22 of ``/proc/<pid>/stat`` (proc(5)); pid plus start time identifies
    a process even after its pid is reused.
    """
    return _start_time(_stat(pid))


def _start_time(stat: list[bytes]) -> int:
    return int(stat[19]) if len(stat) > 19 else 0


def process_alive(pid: int, start_time: int) -> bool:
    """
    Return whether the process ``pid`` that started at ``start_time`` still runs.

    A zombie (state Z or X, field 3 of ``/proc/<pid>/stat``) runs no more: it exited and
    waits for its parent to reap it, which a parent holding on to it (a test's failed
    frame) or a container's init that reaps nothing may never do. Its segments and table
    entries are free to take.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by another user
    rest = _stat(pid)
    if rest and rest[0] in (b'Z', b'X'):
        return False
    now = _start_time(rest)
    return start_time == 0 or now == 0 or now == start_time


class Segment:
    """One mapped segment (created by its owner or opened by a reader)."""

    def __init__(self, name: str, fd: int, size: int, owner: bool):
        self.name = name
        self.fd = fd
        self.size = size
        self.owner = owner
        self.mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.closed = False

    @classmethod
    def create(cls, name: str, size: int) -> 'Segment':
        """Create a new segment of ``size`` bytes, mode 0600; FileExistsError if present."""
        path = segment_path(name)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        try:
            os.fchmod(fd, 0o600)  # umask may only narrow; make the mode exact
            os.ftruncate(fd, size)
            seg = cls(name, fd, size, owner=True)
        except BaseException:
            os.close(fd)
            os.unlink(path)
            raise
        _OWNED.add(seg)
        return seg

    @classmethod
    def open(cls, name: str) -> 'Segment':
        """Map an existing segment; FileNotFoundError if there is none."""
        fd = os.open(segment_path(name), os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                raise FileNotFoundError(f'segment `{name}` is empty (being created?)')
            return cls(name, fd, size, owner=False)
        except BaseException:
            os.close(fd)
            raise

    def close(self) -> None:
        """Unmap; the owner also unlinks the name (readers keep their mapping until they close)."""
        if self.closed:
            return
        self.closed = True
        if self.owner:
            _OWNED.discard(self)
            try:
                os.unlink(segment_path(self.name))
            except FileNotFoundError:
                pass
        try:
            self.mm.close()
        except BufferError:
            # numpy views of the payload are still alive; the mapping goes with them.
            pass
        os.close(self.fd)


# ---------------------------------------------------------------------------
# Owner clean-up: atexit, plus SIGTERM/SIGINT when their disposition is the
# default (a process killed by a default SIGTERM runs no atexit handlers).
# Handlers somebody else installed (rclpy, our runtime) are left alone: they
# end in a normal interpreter exit, which runs atexit. SIGKILL cannot be
# caught; stale-segment reclaim at the next start covers it.
# ---------------------------------------------------------------------------
class _Owned:
    def __init__(self):
        self._lock = threading.Lock()
        self._segments: set = set()
        self._installed = False

    def add(self, seg: Segment) -> None:
        with self._lock:
            self._segments.add(seg)
            if not self._installed:
                self._installed = True
                atexit.register(unlink_owned)
                _install_signal_handlers()

    def discard(self, seg: Segment) -> None:
        with self._lock:
            self._segments.discard(seg)

    def names(self) -> list[str]:
        with self._lock:
            return [s.name for s in self._segments]


_OWNED = _Owned()


def unlink_owned() -> None:
    """Unlink every segment this process created and has not closed (idempotent)."""
    for name in _OWNED.names():
        try:
            os.unlink(segment_path(name))
        except FileNotFoundError:
            pass


def _install_signal_handlers() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGINT):
        if signal.getsignal(sig) is not signal.SIG_DFL:
            continue

        def handler(signum, frame):
            unlink_owned()
            # Re-deliver with the default action so the exit status stays "killed by signal".
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

        signal.signal(sig, handler)


def list_segments(domain: int | None = None) -> list[str]:
    """List UniLab segment names (of one ROS domain, or all)."""
    prefix = PREFIX if domain is None else f'{PREFIX}{int(domain)}_'
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return []
    return sorted(n for n in names if n.startswith(prefix) and valid_name(n))
