# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Atomic, ``weights_only``-loadable training checkpoints.

A checkpoint is a plain dict, e.g.::

    {'version': 1, 'model': bundle.state_dict(), 'ppo': ppo.state_dict(),
     'iteration': it, 'env_steps': steps, 'rng': capture_rng_state()}

Only tensors, numbers, strings, bools, None and dict/list/tuple containers are allowed so
``torch.load(weights_only=True)`` can read it without executing pickled code.
"""

import os
import random
from typing import Optional, Union

import numpy as np
import torch
from unilab_core.atomic import atomic_path

CHECKPOINT_VERSION = 1


class CheckpointError(RuntimeError):
    """A checkpoint file is unreadable, truncated, or from an incompatible version."""


def save_checkpoint(path: Union[str, os.PathLike], state: dict) -> None:
    """
    Write ``state`` atomically (``unilab_core.atomic.atomic_path``: temp file, fsync, rename).

    A crash leaves either the old file or the new one, never a partial file. ``version``
    is added (``CHECKPOINT_VERSION``) when missing.
    """
    state = dict(state)
    state.setdefault('version', CHECKPOINT_VERSION)
    with atomic_path(path) as tmp, open(tmp, 'wb') as f:
        torch.save(state, f)


def load_checkpoint(path: Union[str, os.PathLike],
                    map_location: Optional[Union[str, torch.device]] = 'cpu') -> dict:
    """
    Load a checkpoint with ``torch.load(weights_only=True)``.

    Raises ``FileNotFoundError`` for a missing file and ``CheckpointError`` for a corrupt or
    truncated file, a non-dict payload, or a ``version`` newer than this code understands.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f'checkpoint not found: {path}')
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises RuntimeError/EOFError/UnpicklingError/...
        raise CheckpointError(f'checkpoint {path} is corrupt or truncated '
                              f'({type(exc).__name__}: {exc})') from exc
    if not isinstance(state, dict):
        raise CheckpointError(f'checkpoint {path} holds {type(state).__name__}, expected dict')
    version = state.get('version')
    if not isinstance(version, int) or version > CHECKPOINT_VERSION:
        raise CheckpointError(f'checkpoint {path} has version {version!r}; this code reads '
                              f'versions <= {CHECKPOINT_VERSION}')
    return state


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


def remove_stale_temp_files(directory: Union[str, os.PathLike]) -> list:
    """
    Delete temp files a killed writer left behind (``.<name>.<random>.tmp``).

    They are never read as checkpoints (the rename never happened); removing
    them at start keeps a directory that saw ``kill -9`` from filling up.
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        return []
    removed = []
    for name in os.listdir(directory):
        if name.startswith('.') and name.endswith('.tmp'):
            os.unlink(os.path.join(directory, name))
            removed.append(name)
    return removed
