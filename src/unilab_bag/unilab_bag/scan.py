# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Read a bag's storage files record by record, keeping what is readable and saying what is not.

rosbags reads an intact bag well, but on a damaged one it either stops with
an exception from deep inside (``OverflowError``, ``ReaderError``) or skips
what it cannot parse without a word: a 4 KiB overwrite in an MCAP chunk makes
it drop every message whose header no longer names a known channel or a time
inside the chunk. This module is the check behind ``unilab bag info``,
``bag recover`` and the refusal of damaged bags by every reader:

MCAP (https://mcap.dev/spec): the data section is walked record by record
with every length checked against the file. A chunk is decompressed (CRC
checked when the writer stored one) and its records walked the same way; each
message must name a channel defined before it and carry a time inside its
chunk's range. Where a record is cut off or overwritten, reading resumes at
the next chunk (from the summary's chunk index, else the next bytes that parse
as a chunk), and inside a chunk at the messages its message index lists.

sqlite3 (rosbag2's schema): rows are read in id order; where a damaged page
stops the query, reading resumes at the first row a query reaches past it
(found by seeking with doubling steps, then bisecting). A row must have an
integer id, time stamp, a known topic and a blob.

Messages are yielded as ``(topic, msgtype, msgdef, timestamp, raw)`` in file
order; :class:`Scan` collects the per-topic counts, the connections and a
list of problems (where, what).
"""

from __future__ import annotations

import dataclasses
import mmap
import pathlib
import sqlite3
import struct
from typing import Iterator, NamedTuple

from unilab_core.errors import one_line

MAGIC = b'\x89MCAP0\r\n'
FOOTER_LEN = 37  # opcode 1 + length 8 + summary_start 8 + summary_offset_start 8 + crc 4 + magic 8
OP_HEADER, OP_FOOTER, OP_SCHEMA, OP_CHANNEL, OP_MESSAGE, OP_CHUNK, OP_MESSAGE_INDEX = (
    0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07)
OP_CHUNK_INDEX, OP_STATISTICS, OP_DATA_END = 0x08, 0x0B, 0x0F
KNOWN_OPS = set(range(0x01, 0x10))
COMPRESSIONS = ('', 'lz4', 'zstd')

Message = tuple  # (topic, msgtype, msgdef, timestamp_ns, raw bytes)


class ScanError(Exception):
    """Nothing of the file is readable as a bag (not MCAP / sqlite3, empty, unreadable)."""


@dataclasses.dataclass
class Scan:
    """What reading a bag's files found."""

    #: topic -> (msgtype, message definition text)
    connections: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)
    #: topic -> messages that read intact
    readable: dict[str, int] = dataclasses.field(default_factory=dict)
    #: topic -> messages the file's own index / statistics say it holds ({} if it has none)
    indexed: dict[str, int] = dataclasses.field(default_factory=dict)
    #: topic -> messages the bag's metadata.yaml says it holds (preferred over ``indexed``)
    expected: dict[str, int] = dataclasses.field(default_factory=dict)
    #: topic -> messages that read intact but whose bytes do not decode (found by readers)
    undecodable: dict[str, int] = dataclasses.field(default_factory=dict)
    #: topic names in the data that metadata.yaml does not list (damaged channel records)
    foreign: set[str] = dataclasses.field(default_factory=set)
    #: 'FILE: byte N: what' / 'FILE: row id N: what', in file order
    problems: list[str] = dataclasses.field(default_factory=list)
    start_ns: int | None = None
    end_ns: int | None = None

    @property
    def lost(self) -> dict[str, int]:
        """Return per topic the messages the bag should hold but that cannot be used."""
        expected = self.expected or self.indexed
        out = {}
        for topic in sorted(set(expected) | set(self.undecodable)):
            n = (expected.get(topic, self.readable.get(topic, 0)) - self.readable.get(topic, 0)
                 + self.undecodable.get(topic, 0))
            if n > 0:
                out[topic] = n
        return out

    @property
    def damaged(self) -> bool:
        """Return True if anything in the files could not be read as written."""
        return bool(self.problems or self.lost)

    def describe(self) -> str:
        """Return one line: how much is lost, per topic, and the first problem."""
        expected = self.expected or self.indexed
        lost = self.lost
        total = sum(expected.values()) if expected else None
        head = (f'{sum(lost.values()):,} of {total:,} messages unreadable' if total is not None
                else f'{sum(lost.values()):,} messages unreadable (the bag has no counts)')
        per = ', '.join(f'{t} {n:,}' for t, n in lost.items())
        first = f'; first problem: {self.problems[0]}' if self.problems else ''
        more = f' (+{len(self.problems) - 1} more)' if len(self.problems) > 1 else ''
        return head + (f' ({per})' if per else '') + first + more

    def note(self, where: str, what: str) -> None:
        """Record one problem (at most 100 are kept: the count says the rest)."""
        if len(self.problems) < 100:
            self.problems.append(f'{where}: {what}')

    def count(self, topic: str, timestamp: int) -> None:
        """Count one readable message."""
        self.readable[topic] = self.readable.get(topic, 0) + 1
        self.start_ns = timestamp if self.start_ns is None else min(self.start_ns, timestamp)
        self.end_ns = timestamp if self.end_ns is None else max(self.end_ns, timestamp)


def scan_file(path: pathlib.Path, scan: Scan) -> Iterator[Message]:
    """Yield the readable messages of one ``.mcap`` or ``.db3`` file; note problems in ``scan``."""
    if path.suffix == '.mcap':
        return _scan_mcap(path, scan)
    if path.suffix == '.db3':
        return _scan_sqlite(path, scan)
    raise ScanError(f'{path}: not a rosbag2 storage file (.mcap or .db3)')


# ------------------------------------------------------------------ MCAP
class _Buf:
    """Bounds-checked little-endian reads from a bytes-like object."""

    def __init__(self, data, start: int = 0, end: int | None = None):
        self.data = data
        self.pos = start
        self.end = len(data) if end is None else end

    def take(self, n: int):
        if n < 0 or self.pos + n > self.end:
            raise ValueError(f'needs {n} bytes at {self.pos}, record ends at {self.end}')
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def u16(self) -> int:
        return struct.unpack('<H', self.take(2))[0]

    def u32(self) -> int:
        return struct.unpack('<I', self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack('<Q', self.take(8))[0]

    def string(self, limit: int = 1 << 20) -> str:
        n = self.u32()
        if n > limit:
            raise ValueError(f'string of {n} bytes')
        return bytes(self.take(n)).decode()


@dataclasses.dataclass
class _Mcap:
    """Schemas and channels known so far, and the chunks the summary lists and the data holds."""

    path: pathlib.Path
    scan: Scan
    schemas: dict = dataclasses.field(default_factory=dict)  # id -> (name, data)
    channels: dict = dataclasses.field(default_factory=dict)  # id -> topic
    #: chunk offset -> (start, end, record length, message index records by channel,
    #: their length, compression, compressed size, uncompressed size)
    indexed_chunks: dict = dataclasses.field(default_factory=dict)
    found_chunks: dict = dataclasses.field(default_factory=dict)
    summary_channels: dict = dataclasses.field(default_factory=dict)  # id -> topic
    used_channels: set = dataclasses.field(default_factory=set)  # ids of messages read

    @property
    def chunk_starts(self) -> list[int]:
        return sorted(self.indexed_chunks)

    def where(self, pos: int) -> str:
        return f'{self.path.name}: byte {pos:,}'

    def schema(self, body) -> None:
        b = _Buf(body)
        sid = b.u16()
        name = b.string()
        b.string()  # encoding
        data = b.string(1 << 24)
        if self.schemas.get(sid, (name, data)) != (name, data):
            # rosbags reads by the summary's copy: a damaged one would type messages wrongly
            self.scan.note(self.path.name, f'schema {sid} differs between its copies')
        self.schemas[sid] = (name, data)

    def channel(self, body) -> None:
        b = _Buf(body)
        cid, sid = b.u16(), b.u16()
        topic = b.string()
        name, data = self.schemas.get(sid, ('', ''))
        if self.channels.get(cid, topic) != topic:
            self.scan.note(self.path.name, f'channel {cid} is `{self.channels[cid]}` in one '
                           f'copy and `{topic}` in another')
        self.channels[cid] = topic
        known = self.scan.connections.get(topic, ('', ''))
        self.scan.connections[topic] = (known[0] or name, known[1] or data)

    def record(self, op: int, body, pos: int, lo: int = 0, hi: int = 2**64 - 1):
        """Take in a schema or channel; return ``(topic, ts, raw)`` of a valid message record."""
        if op == OP_SCHEMA:
            self.schema(body)
        elif op == OP_CHANNEL:
            self.channel(body)
        elif op == OP_MESSAGE:
            return self.message(body, pos, lo, hi)
        return None

    def message(self, body, pos: int, lo: int = 0, hi: int = 2**64 - 1):
        """Return ``(topic, ts, raw)`` of a valid message record body, else None (noted)."""
        if len(body) < 22:
            self.scan.note(self.where(pos), f'message record of {len(body)} bytes')
            return None
        cid, _seq, log_time, _pub = struct.unpack_from('<HIQQ', body, 0)
        if cid not in self.channels:
            self.scan.note(self.where(pos), f'message names unknown channel {cid}')
            return None
        if not lo <= log_time <= hi:
            self.scan.note(self.where(pos), f'message time {log_time} outside its chunk '
                           f'[{lo}, {hi}]')
            return None
        self.used_channels.add(cid)
        return self.channels[cid], log_time, bytes(body[22:])


def _records(data, start: int, end: int):
    """Yield ``(pos, opcode, body_start, body_end)``; ``(pos, None, ...)`` at a bad record."""
    pos = start
    while pos < end:
        if pos + 9 > end:
            yield pos, None, pos, end
            return
        op = data[pos]
        (length,) = struct.unpack_from('<Q', data, pos + 1)
        if op not in KNOWN_OPS or length > end - pos - 9:
            yield pos, None, pos, end
            return
        yield pos, op, pos + 9, pos + 9 + length
        pos += 9 + length


def _chunk_parts(body):
    """Return ``(start, end, uncompressed size, crc, compression, compressed bytes)`` or raise."""
    b = _Buf(body)
    start, end, usize, crc = b.u64(), b.u64(), b.u64(), b.u32()
    compression = b.string(64)
    csize = b.u64()
    if compression not in COMPRESSIONS:
        raise ValueError(f'unknown compression {compression!r}')
    if b.pos + csize != len(body):
        raise ValueError(f'compressed size {csize} does not fill the chunk record')
    return start, end, usize, crc, compression, b.take(csize)


def _plausible_chunk(data, pos: int, end: int) -> bool:
    """Return True if the bytes at ``pos`` parse as a whole chunk record ending by ``end``."""
    try:
        (length,) = struct.unpack_from('<Q', data, pos + 1)
        if data[pos] != OP_CHUNK or length < 40 or pos + 9 + length > end:
            return False
        _chunk_parts(memoryview(data)[pos + 9:pos + 9 + length])
        return True
    except (ValueError, struct.error, UnicodeDecodeError, IndexError):
        return False


def _next_chunk(m: _Mcap, data, pos: int, end: int) -> int | None:
    """Return the start of the next chunk after ``pos`` (summary index, else a search)."""
    for start in m.chunk_starts:
        if pos < start < end:
            return start
    if m.chunk_starts:
        return None
    at = data.find(bytes([OP_CHUNK]), pos + 1, end)
    while at != -1:
        if _plausible_chunk(data, at, end):
            return at
        at = data.find(bytes([OP_CHUNK]), at + 1, end)
    return None


def _summary(m: _Mcap, data, start: int, end: int) -> None:
    """Read schemas, channels, chunk starts and statistics from the summary section."""
    stats = None
    for pos, op, b0, b1 in _records(data, start, end):
        if op is None:
            m.scan.note(m.where(pos), 'summary section damaged')
            break
        body = memoryview(data)[b0:b1]
        try:
            if op == OP_SCHEMA:
                m.schema(body)
            elif op == OP_CHANNEL:
                m.channel(body)
            elif op == OP_CHUNK_INDEX:
                b = _Buf(body)
                lo, hi, offset, length = b.u64(), b.u64(), b.u64(), b.u64()
                n = b.u32()
                records = dict(struct.unpack('<HQ', b.take(10)) for _ in range(n // 10))
                mi_length = b.u64()
                compression = b.string(64)
                m.indexed_chunks[offset] = (lo, hi, length, records, mi_length, compression,
                                            b.u64(), b.u64())
            elif op == OP_STATISTICS:
                b = _Buf(body, 42)
                n = b.u32()
                stats = dict(struct.unpack_from('<HQ', body, 46 + 10 * i) for i in range(n // 10))
        except (ValueError, struct.error, UnicodeDecodeError) as exc:
            m.scan.note(m.where(pos), f'summary record damaged ({one_line(exc)})')
    m.summary_channels = dict(m.channels)
    if stats is not None:
        for cid, n in stats.items():
            if cid in m.channels:
                topic = m.channels[cid]
                m.scan.indexed[topic] = m.scan.indexed.get(topic, 0) + n


def _scan_mcap(path: pathlib.Path, scan: Scan) -> Iterator[Message]:
    from rosbags.rosbag2.errors import ReaderError
    from rosbags.rosbag2.storage_mcap import decompress
    try:
        with open(path, 'rb') as f:
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as exc:  # ValueError: an empty file cannot be mapped
        raise ScanError(f'{path}: cannot read ({one_line(exc)})') from None
    if data[:8] != MAGIC:
        raise ScanError(f'{path}: not an MCAP file (no MCAP magic)')
    m = _Mcap(path, scan)
    size = len(data)
    end = size
    footer = size - FOOTER_LEN
    if size >= 8 + FOOTER_LEN and data[size - 8:] == MAGIC and data[footer] == OP_FOOTER:
        (summary_start,) = struct.unpack_from('<Q', data, footer + 9)
        end = footer
        if summary_start:
            if 8 <= summary_start <= footer:
                _summary(m, data, summary_start, footer)
                end = summary_start
            else:
                scan.note(m.where(footer), 'footer points outside the file')
    else:
        scan.note(m.where(size), 'no MCAP footer (recording killed, or the end is damaged)')
    pos = 8
    while pos < end:
        bad = None
        for rpos, op, b0, b1 in _records(data, pos, end):
            pos = b1
            if op is None:
                bad = rpos
                break
            body = memoryview(data)[b0:b1]
            try:
                if op == OP_MESSAGE and (m.indexed_chunks or m.found_chunks):
                    # A writer that chunks writes every message into a chunk: bytes that
                    # parse as a message between chunks are damage, not data.
                    scan.note(m.where(rpos), 'message record outside any chunk')
                    continue
                got = m.record(op, body, rpos)
                if got is not None:
                    yield from _emit(scan, got)
                elif op == OP_CHUNK:
                    indexed = _message_index(data, b1, end)
                    yield from _scan_chunk(m, body, rpos, indexed, decompress, ReaderError)
                elif op == OP_DATA_END:
                    pos = end
                    break
            except (ValueError, struct.error, UnicodeDecodeError) as exc:
                scan.note(m.where(rpos), f'record (opcode {op:#04x}) damaged: {one_line(exc)}')
        if bad is None:
            break
        nxt = _next_chunk(m, data, bad, end)
        what = 'record cut off or overwritten'
        scan.note(m.where(bad), f'{what}; reading resumes at byte {nxt:,}' if nxt is not None
                  else f'{what}; nothing readable after it')
        if nxt is None:
            break
        pos = nxt
    _check_chunk_index(m)


def _check_chunk_index(m: _Mcap) -> None:
    """Note where the summary's chunk index or channels (what rosbags reads by) disagree."""
    if m.summary_channels:
        for cid in sorted(m.used_channels):
            if m.summary_channels.get(cid) != m.channels[cid]:
                m.scan.note(m.path.name, f'the summary does not list channel {cid} '
                            f'(`{m.channels[cid]}`) as the data does (summary damaged)')
    if not m.indexed_chunks:
        return
    for offset, found in sorted(m.found_chunks.items()):
        if m.indexed_chunks.get(offset) != found:
            m.scan.note(m.where(offset), 'the summary\'s chunk index does not match this '
                        'chunk (summary damaged)')
    for offset in sorted(set(m.indexed_chunks) - set(m.found_chunks)):
        m.scan.note(m.where(offset), 'the summary lists a chunk that is not here')


def _emit(scan: Scan, got) -> Iterator[Message]:
    """Count and yield one message (none on a topic the bag's metadata does not list)."""
    topic, ts, raw = got
    if scan.expected and topic not in scan.expected:
        if topic not in scan.foreign:  # noted once per topic name
            scan.note(f'topic `{topic}`', 'not in metadata.yaml: a damaged channel record; its '
                      'messages are not used')
            scan.foreign.add(topic)
        return
    scan.count(topic, ts)
    msgtype, msgdef = scan.connections.get(topic, ('', ''))
    yield topic, msgtype, msgdef, ts, raw


class _MessageIndex(NamedTuple):
    """The message index records after a chunk."""

    entries: dict  # offset in the chunk's records -> (channel, log_time)
    records: dict  # channel -> file offset of its message index record
    length: int  # bytes of all of them


def _message_index(data, pos: int, end: int) -> _MessageIndex:
    """Read the message index records that follow a chunk ending at ``pos``."""
    out, records, last = {}, {}, pos
    for rpos, op, b0, b1 in _records(data, pos, end):
        if op != OP_MESSAGE_INDEX:
            break
        try:
            b = _Buf(data, b0, b1)
            cid = b.u16()
            n = b.u32()
            for _ in range(n // 16):
                ts, offset = b.u64(), b.u64()
                out[offset] = (cid, ts)
        except ValueError:
            break
        records[cid] = rpos
        last = b1
    return _MessageIndex(out, records, last - pos)


def _scan_chunk(m: _Mcap, body, pos: int, index: _MessageIndex, decompress, reader_error
                ) -> Iterator[Message]:
    """Yield the valid messages of one chunk record at ``pos``."""
    indexed = index.entries
    try:
        lo, hi, usize, crc, compression, blob = _chunk_parts(body)
        # As the summary's chunk index must describe it (rosbags reads by the index).
        m.found_chunks[pos] = (lo, hi, len(body) + 9, index.records, index.length,
                               compression, len(blob), usize)
        records = decompress(bytes(blob), compression, usize, crc)
    except (ValueError, struct.error, UnicodeDecodeError, reader_error) as exc:
        m.scan.note(m.where(pos), f'chunk damaged, its messages are lost ({one_line(exc)})')
        return
    seen = set()
    broken = None
    for rpos, op, b0, b1 in _records(records, 0, len(records)):
        if op is None:
            broken = rpos
            break
        try:
            got = m.record(op, memoryview(records)[b0:b1], pos, lo, hi)
            if got is not None:
                seen.add(rpos)
                yield from _emit(m.scan, got)
        except (ValueError, struct.error, UnicodeDecodeError) as exc:
            m.scan.note(m.where(pos), f'chunk record at {rpos} damaged: {one_line(exc)}')
    if broken is None:
        return
    # The chunk's message index lists every message's offset: read those after the damage.
    rescued = 0
    for off in sorted(o for o in indexed if o > broken and o not in seen):
        cid, ts = indexed[off]
        got = None
        if off + 9 + 22 <= len(records) and records[off] == OP_MESSAGE:
            (length,) = struct.unpack_from('<Q', records, off + 1)
            if 22 <= length <= len(records) - off - 9:
                rec = memoryview(records)[off + 9:off + 9 + length]
                if struct.unpack_from('<H', rec, 0)[0] == cid \
                        and struct.unpack_from('<Q', rec, 6)[0] == ts:
                    got = m.message(rec, pos, lo, hi)
        if got is not None:
            rescued += 1
            yield from _emit(m.scan, got)
    m.scan.note(m.where(pos), f'chunk records damaged from offset {broken:,} of '
                f'{len(records):,}; {rescued} later message(s) read again from its index')


def seal_chunks(path: pathlib.Path, start: int = 8) -> int:
    """
    Write the CRC-32 of each complete chunk's records into its header, from byte ``start``.

    rosbags writes chunks with CRC 0 ("not computed"), which leaves a damaged
    payload undetectable. Chunks are only appended, so a complete chunk can be
    sealed in place (also while the writer appends after it). Returns where
    the next unsealed record starts.
    """
    import zlib
    from rosbags.rosbag2.storage_mcap import decompress
    with open(path, 'r+b') as f:
        data = f.read()
        pos = start
        for rpos, op, b0, b1 in _records(data, start, len(data)):
            if op is None:
                break
            if op == OP_CHUNK:
                try:
                    lo, hi, usize, crc, compression, blob = _chunk_parts(memoryview(data)[b0:b1])
                except (ValueError, struct.error, UnicodeDecodeError):
                    break
                if crc == 0:
                    records = decompress(bytes(blob), compression, usize, 0)
                    f.seek(b0 + 24)
                    f.write(struct.pack('<I', zlib.crc32(records)))
            pos = b1
    return pos


# ------------------------------------------------------------------ sqlite3
_ROWS = 'SELECT id, topic_id, timestamp, data FROM messages'


def _scan_sqlite(path: pathlib.Path, scan: Scan) -> Iterator[Message]:
    where = path.name
    try:
        con = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
        con.text_factory = bytes  # a damaged text cell must not stop the query with a decode error
        topics = _topics(con, scan, where)
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # the decode: a damaged schema text
        raise ScanError(f'{path}: not a readable sqlite3 bag ({one_line(exc)})') from None
    try:
        try:
            defs = {t.decode(): d.decode() for t, d in con.execute(
                'SELECT topic_type, encoded_message_definition FROM message_definitions')}
        except (sqlite3.Error, UnicodeDecodeError, AttributeError, ValueError, TypeError):
            defs = {}  # older bags have no such table; a damaged one loses only definitions
        for name, msgtype in topics.values():
            scan.connections.setdefault(name, (msgtype, defs.get(msgtype, '')))
        last = 0
        while True:
            try:
                for row in con.execute(f'{_ROWS} WHERE id > ? ORDER BY id', (last,)):
                    last = row[0] if isinstance(row[0], int) and row[0] > last else last + 1
                    got = _row(row, topics, scan, where)
                    if got is not None:
                        yield got
                break
            except (sqlite3.Error, UnicodeDecodeError) as exc:
                row = _next_readable(con, last)
                if row is None:
                    scan.note(f'{where}: rows after id {last}', f'unreadable ({one_line(exc)})')
                    break
                first, last = last + 1, row[0]
                if last > first:
                    scan.note(f'{where}: row ids {first}-{last - 1}',
                              f'unreadable ({one_line(exc)})')
                got = _row(row, topics, scan, where)
                if got is not None:
                    yield got
    finally:
        con.close()


def read_sqlite(path: pathlib.Path, topics=None) -> Iterator[Message]:
    """
    Yield the messages of an intact sqlite3 bag in time-stamp order, from the table itself.

    ``NOT INDEXED``: rosbags orders by the time-stamp index, and a damaged index
    hides rows from it without an error; the table's own b-tree is what
    :func:`scan_file` checked.
    """
    scan = Scan()
    con = sqlite3.connect(f'file:{path}?mode=ro', uri=True)
    con.text_factory = bytes
    try:
        names = _topics(con, scan, path.name)
        for name, msgtype in names.values():
            scan.connections.setdefault(name, (msgtype, ''))
        for row in con.execute(f'{_ROWS} NOT INDEXED ORDER BY timestamp, id'):
            got = _row(row, names, scan, path.name)
            if got is not None and (topics is None or got[0] in topics):
                yield got
    finally:
        con.close()


def _topics(con, scan: Scan, where: str) -> dict[int, tuple[str, str]]:
    """Return ``{topic id: (name, type)}``; a damaged row is noted and left out."""
    out = {}
    for row in con.execute('SELECT id, name, type FROM topics'):
        try:
            tid, name, msgtype = row
            out[int(tid)] = (name.decode(), msgtype.decode())
        except (TypeError, ValueError, AttributeError, UnicodeDecodeError):
            scan.note(f'{where}: topics row {row[:1]!r}', 'damaged; its messages are not used')
    return out


def _next_readable(con, last: int):
    """
    Return the first row after ``last`` that a query reaches past a damaged page, or None.

    ``WHERE id > x`` seeks through the table's b-tree: it fails while ``x``
    lies in the damaged range and works past it. Steps double until a seek
    works, then a bisection finds the smallest such ``x`` (ids are whole
    numbers: about 2 log2(gap) queries).
    """
    def seek(after):
        return con.execute(f'{_ROWS} WHERE id > ? ORDER BY id LIMIT 1', (after,)).fetchone()

    lo, step = last, 1
    while True:
        if last + step > 2**62:
            return None
        try:
            row = seek(last + step)
            break
        except (sqlite3.Error, UnicodeDecodeError):
            lo = last + step
            step *= 2
    hi = last + step
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            row, hi = seek(mid), mid
        except (sqlite3.Error, UnicodeDecodeError):
            lo = mid
    if row is None or not isinstance(row[0], int) or row[0] <= last:
        return None
    return row


def _row(row, topics, scan: Scan, where: str):
    rid, tid, ts, data = row
    if not (isinstance(rid, int) and isinstance(tid, int) and tid in topics
            and isinstance(ts, int) and ts >= 0 and isinstance(data, bytes)):
        scan.note(f'{where}: row id {rid!r}', 'damaged (topic, time stamp or data of the '
                  'wrong type)')
        return None
    name, msgtype = topics[tid]
    scan.count(name, ts)
    return name, msgtype, scan.connections[name][1], ts, data
