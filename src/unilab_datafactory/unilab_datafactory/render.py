# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab factory render``: rendered frames with exact boxes into a sample store."""

from __future__ import annotations

import time

import numpy as np

from unilab_datafactory.scene import ArmScene, CLASSES, DEFAULT_SIZE
from unilab_datafactory.store import SampleStore


def render_store(out, frames: int, variant: str = 'sim', seed: int = 0,
                 size=DEFAULT_SIZE, progress=None, shadows: bool = False) -> dict:
    """Render ``frames`` frames of ``variant`` into the store ``out``; return a summary."""
    if frames < 1:
        raise ValueError(f'--frames {frames}: must be >= 1')
    store = SampleStore(out, create=True)
    scene = ArmScene(size, variant, seed, shadows)
    prefix = f'render-{variant}-'
    start = int(store.next_id(prefix)[len(prefix):])
    t0 = time.perf_counter()
    present = np.zeros(len(CLASSES))
    try:
        for n in range(frames):
            f = scene.sample()
            keep = np.flatnonzero(f['present'])
            present += f['present']
            store.write(f'{prefix}{start + n:07d}', f['image'], f['boxes'][keep], keep,
                        np.ones(len(keep)), {
                            'source': f'render:arm6/front/{variant}', 'topic': '',
                            'stamp_ns': n, 'frame_id': 'front', 'detector_version': '',
                            'decision': 'ground_truth', 'variant': variant, 'seed': seed,
                            'qpos': [round(q, 6) for q in f['qpos'].tolist()],
                            'classes': list(CLASSES), 'shadows': shadows})
            if progress is not None:
                progress(n + 1, frames)
    finally:
        scene.close()
    return {'store': str(out), 'frames': frames, 'variant': variant,
            'seconds': round(time.perf_counter() - t0, 2),
            'present_share': dict(zip(CLASSES, (present / frames).round(3).tolist()))}
