# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""After a kill and a resume from an older checkpoint, metrics hold one history."""

import csv

import numpy as np
from test_trainer import _rollout, _trainer
from unilab_policy.run_log import RunLog


def _scalars(logdir, tag):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    acc = EventAccumulator(str(logdir))
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def _rows(path):
    with open(path, newline='') as f:
        return list(csv.DictReader(f))


def test_truncate_keeps_rows_up_to_the_checkpoint_and_purges_tensorboard(tmp_path):
    log = RunLog(tmp_path, tensorboard=True)
    for u in range(1, 7):  # first life: updates 1..6, checkpoint at 4, killed after 6
        log.write(u, 100 * u, {'losses/value': float(u)})
    log._file.write('7,700,0.')  # a row cut short by the kill
    log._file.flush()
    log._tb.flush()  # what a killed writer had flushed
    log._tb = None  # killed: never closed
    log._file = None
    log._writer = None

    resumed = RunLog(tmp_path, tensorboard=True)
    assert resumed.truncate(4, 400) == 3  # rows 5, 6 and the torn one
    for u in range(5, 9):  # second life from the checkpoint: 5.. again, other values
        resumed.write(u, 100 * u, {'losses/value': 10.0 * u})
    resumed.close()

    rows = _rows(tmp_path / 'metrics.csv')
    assert [int(r['update']) for r in rows] == list(range(1, 9))
    assert [float(r['losses/value']) for r in rows] == [1, 2, 3, 4, 50, 60, 70, 80]
    # TensorBoard: one value per step, the second life's after the checkpoint.
    assert _scalars(tmp_path / 'tensorboard', 'losses/value') == [
        (100, 1.0), (200, 2.0), (300, 3.0), (400, 4.0),
        (500, 50.0), (600, 60.0), (700, 70.0), (800, 80.0)]


def test_truncate_without_a_csv_and_of_a_garbage_csv(tmp_path):
    assert RunLog(tmp_path, tensorboard=False).truncate(3, 30) == 0
    (tmp_path / 'metrics.csv').write_bytes(b'\x00\xff garbage\nno,update,here\n')
    log = RunLog(tmp_path, tensorboard=False)
    assert log.truncate(3, 30) == 1  # rows that name no update are dropped


def test_trainer_load_truncates_the_run_log(tmp_path):
    rng = np.random.default_rng(0)
    run = tmp_path / 'run'
    tr = _trainer(run, checkpoint_every=2)
    for _ in range(3):  # updates 1, 2 (checkpoint), 3
        _rollout(tr, rng)
    tr.close()
    assert [int(r['update']) for r in _rows(run / 'metrics.csv')] == [1, 2, 3]
    fresh = _trainer(run, seed=1)
    fresh.load(run)
    assert fresh.updates == 2
    _rollout(fresh, rng)
    fresh.close()
    rows = _rows(run / 'metrics.csv')
    assert [int(r['update']) for r in rows] == [1, 2, 3]
    steps = [int(r['env_steps']) for r in rows]
    assert steps == sorted(steps) and len(set(steps)) == 3  # one history: no jump back
