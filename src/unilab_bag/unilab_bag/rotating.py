# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A bag writer that rotates: numbered bags of bounded size, the oldest deleted past a budget.

A recorder that runs for days beside a robot must not fill the disk: every
``rotate_bytes`` of messages the current bag is closed (index, summary,
metadata.yaml: a complete rosbag2 bag) and ``<out>/<index:05d>`` is opened;
closed bags beyond ``keep_bytes`` in total are deleted, oldest first, and
counted. Readers (the adapter's window, ``unilab bag info``) only ever see
closed bags. Same interface as :class:`unilab_bag.storage.BagWriter`.
"""

from __future__ import annotations

import pathlib
import shutil

from unilab_bag.storage import BagWriter


def bag_bytes(path: pathlib.Path) -> int:
    """Return the bytes of a bag directory's files."""
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


class RotatingBagWriter:
    """Write into ``out/00000``, ``out/00001``, ...; bounded by ``keep_bytes``."""

    def __init__(self, out: str | pathlib.Path, storage: str = 'mcap',
                 rotate_bytes: int = 64 << 20, keep_bytes: int = 1 << 30):
        if rotate_bytes <= 0 or keep_bytes < rotate_bytes:
            raise ValueError(f'need 0 < rotate_bytes <= keep_bytes, got {rotate_bytes}, '
                             f'{keep_bytes}')
        self.out = pathlib.Path(out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.storage = storage
        self.rotate_bytes, self.keep_bytes = int(rotate_bytes), int(keep_bytes)
        self._types: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.deleted = 0
        existing = sorted(int(p.name) for p in self.out.iterdir() if p.name.isdigit())
        self.index = existing[-1] + 1 if existing else 0
        self._open()

    @property
    def current(self) -> pathlib.Path:
        """Return the bag being written."""
        return self.out / f'{self.index:05d}'

    def closed_bags(self) -> list[pathlib.Path]:
        """Return the complete (closed) bags, oldest first."""
        return sorted(p for p in self.out.iterdir() if p.name.isdigit()
                      and p != self.current and (p / 'metadata.yaml').is_file())

    def _open(self) -> None:
        self._writer = BagWriter(self.current, self.storage)
        self._written = 0
        for topic, msgtype in self._types.items():
            self._writer.add_topic(topic, msgtype)

    def add_topic(self, topic: str, msgtype: str) -> None:
        """Declare a topic (in the current and every later bag)."""
        self._types[topic] = msgtype
        self.counts.setdefault(topic, 0)
        self._writer.add_topic(topic, msgtype)

    def write(self, topic: str, timestamp_ns: int, raw: bytes) -> None:
        """Store one message; rotate when the current bag is full."""
        self._writer.write(topic, timestamp_ns, raw)
        self.counts[topic] += 1
        self._written += len(raw)
        if self._written >= self.rotate_bytes:
            self.rotate()

    def rotate(self) -> None:
        """Close the current bag, start the next, delete the oldest past the budget."""
        self._writer.close()
        self.index += 1
        self._open()
        bags = self.closed_bags()
        total = sum(bag_bytes(b) for b in bags)
        for bag in bags:
            if total <= self.keep_bytes:
                break
            total -= bag_bytes(bag)
            shutil.rmtree(bag)
            self.deleted += 1

    def flush(self) -> None:
        """Make the current bag's messages durable against a kill."""
        self._writer.flush()

    def close(self) -> None:
        """Close the current bag."""
        self._writer.close()
