# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Write, read and recover rosbag2 bags with ``rosbags`` (MCAP or sqlite3).

Writing takes the exact CDR bytes of a raw subscription; every connection
carries the full message definition (``msgdef`` + RIHS01 hash), so the bag is
self-describing. ``flush()`` makes what was written so far survive a SIGKILL:
MCAP closes the pending chunk and flushes the file, sqlite3 commits. A killed
recording has no ``metadata.yaml`` and (MCAP) no summary section;
``recover_bag`` rewrites everything up to the last flushed chunk / commit into
a clean bag (MCAP read with the ``mcap`` library's stream reader).
"""

from __future__ import annotations

import pathlib
import sqlite3
import struct
from typing import Iterator, NamedTuple

from rosbags.rosbag2 import Reader, ReaderError, StoragePlugin, Writer
from rosbags.typesys import get_types_from_msg
from unilab.bag.types import BagTypeError, ensure_type, msgdef, typestore

STORAGES = {'mcap': StoragePlugin.MCAP, 'sqlite3': StoragePlugin.SQLITE3}


class BagError(RuntimeError):
    """A bag cannot be read (missing, truncated, not a rosbag2 directory)."""


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
        else:
            st.conn.commit()

    def close(self) -> None:
        """Write the index / summary and ``metadata.yaml``."""
        if self._writer.storage is not None:
            self._writer.close()


def _check_bag(path: pathlib.Path) -> None:
    if not path.exists():
        raise BagError(f'bag {path}: not found')
    if path.is_dir() and not (path / 'metadata.yaml').is_file():
        raise BagError(f'bag {path}: no metadata.yaml (was the recording killed?); '
                       f'recover it with `unilab bag recover {path}`')


class BagReader:
    """Read a bag written by us or by ``ros2 bag record``, with clear errors."""

    def __init__(self, path: str | pathlib.Path):
        self.path = pathlib.Path(path)
        _check_bag(self.path)
        self._reader = Reader(self.path)
        try:
            self._reader.open()
        except (ReaderError, OSError, struct.error, ValueError) as exc:
            files = ', '.join(str(f) for f in self._files()) or str(self.path)
            raise BagError(f'bag {self.path}: cannot read {files}: {exc}') from None
        self.store = typestore()
        self.unknown: dict[str, str] = {}  # topic -> type without any definition
        for conn in self._reader.connections:
            self._register(conn)

    def _files(self) -> list[pathlib.Path]:
        if self.path.is_dir():
            return sorted(p for p in self.path.iterdir() if p.suffix in ('.mcap', '.db3'))
        return [self.path]

    def _register(self, conn) -> None:
        if conn.msgtype in self.store.fielddefs:
            return
        if conn.msgdef.data:
            try:
                self.store.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
                return
            except Exception:  # noqa: B902 - malformed definition: fall through to lookup
                pass
        try:
            ensure_type(self.store, conn.msgtype, conn.topic)
        except BagTypeError:
            self.unknown[conn.topic] = conn.msgtype

    @property
    def topics(self) -> dict[str, tuple[str, int]]:
        """Return ``{topic: (msgtype, count)}``."""
        out: dict[str, tuple[str, int]] = {}
        for c in self._reader.connections:
            t, n = out.get(c.topic, (c.msgtype, 0))
            out[c.topic] = (t, n + c.msgcount)
        return out

    @property
    def start_ns(self) -> int:
        """Return the first message's time stamp."""
        return self._reader.start_time

    @property
    def duration_ns(self) -> int:
        """Return the time between first and last message."""
        return self._reader.duration

    @property
    def storage(self) -> str:
        """Return ``mcap`` or ``sqlite3``."""
        return 'sqlite3' if any(f.suffix == '.db3' for f in self._files()) else 'mcap'

    def messages(self, topics: list[str] | tuple[str, ...] | None = None
                 ) -> Iterator[BagMessage]:
        """Yield messages in time order (optionally only ``topics``)."""
        conns = [c for c in self._reader.connections if topics is None or c.topic in topics]
        try:
            for conn, ts, raw in self._reader.messages(connections=conns):
                yield BagMessage(conn.topic, conn.msgtype, ts, bytes(raw))
        except (ReaderError, OSError, struct.error, ValueError, sqlite3.Error) as exc:
            files = ', '.join(str(f) for f in self._files())
            raise BagError(f'bag {self.path}: {files} is truncated or corrupt: {exc}') from None

    def deserialize(self, msg: BagMessage):
        """Decode one message with the bag's type definitions; raise naming the topic."""
        if msg.topic in self.unknown:
            raise BagTypeError(f'topic `{msg.topic}` has unknown type `{msg.msgtype}` '
                               '(no definition in the bag or installed)')
        try:
            return self.store.deserialize_cdr(msg.raw, msg.msgtype)
        except Exception as exc:  # noqa: B902 - rosbags raises several types on bad bytes
            raise BagError(f'bag {self.path}: message on `{msg.topic}` at {msg.timestamp} '
                           f'does not decode as {msg.msgtype}: {exc}') from None

    def close(self) -> None:
        """Close the files."""
        self._reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_bags(paths) -> list[BagReader]:
    """Open several bags (errors name the bag)."""
    return [BagReader(p) for p in paths]


# ------------------------------------------------------------------ recovery
def _recover_mcap(path: pathlib.Path) -> Iterator[tuple[str, str, str, int, bytes]]:
    """
    Yield (topic, msgtype, msgdef, ts, raw) of every complete record of an MCAP file.

    The ``mcap`` library's stream reader walks the records front to back (chunks
    decompressed, CRCs checked); a recording killed mid-chunk ends in a cut-off
    record, where the stream reader raises ``EndOfFile`` and recovery stops:
    everything up to the last complete chunk is kept.
    """
    from mcap.exceptions import EndOfFile, InvalidMagic, McapError
    from mcap.records import Channel, Message, Schema
    from mcap.stream_reader import StreamReader
    schemas: dict[int, tuple[str, str]] = {}
    channels: dict[int, tuple[str, str, str]] = {}
    with open(path, 'rb') as f:
        try:
            for rec in StreamReader(f, validate_crcs=True).records:
                if isinstance(rec, Schema):
                    schemas[rec.id] = (rec.name, rec.data.decode())
                elif isinstance(rec, Channel):
                    channels[rec.id] = (rec.topic, *schemas.get(rec.schema_id, ('', '')))
                elif isinstance(rec, Message) and rec.channel_id in channels:
                    topic, msgtype, text = channels[rec.channel_id]
                    yield topic, msgtype, text, rec.log_time, bytes(rec.data)
        except InvalidMagic:
            raise BagError(f'{path}: not an MCAP file') from None
        except EndOfFile:
            return  # the cut-off tail of a killed recording
        except McapError as exc:
            raise BagError(f'{path}: unreadable MCAP record: {exc}') from None


def _recover_sqlite(path: pathlib.Path) -> Iterator[tuple[str, str, str, int, bytes]]:
    con = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
    try:
        defs = dict(con.execute('SELECT topic_type, encoded_message_definition '
                                'FROM message_definitions'))
        topics = {i: (n, t) for i, n, t in con.execute('SELECT id, name, type FROM topics')}
        for tid, ts, raw in con.execute('SELECT topic_id, timestamp, data FROM messages '
                                        'ORDER BY timestamp'):
            name, msgtype = topics[tid]
            yield name, msgtype, defs.get(msgtype, ''), ts, bytes(raw)
    except sqlite3.Error as exc:
        raise BagError(f'{path}: unreadable sqlite3 file: {exc}') from None
    finally:
        con.close()


def recover_bag(src: str | pathlib.Path, dst: str | pathlib.Path) -> dict[str, int]:
    """Rewrite the flushed part of a killed recording ``src`` as a clean bag ``dst``."""
    src, dst = pathlib.Path(src), pathlib.Path(dst)
    files = sorted(p for p in src.iterdir() if p.suffix in ('.mcap', '.db3')) \
        if src.is_dir() else [src]
    if not files:
        raise BagError(f'{src}: no .mcap or .db3 file to recover')
    storage = 'mcap' if files[0].suffix == '.mcap' else 'sqlite3'
    writer = Writer(dst, version=9, storage_plugin=STORAGES[storage])
    writer.open()
    conns: dict[str, object] = {}
    counts: dict[str, int] = {}
    try:
        for f in files:
            gen = _recover_mcap(f) if f.suffix == '.mcap' else _recover_sqlite(f)
            for topic, msgtype, text, ts, raw in gen:
                if topic not in conns:
                    conns[topic] = writer.add_connection(
                        topic, msgtype, msgdef=text or msgdef(msgtype)[0],
                        rihs01=_digest(msgtype))
                    counts[topic] = 0
                writer.write(conns[topic], ts, raw)
                counts[topic] += 1
    finally:
        writer.close()
    return counts


def _digest(msgtype: str) -> str:
    try:
        return msgdef(msgtype)[1]
    except BagTypeError:
        return 'RIHS01_' + '0' * 64


__all__ = ['BagError', 'BagMessage', 'BagReader', 'BagWriter', 'open_bags', 'recover_bag',
           'STORAGES']
