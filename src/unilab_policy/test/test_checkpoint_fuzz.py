# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Truncated, bit-flipped, overwritten and crafted checkpoints: refused in one line, or intact.

Property: a damaged file either raises CheckpointError (one line naming the
file) from ``load_checkpoint`` / ``Trainer.load``, or loads exactly the state
that was saved (the digest catches what torch's zip reader does not).
"""

import math
import shutil

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from test_trainer import _rollout, _trainer
import torch
from unilab_policy.checkpoint import (CheckpointError, content_digest, load_checkpoint,
                                      save_checkpoint)
from unilab_policy.trainer import RESUME_KEYS


@pytest.fixture(scope='module')
def saved(tmp_path_factory):
    """Return a real trainer checkpoint after one update, and the state it holds."""
    run = tmp_path_factory.mktemp('run')
    tr = _trainer(run, checkpoint_every=1)
    _rollout(tr, np.random.default_rng(0))
    tr.close()
    path = run / 'checkpoints' / 'latest.pt'
    return path, torch.load(path, weights_only=True)


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and set(a) == set(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def _one_line(exc, path):
    text = str(exc)
    assert '\n' not in text and str(path) in text, text


@settings(max_examples=80, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(['truncate', 'random', 'flip', 'zero']), where=st.floats(0, 1),
       length=st.sampled_from([1, 8, 64, 1024]), seed=st.integers(0, 2**16))
def test_damaged_checkpoint_is_refused_or_intact(saved, tmp_path, kind, where, length, seed):
    src, state = saved
    path = tmp_path / 'latest.pt'
    data = bytearray(src.read_bytes())
    rng = np.random.default_rng(seed)
    at = int(where * (len(data) - 1))
    if kind == 'truncate':
        del data[at:]
    elif kind == 'flip':
        for i in rng.integers(0, len(data), max(1, length // 8)):
            data[i] ^= 1 << int(rng.integers(0, 8))
    else:
        chunk = len(data[at:at + length])
        data[at:at + length] = (rng.integers(0, 256, chunk, dtype=np.uint8).tobytes()
                                if kind == 'random' else bytes(chunk))
    path.write_bytes(bytes(data))
    try:
        loaded = load_checkpoint(path, required=RESUME_KEYS)
    except CheckpointError as exc:
        _one_line(exc, path)
        return
    assert _same(loaded, state)  # nothing silently different
    fresh = _trainer(tmp_path / 'resumed', seed=1)
    fresh.load(path)
    fresh.close()


def _crafted(tmp_path, saved, change):
    _, state = saved
    state = {k: v for k, v in state.items() if k != 'digest'}
    state = change(state)
    path = tmp_path / 'crafted.pt'
    if isinstance(state, dict) and 'digest' not in state:
        save_checkpoint(path, state)  # consistent digest: the crafting is in the content
    else:
        torch.save(state, path)
    return path


def _nan_weight(s):
    s['bundle'] = dict(s['bundle'])
    w = s['bundle']['actor_critic.actor.0.weight'].clone()
    w[0, 0] = float('nan')
    s['bundle']['actor_critic.actor.0.weight'] = w
    return s


def _wrong_shape(s):
    s['bundle'] = dict(s['bundle'])
    s['bundle']['actor_critic.actor.0.weight'] = torch.zeros(3, 3)
    return s


@pytest.mark.parametrize('change,needle', [
    (lambda s: [1, 2, 3], 'holds list'),
    (lambda s: dict(s, version=2), 'has version 2'),
    (lambda s: dict(s, version=True), 'has version True'),
    (lambda s: {k: v for k, v in s.items() if k != 'ppo'}, "lacks ['ppo']"),
    (_nan_weight, 'NaN or Inf in `bundle.actor_critic.actor.0.weight`'),
    (lambda s: dict(s, wall_s=float('inf')), 'NaN or Inf in `wall_s`'),
    (lambda s: dict(s, digest='sha256:00'), 'does not match its digest'),
    (_wrong_shape, 'does not fit: RuntimeError'),
    (lambda s: dict(s, updates='many'), 'does not fit: ValueError'),
    (lambda s: dict(s, updates=-4), 'negative counters'),
    (lambda s: dict(s, rng={'python': (1, 2)}), 'does not fit'),
    (lambda s: dict(s, ppo={'optimizer': 7}), 'does not fit'),
])
def test_crafted_checkpoints_are_refused_in_one_line(tmp_path, saved, change, needle):
    path = _crafted(tmp_path, saved, change)
    fresh = _trainer(tmp_path / 'resumed', seed=1)
    with pytest.raises(CheckpointError, match=needle.replace('[', r'\[').replace('(', r'\(')):
        fresh.load(path)
    fresh.close()
    try:
        fresh.load(path)
    except CheckpointError as exc:
        _one_line(exc, path)


def test_pickled_code_is_never_run(tmp_path):
    class Boom:
        def __reduce__(self):
            return (shutil.rmtree, (str(tmp_path / 'victim'),))
    (tmp_path / 'victim').mkdir()
    path = tmp_path / 'evil.pt'
    torch.save({'version': 1, 'payload': Boom()}, path)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    _one_line(info.value, path)
    assert (tmp_path / 'victim').is_dir()


def test_digest_covers_every_value_and_ignores_key_order():
    a = {'x': torch.arange(3.0), 'n': 1, 'f': 0.5, 't': (1, [2, 3])}
    b = dict(reversed(list(a.items())))
    assert content_digest(a) == content_digest(b)
    for changed in (dict(a, n=2), dict(a, f=0.25), dict(a, x=torch.tensor([0.0, 1.0, 2.5])),
                    dict(a, t=(1, [2, 4])), dict(a, t=[1, [2, 3]]),
                    dict(a, x=torch.arange(3.0, dtype=torch.float64))):
        assert content_digest(changed) != content_digest(a)
