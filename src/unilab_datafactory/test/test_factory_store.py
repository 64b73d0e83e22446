# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The factory's sample store, its review decisions and the PyTorch Dataset over it."""

import time

import numpy as np
import pytest
import torch
from unilab_datafactory.store import SampleStore, StoreError
from unilab_datafactory.store_dataset import collate, FactoryDataset
from unilab_datafactory.testing import ground_truth_store


def _pending(store, sample_id='frame-0000000'):
    img = np.zeros((8, 10, 3), np.uint8)
    store.write(sample_id, img, [[1, 1, 5, 5]], [0], [0.55],
                {'source': 'bag', 'topic': '/camera/image_raw', 'stamp_ns': 7,
                 'frame_id': 'env0/camera', 'detector_version': 'v0001',
                 'decision': 'pending'})


def test_round_trip_keeps_tensors_and_manifest(tmp_path):
    store = ground_truth_store(tmp_path / 's', 3)
    tensors, manifest = store.read('gt-0000001')
    assert tensors['image'].dtype == np.uint8 and tensors['image'].shape == (32, 48, 3)
    assert tensors['boxes'].shape == (2, 4) and tensors['labels'].tolist() == [0, 1]
    assert manifest['decision'] == 'ground_truth' and manifest['id'] == 'gt-0000001'
    assert store.ids() == ['gt-0000000', 'gt-0000001', 'gt-0000002']
    assert store.next_id('gt-') == 'gt-0000003'
    assert not list((tmp_path / 's' / 'samples').glob('.*.tmp'))  # atomic: no leftovers


def test_decisions_keep_the_proposals(tmp_path):
    store = SampleStore(tmp_path, create=True)
    _pending(store)
    m = store.decide('frame-0000000', 'corrected', [[0, 0, 4, 3], [2, 2, 6, 6]], [1, 0])
    assert m['decision'] == 'corrected'
    assert m['proposed']['boxes'] == [[1, 1, 5, 5]] and m['proposed']['scores'] == [
        pytest.approx(0.55)]
    tensors, again = store.read('frame-0000000')
    assert tensors['labels'].tolist() == [1, 0] and tensors['scores'].tolist() == [1, 1]
    assert again['stamp_ns'] == 7 and again['detector_version'] == 'v0001'
    with pytest.raises(StoreError, match='not pending'):
        store.decide('frame-0000000', 'accepted')


@pytest.mark.parametrize('boxes, labels, match', [
    ([[5, 1, 1, 5]], [0], 'x1 < x0'),
    ([[0, 0, 11, 5]], [0], 'outside'),
    ([[0, 0, float('nan'), 5]], [0], 'finite'),
    ([[0, 0, 1, 1]], [-1], 'labels'),
    ([[0, 0, 1, 1]], [0, 1], 'boxes'),
])
def test_bad_corrections_are_refused(tmp_path, boxes, labels, match):
    store = SampleStore(tmp_path, create=True)
    _pending(store)
    with pytest.raises(StoreError, match=match):
        store.decide('frame-0000000', 'corrected', boxes, labels)
    assert store.manifest('frame-0000000')['decision'] == 'pending'


def test_bad_ids_decisions_and_stores(tmp_path):
    store = SampleStore(tmp_path, create=True)
    with pytest.raises(StoreError, match='letters'):
        store.path('../escape')
    with pytest.raises(StoreError, match='decision'):
        store.write('a', np.zeros((2, 2, 3), np.uint8), [], [], [], {'decision': 'maybe'})
    with pytest.raises(StoreError, match='no sample'):
        store.manifest('missing')
    with pytest.raises(StoreError, match='not a sample store'):
        SampleStore(tmp_path / 'nothing')
    (tmp_path / 'samples' / 'junk.safetensors').write_bytes(b'not safetensors')
    with pytest.raises(StoreError, match='not a factory sample'):
        store.manifest('junk')


def test_dataset_reads_trainable_samples_and_pads(tmp_path):
    store = ground_truth_store(tmp_path, 2)
    _pending(store)
    store.write('one-box', np.zeros((32, 48, 3), np.uint8), [[0, 0, 3, 3]], [1], [1.0],
                {'decision': 'accepted'})
    ds = FactoryDataset(tmp_path)
    assert len(ds) == 3  # the pending sample is left out
    item = ds[0]
    assert item['image'].shape == (3, 32, 48) and item['image'].dtype == torch.float32
    assert float(item['image'].max()) <= 1.0
    batch = collate([ds[i] for i in range(3)])
    assert batch['image'].shape == (3, 3, 32, 48) and batch['boxes'].shape == (3, 2, 4)
    assert batch['labels'][2].tolist() == [1, -1]  # padding
    assert len(FactoryDataset(tmp_path, decisions=('pending',))) == 1


def test_group_commit_keeps_fsync_off_the_write_and_loses_nothing(tmp_path, monkeypatch):
    import os
    import unilab_datafactory.store as store_mod
    import unilab_core.atomic as atomic_mod
    fsyncs = []
    real_fsync = os.fsync
    monkeypatch.setattr(store_mod.os, 'fsync', lambda fd: (fsyncs.append(fd), real_fsync(fd)))
    dir_syncs = []
    monkeypatch.setattr(store_mod, 'fsync_dir', lambda d: dir_syncs.append(d))
    monkeypatch.setattr(atomic_mod, 'fsync_dir', lambda d: dir_syncs.append(d))
    samples = tmp_path / 's' / 'samples'
    store = SampleStore(tmp_path / 's', create=True, commit_s=3600.0)  # commits on flush
    img = np.zeros((8, 8, 3), np.uint8)
    manifest = {'decision': 'auto'}

    def write(st, sample_id):
        st.write(sample_id, img, np.zeros((0, 4)), np.zeros(0, np.int64), np.zeros(0),
                 manifest)
    for k in range(5):
        write(store, f'f{k}')
    # Written, not yet committed: no fsync, nothing visible, five hidden pending files.
    assert fsyncs == [] and dir_syncs == [] and store.ids() == []
    assert store.uncommitted == 5 and len(list(samples.glob('.*.pending'))) == 5
    # Another process opening the store meanwhile counts them and touches nothing.
    assert SampleStore(tmp_path / 's').uncommitted_at_open == 5
    store.flush()
    # One fsync per file, one directory fsync for the group; every sample whole.
    assert len(fsyncs) == 5 and len(dir_syncs) == 1
    assert store.ids() == [f'f{k}' for k in range(5)] and store.uncommitted == 0
    assert store.read('f3')[1]['id'] == 'f3' and not list(samples.glob('.*.pending'))
    assert len(store.commit_ms) == 5 and min(store.commit_ms) >= 0
    store.flush()  # nothing new: no second directory sync
    assert len(dir_syncs) == 1
    # The same id written twice before a commit: the second write is the one kept.
    for boxes in (np.zeros((0, 4)), np.array([[1.0, 1.0, 4.0, 4.0]])):
        store.write('twice', img, boxes, np.zeros(len(boxes), np.int64),
                    np.zeros(len(boxes)), manifest)
    store.flush()
    assert store.read('twice')[0]['boxes'].tolist() == [[1.0, 1.0, 4.0, 4.0]]
    assert not list(samples.glob('.*.pending'))
    # A crash before the commit: the next open counts what was left, never shows it.
    write(store, 'lost')
    assert SampleStore(tmp_path / 's').uncommitted_at_open == 1
    assert 'lost' not in SampleStore(tmp_path / 's').ids()
    # The committer thread commits on its own, and close() commits the rest.
    timed = SampleStore(tmp_path / 't', create=True, commit_s=0.05)
    write(timed, 'a')
    deadline = time.monotonic() + 30
    while timed.ids() != ['a'] and time.monotonic() < deadline:
        time.sleep(0.01)
    assert timed.ids() == ['a']
    write(timed, 'b')
    timed.close()
    assert timed.ids() == ['a', 'b']
    # The default: durable when write returns (file + directory fsync per sample).
    every = SampleStore(tmp_path / 'e', create=True)
    before = len(dir_syncs)
    write(every, 'g0')
    assert every.ids() == ['g0'] and len(dir_syncs) == before + 1
    with pytest.raises(StoreError, match='commit period nan'):
        SampleStore(tmp_path / 'x', create=True, commit_s=float('nan'))


def test_a_failed_group_commit_is_raised_not_dropped(tmp_path, monkeypatch):
    import unilab_datafactory.store as store_mod
    img = np.zeros((8, 8, 3), np.uint8)

    def write(st, sample_id):
        st.write(sample_id, img, np.zeros((0, 4)), np.zeros(0, np.int64), np.zeros(0),
                 {'decision': 'auto'})

    def full(_fd):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(store_mod.os, 'fsync', full)
    store = SampleStore(tmp_path / 's', create=True, commit_s=3600.0)
    write(store, 'a')
    with pytest.raises(OSError, match='No space left'):
        store.flush()
    # Still pending, not dropped: once the disk has room the next commit makes it.
    assert store.uncommitted == 1 and store.ids() == []
    monkeypatch.undo()
    store.flush()
    assert store.ids() == ['a'] and store.uncommitted == 0
    monkeypatch.setattr(store_mod.os, 'fsync', full)
    # In the committer thread the error is kept and raised by the next write.
    timed = SampleStore(tmp_path / 't', create=True, commit_s=0.02)
    write(timed, 'a')
    deadline = time.monotonic() + 30
    with pytest.raises(StoreError, match='committing samples failed: .*No space left'):
        while time.monotonic() < deadline:
            write(timed, f'n{time.monotonic_ns()}')
            time.sleep(0.01)
    with pytest.raises(StoreError, match='committing samples failed'):
        timed.close()
