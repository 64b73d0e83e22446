# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab train [--direct] --nproc-per-node K``: ranks started by torchrun, one writer."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest
from unilab.cli import main
from unilab.ranks import LAUNCH_OPTIONS, strip_options, torchrun_command
from unilab_policy.checkpoint import load_checkpoint
from unilab_policy.trainer import RESUME_KEYS
import yaml

RANKS, ENVS, STEPS = 2, 8, 32  # the default rollout is 32 steps per env


def _command(tmp_path, *args, checkpoint_every=20):
    quiet = tmp_path / 'quiet.yaml'
    quiet.write_text(f'logging: {{tensorboard: false, checkpoint_every: {checkpoint_every}}}\n')
    return [sys.executable, '-m', 'unilab.cli', 'train', '--direct', '--nproc-per-node',
            str(RANKS), '--num-envs', str(ENVS), '--no-progress', '--config', str(quiet), *args]


def _train(tmp_path, *args):
    return subprocess.run(_command(tmp_path, *args), capture_output=True, text=True)


def _rank_pid(rank, run_dir):
    """Return the pid of the process of ``rank`` training into ``run_dir`` (None if none)."""
    for proc in pathlib.Path('/proc').iterdir():
        try:
            cmdline = (proc / 'cmdline').read_bytes().split(b'\0')
            env = (proc / 'environ').read_bytes().split(b'\0')
        except (OSError, ValueError):
            continue
        if str(run_dir).encode() in cmdline and f'RANK={rank}'.encode() in env \
                and b'torch.distributed.run' not in cmdline:
            return int(proc.name)
    return None


def test_two_ranks_train_resume_and_write_one_checkpoint(tmp_path):
    run = tmp_path / 'run'
    per_update = RANKS * ENVS * STEPS
    first = _train(tmp_path, '--steps', str(per_update), '--run-dir', str(run))
    assert first.returncode == 0, first.stderr[-2000:]
    assert sorted(p.name for p in (run / 'checkpoints').iterdir()) == \
        ['latest.pt', 'model_000001.pt']
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['ranks'] == RANKS and summary['steps'] == per_update
    assert len((run / 'metrics.csv').read_text().splitlines()) == 2  # one writer, one update
    again = _train(tmp_path, '--steps', str(2 * per_update), '--resume', str(run))
    assert again.returncode == 0, again.stderr[-2000:]
    assert sorted(p.name for p in (run / 'checkpoints').iterdir()) == \
        ['latest.pt', 'model_000001.pt', 'model_000002.pt']
    rows = (run / 'metrics.csv').read_text().splitlines()
    assert [r.split(',')[0] for r in rows[1:]] == ['1', '2']


def test_two_ranks_each_run_their_own_graph_and_rank_0_writes_the_run(tmp_path):
    """Without --direct: one composed ROS graph per rank, each in its own ROS domain."""
    run = tmp_path / 'run'
    per_update = RANKS * ENVS * STEPS
    cmd = [c for c in _command(tmp_path, '--steps', str(2 * per_update), '--run-dir', str(run))
           if c != '--direct']
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert 'rank 1 done' in done.stdout, done.stdout[-2000:]
    summary = json.loads((run / 'summary.json').read_text())
    assert summary['ranks'] == RANKS and summary['steps'] == 2 * per_update
    assert summary['process_mode'] == 'composed'
    rows = (run / 'metrics.csv').read_text().splitlines()
    assert [r.split(',')[0] for r in rows[1:]] == ['1', '2']  # rank 0 alone writes metrics
    assert sorted(p.name for p in (run / 'checkpoints').iterdir()) == \
        ['latest.pt', 'model_000002.pt']
    # Rank 1 ran its own graph (its gate counted its own commands) and wrote no checkpoint.
    rank1 = run / 'rank1'
    assert (rank1 / 'graph_params.yaml').is_file() and not (rank1 / 'checkpoints').exists()
    for rd in (run, rank1):
        stats = json.loads((rd / 'safety_stats.json').read_text())
        assert stats['batches'] >= 2 * ENVS and stats['rejected'] == 0, stats
    params = [yaml.safe_load((rd / 'graph_params.yaml').read_text()) for rd in (run, rank1)]
    seeds = [p['bridge']['ros__parameters']['run']['seed'] for p in params]
    assert seeds == [0, 1]  # the configured seed + rank: the ranks' envs differ


def test_a_killed_rank_stops_the_run_and_the_checkpoint_stays_usable(tmp_path):
    run = tmp_path / 'run'
    proc = subprocess.Popen(_command(tmp_path, '--steps', '10000000', '--run-dir', str(run),
                                     checkpoint_every=1),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = run / 'checkpoints' / 'model_000001.pt'
        deadline = time.monotonic() + 300.0  # a guard against a hang, not a timing bound
        while not first.is_file() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        pid = _rank_pid(1, run)
        assert first.is_file() and pid is not None
        os.kill(pid, signal.SIGKILL)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1
    assert 'training failed: a rank exited with an error' in err
    assert str(run / 'checkpoints' / 'latest.pt') in err
    state = load_checkpoint(run / 'checkpoints' / 'latest.pt', required=RESUME_KEYS)
    assert state['updates'] >= 1 and state['env_steps'] == state['updates'] * RANKS * ENVS * STEPS


def test_launch_options_are_not_passed_to_the_ranks():
    argv = ['--direct', '--nproc-per-node', '2', '--nnodes=1', '--steps', '9', '--run-dir', 'x']
    assert strip_options(argv, LAUNCH_OPTIONS + ('--run-dir',)) == ['--direct', '--steps', '9']
    one = torchrun_command(['--direct'], 2)
    assert one[1:] == ['-m', 'torch.distributed.run', '--standalone', '--nproc-per-node', '2',
                       '-m', 'unilab.cli', 'train', '--direct']
    hosts = torchrun_command(['--direct'], 4, nnodes=2, node_rank=1, master_addr='gpu0')
    assert hosts[hosts.index('--rdzv-endpoint') + 1] == 'gpu0:29400'
    assert hosts[hosts.index('--node-rank') + 1] == '1'
    assert hosts[hosts.index('--rdzv-backend') + 1] == 'c10d'


@pytest.mark.parametrize('argv, message', [
    (['--nproc-per-node', '2', '--multiprocess'], 'leave out --multiprocess'),
    (['--direct', '--nproc-per-node', '2', '--nnodes', '2', '--run-dir', 'r'], '--master-addr'),
    (['--direct', '--nproc-per-node', '0'], 'must be >= 1'),
])
def test_bad_launch_options_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(['train', *argv]) == 2
    assert message in capsys.readouterr().err
