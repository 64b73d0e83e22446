# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A writer killed with SIGKILL in the middle of a checkpoint never corrupts one."""

import os
import pathlib
import subprocess
import sys
import textwrap

import torch
from unilab_core.atomic import remove_stale_temp_files
from unilab_policy.checkpoint import load_checkpoint, save_checkpoint

KILLER = textwrap.dedent('''
    import os, signal, sys, torch
    from unilab_policy import checkpoint
    real_save = torch.save

    def half_then_die(obj, f):
        real_save(obj, f)
        f.flush()
        f.truncate(f.tell() // 2)       # half the bytes are on disk ...
        os.kill(os.getpid(), signal.SIGKILL)   # ... when the process dies

    torch.save = half_then_die
    checkpoint.save_checkpoint(sys.argv[1], {'weights': torch.ones(1000), 'updates': 2})
''')


def test_sigkill_during_save_keeps_the_previous_checkpoint(tmp_path):
    path = tmp_path / 'latest.pt'
    save_checkpoint(path, {'weights': torch.zeros(1000), 'updates': 1})
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [str(pathlib.Path(__file__).resolve().parents[1]), env.get('PYTHONPATH', '')])
    proc = subprocess.run([sys.executable, '-c', KILLER, str(path)], env=env, timeout=120)
    assert proc.returncode == -9
    state = load_checkpoint(path)
    assert state['updates'] == 1 and torch.equal(state['weights'], torch.zeros(1000))
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith('.tmp')]
    assert len(leftovers) == 1  # the half-written temp file, never renamed
    assert remove_stale_temp_files(tmp_path) == leftovers
    assert [p.name for p in tmp_path.iterdir()] == ['latest.pt']
