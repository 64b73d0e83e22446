# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Replay schedule of a bag (no ROS): which message goes out when, under which name.

Message ``i`` with bag time ``t_i`` is due ``(t_i - t_0) / rate`` seconds
after the start of a pass, so order is the bag's time order and relative
timing is kept (scaled by ``rate``). ``--loop`` starts the next pass after the
last message of the previous one.
"""

from __future__ import annotations

from typing import Iterable, Iterator, NamedTuple


class Due(NamedTuple):
    """One message to publish ``offset_s`` after playback start."""

    offset_s: float
    topic: str      # after remapping
    msgtype: str
    stamp_ns: int   # bag time (drives /clock when the bag has none)
    raw: bytes


def parse_remaps(remaps: Iterable[str]) -> dict[str, str]:
    """Parse ``a:=b`` strings into ``{a: b}``; raise naming a malformed one."""
    out = {}
    for r in remaps or ():
        src, sep, dst = r.partition(':=')
        if not sep or not src or not dst:
            raise ValueError(f'--remap `{r}`: expected FROM:=TO')
        out[src] = dst
    return out


def schedule(messages: Iterable, rate: float = 1.0, remap: dict[str, str] | None = None,
             start_offset_s: float = 0.0) -> Iterator[Due]:
    """Yield ``Due`` for bag messages (``topic, msgtype, timestamp, raw`` tuples) in order."""
    if rate <= 0:
        raise ValueError(f'--rate must be > 0, got {rate}')
    remap = remap or {}
    t0 = None
    for m in messages:
        if t0 is None:
            t0 = m.timestamp
        yield Due(start_offset_s + (m.timestamp - t0) / 1e9 / rate, remap.get(m.topic, m.topic),
                  m.msgtype, m.timestamp, m.raw)
