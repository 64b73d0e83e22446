# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A plain ``torch.utils.data.Dataset`` over a sample store, and its collate function.

Each item is a dict: ``image`` [3, H, W] float32 in 0..1, ``boxes`` [M, 4] float32
(pixels), ``labels`` [M] int64, ``scores`` [M] float32 and ``manifest`` (dict). M varies
per sample; ``collate`` pads to the batch's largest M with label -1.
"""

from __future__ import annotations

import torch
from torch.utils.data import Dataset

from unilab_datafactory.store import SampleStore, TRAINABLE


class FactoryDataset(Dataset):
    """Samples of one store whose decision is in ``decisions`` (default: trainable ones)."""

    def __init__(self, root, decisions=TRAINABLE, transform=None):
        """Index the store once; ``transform(item) -> item`` runs on each item read."""
        self.store = SampleStore(root)
        self.manifests = self.store.manifests(decisions)
        self.transform = transform

    def __len__(self) -> int:
        """Return the number of samples."""
        return len(self.manifests)

    def __getitem__(self, i: int) -> dict:
        """Return sample ``i`` as tensors plus its manifest."""
        tensors, manifest = self.store.read(self.manifests[i]['id'])
        item = {'image': torch.from_numpy(tensors['image']).permute(2, 0, 1).float() / 255.0,
                'boxes': torch.from_numpy(tensors['boxes']),
                'labels': torch.from_numpy(tensors['labels']),
                'scores': torch.from_numpy(tensors['scores']),
                'manifest': manifest}
        return self.transform(item) if self.transform is not None else item


def collate(items: list[dict]) -> dict:
    """Stack images; pad boxes/labels/scores to [B, M_max, ...] (label -1 = padding)."""
    m = max((len(it['labels']) for it in items), default=0)
    b = len(items)
    boxes = torch.zeros(b, m, 4)
    labels = torch.full((b, m), -1, dtype=torch.int64)
    scores = torch.zeros(b, m)
    for k, it in enumerate(items):
        n = len(it['labels'])
        boxes[k, :n], labels[k, :n], scores[k, :n] = it['boxes'], it['labels'], it['scores']
    return {'image': torch.stack([it['image'] for it in items]), 'boxes': boxes,
            'labels': labels, 'scores': scores, 'manifest': [it['manifest'] for it in items]}
