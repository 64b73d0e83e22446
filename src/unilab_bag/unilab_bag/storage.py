# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Write, read and recover rosbag2 bags with ``rosbags`` (MCAP or sqlite3).

Writing takes the exact CDR bytes of a raw subscription; every connection
carries the full message definition (``msgdef`` + RIHS01 hash), so the bag is
self-describing, and every MCAP chunk its CRC-32 (``scan.seal_chunks``; rosbags
writes 0, "none"), so a damaged payload is found, not read as data.
``flush()`` makes what was written so far survive a SIGKILL: MCAP closes the
pending chunk and flushes the file, sqlite3 commits. A killed recording has no
``metadata.yaml`` and (MCAP) no summary section; ``recover_bag`` rewrites
everything up to the last flushed chunk / commit into a clean bag.

Opening a bag checks every record of its files first (``unilab_bag.scan``):
``BagReader.health`` says what is readable and what was lost. A damaged bag is
refused by ``messages()`` (:class:`BagDamagedError`, one line naming the bag,
what was lost and where) unless the reader was opened with
``allow_damaged=True``; then it yields the readable messages, and messages that
do not decode are counted, not raised (``decoded()``).
"""

from __future__ import annotations

import pathlib
import sqlite3
import struct
from typing import Iterator, NamedTuple

from rosbags.rosbag2 import Reader, ReaderError, StoragePlugin, Writer
from rosbags.typesys import get_types_from_msg
from unilab_bag.scan import read_sqlite, Scan, scan_file, ScanError, seal_chunks
from unilab_bag.types import BagTypeError, ensure_type, msgdef, typestore
from unilab_core.errors import one_line, yaml_error
import yaml

STORAGES = {'mcap': StoragePlugin.MCAP, 'sqlite3': StoragePlugin.SQLITE3}
#: What rosbags raises on a file it cannot parse (besides its own ReaderError).
_READ_ERRORS = (ReaderError, OSError, struct.error, ValueError, KeyError, IndexError,
                OverflowError, MemoryError, UnicodeDecodeError, AssertionError, sqlite3.Error)


class BagError(RuntimeError):
    """A bag cannot be read (missing, truncated, not a rosbag2 directory)."""


class BagDamagedError(BagError):
    """A bag's files are damaged: part of it is readable, part was lost."""


class BagMessage(NamedTuple):
    """One stored message."""

    topic: str
    msgtype: str
    timestamp: int  # ns, receive time (as ros2 bag record stores it)
    raw: bytes


class BagWriter:
    """Append raw CDR messages to a new rosbag2 directory."""

    def __init__(self, path: str | pathlib.Path, storage: str = 'mcap'):
        if storage not in STORAGES:
            raise ValueError(f'storage `{storage}`: expected one of {sorted(STORAGES)}')
        self.path = pathlib.Path(path)
        self.storage = storage
        # Version 9 is what Jazzy/Kilted rosbag2 writes.
        self._writer = Writer(self.path, version=9, storage_plugin=STORAGES[storage])
        self._writer.open()
        self._conns: dict[str, object] = {}
        self.counts: dict[str, int] = {}
        self._sealed = 8  # MCAP: chunks before this byte carry their CRC (seal_chunks)

    def add_topic(self, topic: str, msgtype: str) -> None:
        """Declare ``topic`` with ``msgtype`` (``pkg/msg/Name``), definition included."""
        if topic in self._conns:
            return
        ensure_type(typestore(), msgtype, topic)
        text, digest = msgdef(msgtype)
        self._conns[topic] = self._writer.add_connection(topic, msgtype, msgdef=text,
                                                         rihs01=digest)
        self.counts[topic] = 0

    def write(self, topic: str, timestamp_ns: int, raw: bytes) -> None:
        """Store one message's exact serialized bytes."""
        self._writer.write(self._conns[topic], int(timestamp_ns), raw)
        self.counts[topic] += 1

    def flush(self) -> None:
        """Make everything written so far durable against a kill of this process."""
        st = self._writer.storage
        if st is None:
            return
        # rosbags has no public flush; these are its storage back-ends' own handles.
        if self.storage == 'mcap':
            if st.chunk.bio.tell():
                st.close_chunk()
            st.bio.flush()
            self._sealed = seal_chunks(self._mcap_file(), self._sealed)
        else:
            st.conn.commit()

    def _mcap_file(self) -> pathlib.Path:
        return self.path / f'{self.path.name}.mcap'

    def close(self) -> None:
        """Write the index / summary and ``metadata.yaml`` (MCAP: every chunk with its CRC)."""
        if self._writer.storage is not None:
            self._writer.close()
            if self.storage == 'mcap':
                seal_chunks(self._mcap_file(), self._sealed)


def _check_bag(path: pathlib.Path) -> None:
    if not path.exists():
        raise BagError(f'bag {path}: not found')
    if path.is_dir() and not (path / 'metadata.yaml').is_file():
        raise BagError(f'bag {path}: no metadata.yaml (was the recording killed?); '
                       f'recover it with `unilab bag recover {path}`')
    if path.is_file() and path.suffix not in ('.mcap', '.db3'):
        raise BagError(f'bag {path}: not a rosbag2 bag (a directory with metadata.yaml, or '
                       'an .mcap / .db3 file)')


def storage_files(path: pathlib.Path) -> list[pathlib.Path]:
    """Return a bag's storage files (the bag itself when it is one file)."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in ('.mcap', '.db3'))
    return [path]


def _metadata_counts(path: pathlib.Path, scan: Scan) -> dict[str, int]:
    """Return ``{topic: message_count}`` from metadata.yaml ({} without one; noted if bad)."""
    meta = path / 'metadata.yaml'
    if not meta.is_file():
        return {}
    try:
        info = yaml.safe_load(meta.read_text())['rosbag2_bagfile_information']
        out: dict[str, int] = {}
        for t in info['topics_with_message_count']:
            name = str(t['topic_metadata']['name'])
            out[name] = out.get(name, 0) + int(t['message_count'])
            # The type, should the data file's own schema be lost to damage.
            msgtype, text = scan.connections.get(name, ('', ''))
            scan.connections[name] = (msgtype or str(t['topic_metadata']['type']), text)
        return out
    except yaml.YAMLError as exc:
        scan.note(meta.name, f'unreadable ({yaml_error(meta.name, exc)}); counts from the data '
                  'files')
        return {}
    except (UnicodeDecodeError, KeyError, TypeError, ValueError) as exc:
        scan.note(meta.name, f'unreadable ({type(exc).__name__}); counts from the data files')
        return {}


def check_bag(path: str | pathlib.Path) -> Scan:
    """Read every record of a bag's files once; return what is readable and what is lost."""
    path = pathlib.Path(path)
    _check_bag(path)
    files = storage_files(path)
    if not files:
        raise BagError(f'bag {path}: no .mcap or .db3 file')
    scan = Scan()
    scan.expected = _metadata_counts(path, scan)
    for f in files:
        try:
            for _ in scan_file(f, scan):
                pass
        except ScanError as exc:
            raise BagError(f'bag {path}: {exc}') from None
    if scan.problems and not scan.readable:
        raise BagError(f'bag {path}: nothing readable: {scan.describe()}')
    return scan


class BagReader:
    """Read a bag written by us or by ``ros2 bag record``, with clear errors."""

    def __init__(self, path: str | pathlib.Path, allow_damaged: bool = False):
        self.path = pathlib.Path(path)
        self.allow_damaged = allow_damaged
        #: What the files hold: readable / lost per topic, problems (``unilab_bag.scan``).
        self.health = check_bag(self.path)
        self._reader = Reader(self.path)
        try:
            self._reader.open()
        except _READ_ERRORS as exc:
            if not self.health.damaged:
                files = ', '.join(str(f) for f in self._files()) or str(self.path)
                raise BagError(f'bag {self.path}: cannot read {files}: {one_line(exc)}') from None
            self._reader = None  # damaged past what rosbags opens: our reader only
        self.store = typestore()
        self.unknown: dict[str, str] = {}  # topic -> type without any definition
        if self._reader is not None:
            for conn in self._reader.connections:
                self._register(conn.topic, conn.msgtype, conn.msgdef.data)
        else:
            for topic, (msgtype, text) in self.health.connections.items():
                self._register(topic, msgtype, text)

    def _files(self) -> list[pathlib.Path]:
        return storage_files(self.path)

    def _register(self, topic: str, msgtype: str, text: str) -> None:
        if msgtype in self.store.fielddefs:
            return
        if text:
            try:
                self.store.register(get_types_from_msg(text, msgtype))
                return
            except Exception:  # noqa: B902 - malformed definition: fall through to lookup
                pass
        try:
            ensure_type(self.store, msgtype, topic)
        except BagTypeError:
            self.unknown[topic] = msgtype

    @property
    def topics(self) -> dict[str, tuple[str, int]]:
        """Return ``{topic: (msgtype, readable count)}`` (what can be read, not what was meant)."""
        h = self.health
        names = set(h.readable) | set(h.expected or h.indexed)
        return {t: (h.connections.get(t, ('', ''))[0], h.readable.get(t, 0))
                for t in sorted(names)}

    @property
    def start_ns(self) -> int:
        """Return the first readable message's time stamp (0 without any)."""
        return self.health.start_ns or 0

    @property
    def duration_ns(self) -> int:
        """Return the time between the first and the last readable message."""
        h = self.health
        return 0 if h.start_ns is None else h.end_ns - h.start_ns

    @property
    def storage(self) -> str:
        """Return ``mcap`` or ``sqlite3``."""
        return 'sqlite3' if any(f.suffix == '.db3' for f in self._files()) else 'mcap'

    def refuse_if_damaged(self) -> None:
        """Raise BagDamagedError if the bag is damaged and the reader does not allow it."""
        if self.health.damaged and not self.allow_damaged:
            raise BagDamagedError(f'bag {self.path} is damaged: {self.health.describe()}')

    def messages(self, topics: list[str] | tuple[str, ...] | None = None
                 ) -> Iterator[BagMessage]:
        """
        Yield messages in time order (optionally only ``topics``).

        A damaged bag: BagDamagedError, or with ``allow_damaged`` its readable
        messages (collected from the files and sorted by time stamp).
        """
        self.refuse_if_damaged()
        if self.health.damaged:
            yield from self._readable(topics)
            return
        # An intact bag: MCAP through rosbags (by the summary, which the check compared
        # with the chunks), sqlite3 from the table itself. Either way the counts must
        # come out as the check found them: anything else is damage no check saw.
        got: dict[str, int] = {}
        try:
            for m in self._intact(topics):
                got[m.topic] = got.get(m.topic, 0) + 1
                yield m
        except _READ_ERRORS as exc:
            files = ', '.join(str(f) for f in self._files())
            raise BagError(f'bag {self.path}: {files} is truncated or corrupt: '
                           f'{one_line(exc)}') from None
        want = {t: n for t, n in self.health.readable.items() if topics is None or t in topics}
        if got != want:
            raise BagDamagedError(f'bag {self.path}: reading gave {got} messages per topic, its '
                                  f'records hold {want} (an index of the bag is damaged)')

    def _intact(self, topics) -> Iterator[BagMessage]:
        if self.storage == 'sqlite3':
            for f in self._files():
                for topic, msgtype, _, ts, raw in read_sqlite(f, topics):
                    yield BagMessage(topic, msgtype, ts, raw)
            return
        conns = [c for c in self._reader.connections if topics is None or c.topic in topics]
        for conn, ts, raw in self._reader.messages(connections=conns):
            yield BagMessage(conn.topic, conn.msgtype, ts, bytes(raw))

    def _readable(self, topics) -> Iterator[BagMessage]:
        out = []
        for f in self._files():
            for topic, msgtype, _, ts, raw in scan_file(f, Scan(expected=self.health.expected)):
                if topics is None or topic in topics:
                    out.append(BagMessage(topic, msgtype, ts, raw))
        out.sort(key=lambda m: m.timestamp)
        yield from out

    def deserialize(self, msg: BagMessage):
        """Decode one message with the bag's type definitions; raise naming the topic."""
        if msg.topic in self.unknown:
            raise BagTypeError(f'topic `{msg.topic}` has unknown type `{msg.msgtype}` '
                               '(no definition in the bag or installed)')
        try:
            return self.store.deserialize_cdr(msg.raw, msg.msgtype)
        except Exception as exc:  # noqa: B902 - rosbags raises several types on bad bytes
            raise BagError(f'bag {self.path}: message on `{msg.topic}` at {msg.timestamp} '
                           f'does not decode as {msg.msgtype}: {one_line(exc)}') from None

    def decoded(self, topics: list[str] | tuple[str, ...] | None = None):
        """
        Yield ``(message, decoded)``; one that does not decode is an error, or counted.

        With ``allow_damaged`` a message whose bytes do not decode is counted
        in ``health.undecodable`` (and the bag becomes damaged); else BagError.
        """
        for m in self.messages(topics):
            try:
                yield m, self.deserialize(m)
            except (BagError, BagTypeError):
                if not self.allow_damaged:
                    raise
                self.discard(m.topic, f'message at {m.timestamp} does not decode')

    def discard(self, topic: str, why: str) -> None:
        """Count one message a reader found unusable (bytes or values) as lost."""
        h = self.health
        h.undecodable[topic] = h.undecodable.get(topic, 0) + 1
        h.note(f'{self.path.name}: `{topic}`', why)

    def close(self) -> None:
        """Close the files."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_bags(paths) -> list[BagReader]:
    """Open several bags (errors name the bag)."""
    return [BagReader(p) for p in paths]


# ------------------------------------------------------------------ recovery
def recover_bag(src: str | pathlib.Path, dst: str | pathlib.Path) -> tuple[dict[str, int], Scan]:
    """
    Rewrite the readable part of ``src`` as a clean bag ``dst``; return (counts, what was read).

    ``src`` is a killed recording (no metadata.yaml; MCAP up to its last
    complete chunk, sqlite3 up to its last commit) or a damaged bag (every
    message that reads intact; the returned Scan says what was lost).
    """
    src, dst = pathlib.Path(src), pathlib.Path(dst)
    if not src.exists():
        raise BagError(f'bag {src}: not found')
    files = storage_files(src)
    if not files:
        raise BagError(f'{src}: no .mcap or .db3 file to recover')
    storage = 'mcap' if files[0].suffix == '.mcap' else 'sqlite3'
    scan = Scan()
    scan.expected = _metadata_counts(src, scan) if src.is_dir() else {}
    writer = Writer(dst, version=9, storage_plugin=STORAGES[storage])
    writer.open()
    conns: dict[str, object] = {}
    counts: dict[str, int] = {}
    try:
        for f in files:
            try:
                for topic, msgtype, text, ts, raw in scan_file(f, scan):
                    if topic not in conns:
                        conns[topic] = writer.add_connection(
                            topic, msgtype, msgdef=text or msgdef(msgtype)[0],
                            rihs01=_digest(msgtype))
                        counts[topic] = 0
                    writer.write(conns[topic], ts, raw)
                    counts[topic] += 1
            except ScanError as exc:
                raise BagError(f'bag {src}: {exc}') from None
    finally:
        writer.close()
        if storage == 'mcap':
            seal_chunks(dst / f'{dst.name}.mcap')
    return counts, scan


def _digest(msgtype: str) -> str:
    try:
        return msgdef(msgtype)[1]
    except BagTypeError:
        return 'RIHS01_' + '0' * 64


__all__ = ['BagDamagedError', 'BagError', 'BagMessage', 'BagReader', 'BagWriter', 'check_bag',
           'open_bags', 'recover_bag', 'STORAGES']
