# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bag info``: topics, counts, duration and episode statistics of a bag.

Counts are what can be read (every record of the files is checked,
``unilab_bag.scan``), not what the metadata claims; a damaged bag is reported
with what is readable and what was lost, and where.

The graph's per-step topics (``STEP_TOPICS``) carry the control step's sequence number:
their first and last step in the bag and the steps missing between them are reported
(``seq``). A recorder started before a graph can still miss its first steps (the graph's
publishers are matched by DDS discovery only after they start publishing): ``first``
above the graph's first step (0 for a training) says how many.
"""

from __future__ import annotations

import numpy as np
from unilab_bag.dataset import batch_tensors
from unilab_bag.storage import BagError, BagReader
from unilab_core import topics


def _episode_returns(reader: BagReader) -> tuple[str, list[float], list[float]]:
    """Return (source topic, returns, lengths) of the episodes that end in the bag."""
    for topic in (topics.ROLLOUT, topics.TASK_STATE, topics.OBSERVATION):
        if topic not in reader.topics:
            continue
        returns, lengths, seen = [], [], set()
        for m, msg in reader.decoded([topic]):
            key = (int(msg.version), int(msg.seq))
            if key in seen:  # re-sent state / duplicated chunk
                continue
            seen.add(key)
            try:
                t = batch_tensors(msg)
            except BagError as exc:
                reader.discard(m.topic, str(exc))
                continue
            if 'episode_return' not in t or 'terminated' not in t or 'truncated' not in t:
                break
            done = (t['terminated'] > 0.5) | (t['truncated'] > 0.5)
            ret = t['episode_return'][done]
            length = t.get('episode_length', np.full(done.shape, np.nan, np.float32))[done]
            ok = np.isfinite(ret)
            returns.extend(float(x) for x in ret[ok])
            lengths.extend(float(x) for x in length[ok])
        return topic, returns, lengths
    return '', [], []


#: Topics with one message per control step, numbered by ``seq``.
STEP_TOPICS = (topics.TASK_STATE, topics.OBSERVATION, topics.ACTION, topics.SAFE_COMMAND)


def _step_coverage(reader: BagReader) -> dict[str, dict]:
    """Return {topic: {first, last, steps, missing}} of the per-step topics in the bag."""
    out = {}
    for topic in STEP_TOPICS:
        if topic not in reader.topics:
            continue
        seqs = {int(msg.seq) for _, msg in reader.decoded([topic])}
        if seqs:
            first, last = min(seqs), max(seqs)
            out[topic] = {'first': first, 'last': last, 'steps': len(seqs),
                          'missing': last - first + 1 - len(seqs)}
    return out


def bag_info(path) -> dict:
    """Summarise one bag as plain data (``damaged`` present when it is)."""
    with BagReader(path, allow_damaged=True) as reader:
        source, returns, lengths = _episode_returns(reader)
        r = np.asarray(returns, dtype=np.float64)
        h = reader.health
        info = {
            'path': str(path), 'storage': reader.storage,
            'duration_s': reader.duration_ns / 1e9,
            'messages': sum(n for _, n in reader.topics.values()),
            'topics': {t: {'type': ty, 'count': n} for t, (ty, n) in reader.topics.items()},
            'unknown_types': dict(reader.unknown),
            'episodes': {'source': source, 'count': int(r.size)},
        }
        if r.size:
            lengths = np.asarray(lengths, dtype=np.float64)
            info['episodes'].update(
                return_mean=float(r.mean()), return_std=float(r.std()),
                return_min=float(r.min()), return_max=float(r.max()),
                length_mean=float(np.nanmean(lengths)) if np.isfinite(lengths).any() else None)
        for t, cover in _step_coverage(reader).items():
            info['topics'][t]['seq'] = cover
        for t, n in h.lost.items():
            info['topics'].setdefault(t, {'type': '', 'count': 0})['lost'] = n
        if h.damaged:
            info['damaged'] = {'lost': dict(h.lost), 'lost_total': sum(h.lost.values()),
                               'expected_total': sum((h.expected or h.indexed).values()) or None,
                               'problems': list(h.problems), 'summary': h.describe()}
    return info


def format_info(info: dict) -> str:
    """Render ``bag_info`` like ``ros2 bag info``."""
    lines = [f'Bag:        {info["path"]}', f'Storage:    {info["storage"]}',
             f'Duration:   {info["duration_s"]:.3f} s', f'Messages:   {info["messages"]}',
             'Topics:']
    width = max((len(t) for t in info['topics']), default=0)
    for t, d in sorted(info['topics'].items()):
        flag = '  (unknown type)' if t in info['unknown_types'] else ''
        lost = f'  ({d["lost"]} lost)' if d.get('lost') else ''
        q = d.get('seq')
        steps = (f'  (steps {q["first"]}-{q["last"]}, {q["missing"]} missing)' if q else '')
        lines.append(f'  {t:{width}}  {d["count"]:>8}  {d["type"]}{flag}{lost}{steps}')
    e = info['episodes']
    if e['count']:
        length = 'n/a' if e['length_mean'] is None else f'{e["length_mean"]:.1f}'
        lines.append(f'Episodes:   {e["count"]} ending in the bag (from {e["source"]}): return '
                     f'{e["return_mean"]:.2f} +- {e["return_std"]:.2f} '
                     f'[{e["return_min"]:.2f}, {e["return_max"]:.2f}], '
                     f'length {length}')
    else:
        lines.append('Episodes:   none ending in the bag')
    d = info.get('damaged')
    if d:
        lines.append(f'Damaged:    {d["summary"]}')
        lines.extend(f'            {p}' for p in d['problems'][1:10])
    return '\n'.join(lines)
