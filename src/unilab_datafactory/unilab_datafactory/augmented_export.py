# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab factory export``: augmented copies of a store's usable samples into a new store.

Every sample whose decision is trainable (ground truth, auto, accepted, corrected; never
pending or rejected) is augmented ``copies`` times; each copy keeps its boxes and labels
and its manifest says where it came from (``parent``, the source's manifest fields) and
what was done (``augment``: blur path in pixels, jitter factors, seed). The blur uses the
camera's rate from the manifest's ``gyro_cam`` (rad/s, camera frame) when a frame has one;
otherwise a rate drawn from N(0, ``gyro_std``) per axis stands in for the robot's motion.
"""

from __future__ import annotations

import numpy as np
import torch

from unilab_datafactory.augment import AugmentConfig, Augmenter
from unilab_datafactory.store import SampleStore, TRAINABLE


def export_store(src, out, copies: int = 1, seed: int = 0, device: str = 'cpu',
                 cfg: AugmentConfig | None = None, gyro_std: float = 1.0,
                 batch: int = 32) -> dict:
    """Augment the trainable samples of ``src`` into the store ``out``; return counts."""
    if copies < 1:
        raise ValueError(f'--copies {copies}: must be >= 1')
    source, target = SampleStore(src), SampleStore(out, create=True)
    if source.root.resolve() == target.root.resolve():
        raise ValueError(f'export {src}: the output must be another store')
    aug = Augmenter(cfg, device, seed)
    rng = np.random.default_rng(seed)
    manifests = source.manifests(TRAINABLE)
    written = 0
    for c in range(copies):
        for i in range(0, len(manifests), batch):
            group = manifests[i:i + batch]
            samples = [source.read(m['id']) for m in group]
            shapes = {t['image'].shape for t, _ in samples}
            for shape in shapes:  # one batch per image size
                part = [(t, m) for t, m in samples if t['image'].shape == shape]
                images = torch.stack([torch.from_numpy(t['image']) for t, _ in part])
                images = images.permute(0, 3, 1, 2).float() / 255.0
                gyro = np.stack([np.asarray(m.get('gyro_cam') or rng.normal(0, gyro_std, 3))
                                 for _, m in part])
                x, params = aug(images, gyro)
                x = (x * 255.0).round().to(torch.uint8).permute(0, 2, 3, 1).cpu().numpy()
                for k, (t, m) in enumerate(part):
                    record = {key: v for key, v in m.items() if key != 'id'}
                    record['parent'] = m['id']
                    record['augment'] = {'seed': seed, 'copy': c,
                                         'gyro_cam': [round(g, 5) for g in gyro[k].tolist()],
                                         **{key: v[k] for key, v in params.items()}}
                    target.write(f'{m["id"]}-aug{c}', x[k], t['boxes'], t['labels'],
                                 t['scores'], record)
                    written += 1
    return {'store': str(out), 'source': str(src), 'samples': len(manifests),
            'written': written, 'device': str(aug.device)}
