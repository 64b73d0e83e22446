# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The detector output contract, our compact detector, and loaders for any detector meeting it.

Contract (docs/factory.md, "Output contract"): a detector is a function of
``images`` float32 [B, 3, H, W], RGB in 0..1, at the detector's ``input_size`` (H, W)
returning ``(boxes, scores, labels)``: ``boxes`` [B, M, 4] float32 (x0, y0, x1, y1) as
fractions of the image width and height (0..1), ``scores`` [B, M] in 0..1 and ``labels``
[B, M] int64 indices into its ``classes``; M is fixed by the model. A proposal with score
>= ``KEEP_SCORE`` is a detection. A frame's confidence is ``min over proposals of
max(s, 1 - s)``: every proposal must be clearly in or clearly out; one near 0.5 makes the
frame unsure. A torch module (in process or TorchScript) or an ONNX model with these
inputs and outputs replaces ours; ``load_detector`` opens all three file kinds.

``SlotDetector`` is ours: a small CNN with one output slot per class (the arm's parts
appear at most once each), each slot a box, a presence logit and an IoU logit; the score is
``presence * predicted IoU`` so a confident but badly placed box scores low (the IoU head
follows IoU-Net, Jiang et al. 2018, arXiv:1807.11590).
"""

from __future__ import annotations

import pathlib
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

#: A proposal at or above this score is a detection.
KEEP_SCORE = 0.5


class Detections(NamedTuple):
    """Detector output in frame pixels: boxes [B, M, 4], scores [B, M], labels [B, M]."""

    boxes: np.ndarray
    scores: np.ndarray
    labels: np.ndarray


def frame_confidence(scores) -> np.ndarray:
    """Return each frame's confidence [B]: min over proposals of max(s, 1 - s)."""
    s = np.asarray(scores, np.float64)
    if s.shape[-1] == 0:
        return np.ones(s.shape[:-1])
    return np.maximum(s, 1.0 - s).min(axis=-1)


class SlotDetector(nn.Module):
    """A CNN with one (box, presence, IoU) slot per class; meets the output contract."""

    def __init__(self, num_classes: int, input_size=(96, 128), width: int = 32):
        """Build for ``input_size`` (H, W), both multiples of 16."""
        super().__init__()
        h, w = (int(v) for v in input_size)
        if h % 16 or w % 16:
            raise ValueError(f'input size {h}x{w}: height and width must be multiples of 16')
        self.num_classes = num_classes

        def block(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=2, padding=1),
                                 nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                                 nn.Conv2d(cout, cout, 3, padding=1),
                                 nn.BatchNorm2d(cout), nn.ReLU(inplace=True))
        c = width
        self.features = nn.Sequential(block(5, c // 2), block(c // 2, c), block(c, 2 * c),
                                      block(2 * c, 2 * c))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * c * (h // 16) * (w // 16), 256),
                                  nn.ReLU(inplace=True), nn.Linear(256, num_classes * 6))
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w),
                                indexing='ij')
        # CoordConv (Liu et al. 2018, arXiv:1807.03247): position channels help a CNN regress
        # absolute coordinates.
        self.register_buffer('coords', torch.stack([xs, ys])[None], persistent=False)

    def raw(self, images: torch.Tensor) -> torch.Tensor:
        """Return the slot outputs [B, K, 6]: cx, cy, w, h (logits), presence, IoU logits."""
        x = torch.cat([images, self.coords.expand(images.shape[0], -1, -1, -1)], dim=1)
        return self.head(self.features(x)).view(-1, self.num_classes, 6)

    @staticmethod
    def decode(raw: torch.Tensor):
        """Return (boxes [B, K, 4] normalised xyxy, scores [B, K]) from ``raw``."""
        cxcywh = torch.sigmoid(raw[..., :4])
        half = cxcywh[..., 2:] / 2
        boxes = torch.cat([cxcywh[..., :2] - half, cxcywh[..., :2] + half], dim=-1)
        scores = torch.sigmoid(raw[..., 4]) * torch.sigmoid(raw[..., 5])
        return boxes.clamp(0, 1), scores

    def forward(self, images: torch.Tensor):
        """Return (boxes, scores, labels) per the output contract."""
        boxes, scores = self.decode(self.raw(images))
        labels = torch.arange(self.num_classes, device=images.device).expand(
            images.shape[0], -1)
        return boxes, scores, labels


class Detector:
    """A detector meeting the contract, with its classes, input size and version."""

    def __init__(self, fn, classes, input_size, version='', device='cpu'):
        """Wrap ``fn(images [B, 3, H, W]) -> (boxes, scores, labels)``."""
        self.fn = fn
        self.classes = tuple(classes)
        self.input_size = tuple(int(v) for v in input_size)
        self.version = version
        self.device = torch.device(device)

    def __call__(self, frames: np.ndarray) -> Detections:
        """Detect on frames [B, H, W, 3] uint8 (any size: resized to the input size)."""
        frames = np.asarray(frames)
        if frames.ndim != 4 or frames.shape[3] != 3:
            raise ValueError(f'frames must be [B, H, W, 3], got {frames.shape}')
        h, w = frames.shape[1:3]
        if not frames.flags.writeable:  # e.g. a view on a message's bytes
            frames = frames.copy()
        x = torch.from_numpy(np.ascontiguousarray(frames)).to(self.device)
        x = x.permute(0, 3, 1, 2).float() / 255.0
        if (h, w) != self.input_size:
            x = nn.functional.interpolate(x, size=self.input_size, mode='bilinear',
                                          align_corners=False)
        with torch.inference_mode():
            boxes, scores, labels = self.fn(x)
        boxes = np.asarray(torch.as_tensor(boxes).cpu(), np.float32) * [w, h, w, h]
        scores = np.asarray(torch.as_tensor(scores).cpu(), np.float32)
        labels = np.asarray(torch.as_tensor(labels).cpu(), np.int64)
        if not (np.isfinite(boxes).all() and np.isfinite(scores).all()):
            raise ValueError(f'detector {self.version}: non-finite boxes or scores')
        return Detections(boxes.astype(np.float32), scores, labels)


def _onnx_fn(path):
    import onnxruntime as ort
    session = ort.InferenceSession(str(path), providers=['CPUExecutionProvider'])
    name = session.get_inputs()[0].name

    def run(x):
        return session.run(None, {name: x.cpu().numpy()})
    return run


def load_detector(path, device='cpu', classes=None, input_size=None) -> Detector:
    """
    Open a detector file: ours (a version ``.pt``), TorchScript (``.ts``) or ONNX.

    TorchScript and ONNX files carry no class names or input size: pass ``classes`` and
    ``input_size`` (H, W). Raises FileNotFoundError / ValueError naming the file.
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise FileNotFoundError(f'detector {path}: no such file')
    if path.suffix == '.pt':
        try:
            saved = torch.load(path, map_location=device, weights_only=True)
            model = SlotDetector(len(saved['classes']), saved['input_size'], saved['width'])
            model.load_state_dict(saved['state_dict'])
        except Exception as exc:  # noqa: B902 - torch raises many types on a foreign file
            raise ValueError(f'detector {path}: not a factory detector version ({exc})') \
                from None
        model.to(device).eval()
        return Detector(model, saved['classes'], saved['input_size'], saved['version'],
                        device)
    if classes is None or input_size is None:
        raise ValueError(f'detector {path}: a TorchScript or ONNX model needs --classes and '
                         '--input-size (they are not in the file)')
    if path.suffix == '.ts':
        module = torch.jit.load(str(path), map_location=device).eval()
        return Detector(module, classes, input_size, path.stem, device)
    if path.suffix == '.onnx':
        return Detector(_onnx_fn(path), classes, input_size, path.stem, 'cpu')
    raise ValueError(f'detector {path}: expected .pt (ours), .ts (TorchScript) or .onnx')
