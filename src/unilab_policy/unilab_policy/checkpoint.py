# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Atomic, ``weights_only``-loadable training checkpoints.

A checkpoint is a plain dict, e.g.::

    {'version': 1, 'model': bundle.state_dict(), 'ppo': ppo.state_dict(),
     'iteration': it, 'env_steps': steps, 'rng': capture_rng_state()}

Only tensors, numbers, strings, bools, None and dict/list/tuple containers are allowed so
``torch.load(weights_only=True)`` can read it without executing pickled code.

``save_checkpoint`` adds ``digest``, a SHA-256 over every key and value
(tensor bytes included): torch's zip format does not check its contents, so
a flipped bit in a weight would otherwise load as a different weight.

A file that cannot be used raises :class:`CheckpointError` with one line naming
the file and the problem: corrupt or truncated, not a dict, a newer version,
contents that do not match their digest, a key the reader needs is missing,
NaN/Inf in any number or floating tensor (a checkpoint never holds one: the
trainer rejects non-finite updates), or (:func:`restoring`) contents that do
not fit the model being restored. Files without a digest (written before it
existed) are read unchecked.
"""

import contextlib
import hashlib
import math
import os
import random
from typing import Iterator, Optional, Sequence, Union

import numpy as np
import torch
from unilab_core.atomic import atomic_path
from unilab_core.errors import one_line
from unilab_core.stop import STOP_DEFERRED

CHECKPOINT_VERSION = 1


class CheckpointError(RuntimeError):
    """A checkpoint file is unreadable, truncated, or from an incompatible version."""


def save_checkpoint(path: Union[str, os.PathLike], state: dict) -> None:
    """
    Write ``state`` atomically (``unilab_core.atomic.atomic_path``: temp file, fsync, rename).

    A crash leaves either the old file or the new one, never a partial file. ``version``
    is added (``CHECKPOINT_VERSION``) when missing. A stop signal (Ctrl-C) during the write
    is raised once the file is in place (``STOP_DEFERRED``): torch's zip writer calls back
    into Python for every record and turns an interrupt there into a RuntimeError
    (``unexpected pos``), which a caller would take for a failed write.
    """
    state = dict(state)
    state.setdefault('version', CHECKPOINT_VERSION)
    state.pop('digest', None)
    state['digest'] = content_digest(state)
    with STOP_DEFERRED, atomic_path(path) as tmp, open(tmp, 'wb') as f:
        torch.save(state, f)


def content_digest(state: dict) -> str:
    """Return ``sha256:<hex>`` over ``state`` except ``digest`` (key order does not matter)."""
    h = hashlib.sha256()
    _feed(h, {k: v for k, v in state.items() if k != 'digest'})
    return 'sha256:' + h.hexdigest()


def _feed(h, value) -> None:
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        h.update(f'T{t.dtype}{tuple(t.shape)}|'.encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b'')
    elif isinstance(value, dict):
        h.update(f'D{len(value)}|'.encode())
        for k in sorted(value, key=repr):
            _feed(h, k)
            _feed(h, value[k])
    elif isinstance(value, (list, tuple)):
        h.update(f'{type(value).__name__}{len(value)}|'.encode())
        for v in value:
            _feed(h, v)
    else:  # int, float (repr is exact), str, bool, None
        h.update(f'{type(value).__name__}:{value!r}|'.encode())


def load_checkpoint(path: Union[str, os.PathLike],
                    map_location: Optional[Union[str, torch.device]] = 'cpu',
                    required: Sequence[str] = ()) -> dict:
    """
    Load a checkpoint with ``torch.load(weights_only=True)``.

    Raises ``FileNotFoundError`` for a missing file and ``CheckpointError`` for a corrupt or
    truncated file, a non-dict payload, a ``version`` newer than this code understands, a
    missing ``required`` key, or a NaN/Inf anywhere in it.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f'checkpoint not found: {path}')
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises RuntimeError/EOFError/UnpicklingError/...
        raise CheckpointError(f'checkpoint {path} is corrupt or truncated '
                              f'({one_line(exc)})') from exc
    if not isinstance(state, dict):
        raise CheckpointError(f'checkpoint {path} holds {type(state).__name__}, expected dict')
    version = state.get('version')
    if not isinstance(version, int) or isinstance(version, bool) or version > CHECKPOINT_VERSION:
        raise CheckpointError(f'checkpoint {path} has version {version!r}; this code reads '
                              f'versions <= {CHECKPOINT_VERSION}')
    if 'digest' in state and state['digest'] != content_digest(state):
        raise CheckpointError(f'checkpoint {path} does not match its digest (changed or '
                              'damaged after it was written)')
    missing = [k for k in required if k not in state]
    if missing:
        raise CheckpointError(f'checkpoint {path} lacks {missing} (has {sorted(map(str, state))})')
    where = _first_nonfinite(state)
    if where is not None:
        raise CheckpointError(f'checkpoint {path} holds NaN or Inf in `{where}`')
    return state


def _first_nonfinite(value, where: str = '') -> Optional[str]:
    """Return the key path of the first NaN/Inf number or floating tensor in ``value``."""
    if isinstance(value, torch.Tensor):
        if (value.is_floating_point() or value.is_complex()) and value.numel() \
                and not bool(torch.isfinite(value).all()):
            return where or '.'
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else (where or '.')
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for k, v in items:
        found = _first_nonfinite(v, f'{where}.{k}' if where else str(k))
        if found is not None:
            return found
    return None


@contextlib.contextmanager
def restoring(path: Union[str, os.PathLike]) -> Iterator[None]:
    """
    Turn contents that do not fit the object being restored into one-line CheckpointErrors.

    ``load_state_dict`` of a wrong shape, a key of the wrong type, a missing
    entry: each raises its own exception type with a multi-line message.
    """
    try:
        yield
    except CheckpointError:
        raise
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError, AttributeError) as exc:
        raise CheckpointError(f'checkpoint {os.fspath(path)} does not fit: '
                              f'{one_line(exc)}') from None


def capture_rng_state() -> dict:
    """Return torch (CPU + CUDA), python and numpy global RNG states, weights_only-safe."""
    np_state = np.random.get_state()
    state = {
        'torch': torch.get_rng_state(),
        'python': random.getstate(),
        'numpy': {'keys': torch.from_numpy(np_state[1].astype(np.int64)),
                  'pos': int(np_state[2]), 'has_gauss': int(np_state[3]),
                  'cached_gaussian': float(np_state[4])},
    }
    if torch.cuda.is_available():
        state['cuda'] = torch.cuda.get_rng_state_all()
    return state


def restore_rng_state(state: dict) -> None:
    """Restore what ``capture_rng_state`` returned (missing entries are skipped)."""
    if 'torch' in state:
        torch.set_rng_state(state['torch'].cpu())
    if 'python' in state:
        py = state['python']
        random.setstate((py[0], tuple(py[1]), py[2]))
    if 'numpy' in state:
        n = state['numpy']
        np.random.set_state(('MT19937', n['keys'].cpu().numpy().astype(np.uint32), n['pos'],
                             n['has_gauss'], n['cached_gaussian']))
    if 'cuda' in state and torch.cuda.is_available():
        cuda = [s.cpu() for s in state['cuda']][:torch.cuda.device_count()]
        torch.cuda.set_rng_state_all(cuda)
