# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab bag info``: topics, counts, duration and episode statistics of a bag."""

from __future__ import annotations

import numpy as np
from unilab.bag.dataset import batch_tensors
from unilab.bag.storage import BagReader
from unilab_core import topics


def _episode_returns(reader: BagReader) -> tuple[str, list[float], list[float]]:
    """Return (source topic, returns, lengths) of the episodes that end in the bag."""
    for topic in (topics.ROLLOUT, topics.TASK_STATE, topics.OBSERVATION):
        if topic not in reader.topics:
            continue
        returns, lengths, seen = [], [], set()
        for m in reader.messages([topic]):
            msg = reader.deserialize(m)
            key = (int(msg.version), int(msg.seq))
            if key in seen:  # re-sent state / duplicated chunk
                continue
            seen.add(key)
            t = batch_tensors(msg)
            if 'episode_return' not in t or 'terminated' not in t:
                break
            done = (t['terminated'] > 0.5) | (t['truncated'] > 0.5)
            ret, length = t['episode_return'][done], t['episode_length'][done]
            ok = np.isfinite(ret)
            returns.extend(float(x) for x in ret[ok])
            lengths.extend(float(x) for x in length[ok])
        return topic, returns, lengths
    return '', [], []


def bag_info(path) -> dict:
    """Summarise one bag as plain data."""
    with BagReader(path) as reader:
        source, returns, lengths = _episode_returns(reader)
        r = np.asarray(returns, dtype=np.float64)
        info = {
            'path': str(path), 'storage': reader.storage,
            'duration_s': reader.duration_ns / 1e9,
            'messages': sum(n for _, n in reader.topics.values()),
            'topics': {t: {'type': ty, 'count': n} for t, (ty, n) in reader.topics.items()},
            'unknown_types': dict(reader.unknown),
            'episodes': {'source': source, 'count': int(r.size)},
        }
        if r.size:
            info['episodes'].update(
                return_mean=float(r.mean()), return_std=float(r.std()),
                return_min=float(r.min()), return_max=float(r.max()),
                length_mean=float(np.mean(lengths)))
    return info


def format_info(info: dict) -> str:
    """Render ``bag_info`` like ``ros2 bag info``."""
    lines = [f'Bag:        {info["path"]}', f'Storage:    {info["storage"]}',
             f'Duration:   {info["duration_s"]:.3f} s', f'Messages:   {info["messages"]}',
             'Topics:']
    width = max((len(t) for t in info['topics']), default=0)
    for t, d in sorted(info['topics'].items()):
        flag = '  (unknown type)' if t in info['unknown_types'] else ''
        lines.append(f'  {t:{width}}  {d["count"]:>8}  {d["type"]}{flag}')
    e = info['episodes']
    if e['count']:
        lines.append(f'Episodes:   {e["count"]} ending in the bag (from {e["source"]}): return '
                     f'{e["return_mean"]:.2f} +- {e["return_std"]:.2f} '
                     f'[{e["return_min"]:.2f}, {e["return_max"]:.2f}], '
                     f'length {e["length_mean"]:.1f}')
    else:
        lines.append('Episodes:   none ending in the bag')
    return '\n'.join(lines)
