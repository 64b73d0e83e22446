# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The factory's sample store, its review decisions and the PyTorch Dataset over it."""

from factory_helpers import ground_truth_store
import numpy as np
import pytest
import torch
from unilab.factory.dataset import collate, FactoryDataset
from unilab.factory.store import SampleStore, StoreError


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


def test_batched_directory_sync_keeps_every_write_atomic_and_syncs_on_flush(tmp_path,
                                                                            monkeypatch):
    import unilab.factory.store as store_mod
    import unilab_core.atomic as atomic_mod
    synced = []
    monkeypatch.setattr(atomic_mod, 'fsync_dir', lambda d: synced.append(('write', d)))
    monkeypatch.setattr(store_mod, 'fsync_dir', lambda d: synced.append(('flush', d)))
    store = SampleStore(tmp_path / 's', create=True, dir_sync_s=3600.0)
    img = np.zeros((8, 8, 3), np.uint8)
    manifest = {'decision': 'auto'}
    for k in range(5):
        store.write(f'f{k}', img, np.zeros((0, 4)), np.zeros(0, np.int64), np.zeros(0),
                    manifest)
    assert [w for w, _ in synced] == ['write']  # the first write syncs, the next four wait
    assert store.ids() == [f'f{k}' for k in range(5)]  # each one complete and readable
    assert not list((tmp_path / 's' / 'samples').glob('.*.tmp'))
    store.flush()
    assert [w for w, _ in synced] == ['write', 'flush']
    store.flush()  # nothing new: no second sync
    assert len(synced) == 2
    every = SampleStore(tmp_path / 'e', create=True)  # the default: a sync per write
    for k in range(3):
        every.write(f'g{k}', img, np.zeros((0, 4)), np.zeros(0, np.int64), np.zeros(0),
                    manifest)
    assert len(synced) == 5
