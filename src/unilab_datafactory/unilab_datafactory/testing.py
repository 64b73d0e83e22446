# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Hand-made frames, stores and a stub detector for the factory tests (no rendering)."""

import numpy as np
import torch
from unilab_datafactory.detector import Detector
from unilab_datafactory.store import SampleStore

H, W = 32, 48
CLASSES = ('red', 'green')
#: The stub detector's one box, pixels (x0, y0, x1, y1).
STUB_BOX = (8.0, 4.0, 24.0, 20.0)


def frames_with_boxes(n, seed=0):
    """Return [(image, boxes [2, 4], labels [2])]: a red and a green rectangle per frame."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        img = np.full((H, W, 3), 40, np.uint8)
        boxes = []
        for c in range(2):
            w, h = rng.integers(6, 14, 2)
            x0, y0 = rng.integers(0, W - w), rng.integers(0, H - h)
            img[y0:y0 + h, x0:x0 + w] = (220, 30, 30) if c == 0 else (30, 220, 30)
            boxes.append((x0, y0, x0 + w, y0 + h))
        out.append((img, np.array(boxes, np.float32), np.arange(2)))
    return out


def ground_truth_store(path, n, seed=0):
    """Write ``n`` ground-truth frames into a new store; return it."""
    store = SampleStore(path, create=True)
    for k, (img, boxes, labels) in enumerate(frames_with_boxes(n, seed)):
        store.write(f'gt-{k:07d}', img, boxes, labels, np.ones(2), {
            'source': 'test', 'topic': '', 'stamp_ns': k, 'frame_id': 'cam',
            'detector_version': '', 'decision': 'ground_truth', 'classes': list(CLASSES)})
    return store


class StubModule(torch.nn.Module):
    """Meets the output contract: one box of class 0 whose score is pixel (0, 0, red)."""

    def forward(self, images):
        """Return (boxes [B, 1, 4] normalised, scores [B, 1], labels [B, 1])."""
        b = images.shape[0]
        box = torch.tensor(STUB_BOX) / torch.tensor([W, H, W, H])
        return (box.expand(b, 1, 4).clone(), images[:, 0, 0, 0].reshape(b, 1).clone(),
                torch.zeros(b, 1, dtype=torch.int64))


def stub_detector():
    """Return the stub wrapped as a Detector (version ``stub``)."""
    return Detector(StubModule(), CLASSES, (H, W), 'stub')


def frame_with_score(score):
    """Return a frame the stub scores ``score`` (encoded in pixel (0, 0, red))."""
    img = np.full((H, W, 3), 40, np.uint8)
    img[0, 0, 0] = round(score * 255)
    return img
