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

Ours come in two architectures (``ARCHITECTURES``; a version file names its own), both
with one proposal per class (the arm's parts appear at most once each):

- ``CenterDetector`` (``centers``, the default): a CNN encoder with a small feature pyramid
  back to stride 4; per class a centre heatmap, a sub-cell offset, a size and a quality
  logit at every cell, and a presence logit per image. The box is decoded at the class's
  heatmap peak (CenterNet, Zhou et al. 2019, arXiv:1904.07850). The score is ``presence *
  quality``, where quality is trained as the probability that the box decoded at the peak
  matches the ground truth (IoU >= ``MATCH_IOU``, the rule precision is scored by), so a
  frame's confidence says what auto-accepting it risks.
- ``SlotDetector`` (``slots``, the first versions): one fully connected output slot per
  class from stride-16 features, the score ``presence * predicted IoU`` (IoU-Net, Jiang et
  al. 2018, arXiv:1807.11590). Versions saved with it still load.
"""

from __future__ import annotations

import pathlib
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

#: A proposal at or above this score is a detection.
KEEP_SCORE = 0.5
#: A detection matches a ground-truth box of its class at this IoU or more.
MATCH_IOU = 0.5


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


def _input_size(input_size) -> tuple[int, int]:
    h, w = (int(v) for v in input_size)
    if h % 16 or w % 16:
        raise ValueError(f'input size {h}x{w}: height and width must be multiples of 16')
    return h, w


def _block(cin: int, cout: int) -> nn.Sequential:
    """Two 3x3 convolutions, the first with stride 2."""
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=2, padding=1),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
                         nn.Conv2d(cout, cout, 3, padding=1),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


def _coords(h: int, w: int) -> torch.Tensor:
    # CoordConv (Liu et al. 2018, arXiv:1807.03247): position channels help a CNN regress
    # absolute coordinates.
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing='ij')
    return torch.stack([xs, ys])[None]


class SlotDetector(nn.Module):
    """A CNN with one (box, presence, IoU) slot per class; meets the output contract."""

    def __init__(self, num_classes: int, input_size=(96, 128), width: int = 32):
        """Build for ``input_size`` (H, W), both multiples of 16."""
        super().__init__()
        h, w = _input_size(input_size)
        self.num_classes = num_classes
        c = width
        self.features = nn.Sequential(_block(5, c // 2), _block(c // 2, c), _block(c, 2 * c),
                                      _block(2 * c, 2 * c))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * c * (h // 16) * (w // 16), 256),
                                  nn.ReLU(inplace=True), nn.Linear(256, num_classes * 6))
        self.register_buffer('coords', _coords(h, w), persistent=False)

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


class CenterDetector(nn.Module):
    """Per-class centre heatmaps at stride 4 with offset, size and quality; see the module."""

    #: Output channels per class at each stride-4 cell: heat, offset x/y, size w/h, quality.
    PER_CLASS = 6

    def __init__(self, num_classes: int, input_size=(96, 128), width: int = 32):
        """Build for ``input_size`` (H, W), both multiples of 16."""
        super().__init__()
        h, w = _input_size(input_size)
        self.num_classes = num_classes
        c = width
        self.down = nn.ModuleList([_block(5, c // 2), _block(c // 2, c), _block(c, 2 * c),
                                   _block(2 * c, 2 * c)])
        # Feature pyramid back to stride 4 (lateral 1x1 + upsampled coarser level).
        self.lateral8 = nn.Conv2d(2 * c, 2 * c, 1)
        self.lateral4 = nn.Conv2d(c, 2 * c, 1)
        self.smooth = nn.Sequential(nn.Conv2d(2 * c, 2 * c, 3, padding=1),
                                    nn.BatchNorm2d(2 * c), nn.ReLU(inplace=True))
        self.head = nn.Sequential(nn.Conv2d(2 * c, 2 * c, 3, padding=1), nn.ReLU(inplace=True),
                                  nn.Conv2d(2 * c, num_classes * self.PER_CLASS, 1))
        self.presence = nn.Linear(2 * c, num_classes)
        self.register_buffer('coords', _coords(h, w), persistent=False)
        with torch.no_grad():  # CenterNet's prior: heat starts near 0.1 everywhere
            self.head[-1].bias.view(num_classes, self.PER_CLASS)[:, 0].fill_(-2.19)

    def raw(self, images: torch.Tensor):
        """Return (maps [B, K, 6, H/4, W/4], presence logits [B, K])."""
        x = torch.cat([images, self.coords.expand(images.shape[0], -1, -1, -1)], dim=1)
        f2 = self.down[0](x)
        f4 = self.down[1](f2)
        f8 = self.down[2](f4)
        f16 = self.down[3](f8)
        p8 = self.lateral8(f8) + nn.functional.interpolate(f16, scale_factor=2.0)
        p4 = self.smooth(self.lateral4(f4) + nn.functional.interpolate(p8, scale_factor=2.0))
        maps = self.head(p4)
        b, _, hh, ww = maps.shape
        return (maps.view(b, self.num_classes, self.PER_CLASS, hh, ww),
                self.presence(f16.mean(dim=(2, 3))))

    @staticmethod
    def decode_at(maps: torch.Tensor, index: torch.Tensor):
        """
        Decode boxes [B, K, 4] (normalised xyxy) and quality logits [B, K] at cells ``index``.

        ``index`` [B, K] is the flat cell index (row * width + column) per class.
        """
        b, k, ch, hh, ww = maps.shape
        flat = maps.reshape(b, k, ch, hh * ww)
        at = torch.gather(flat, 3, index[:, :, None, None].expand(b, k, ch, 1))[..., 0]
        row = torch.div(index, ww, rounding_mode='floor').to(maps.dtype)
        col = (index - row.long() * ww).to(maps.dtype)
        cx = (col + torch.sigmoid(at[..., 1])) / ww
        cy = (row + torch.sigmoid(at[..., 2])) / hh
        half_w, half_h = torch.sigmoid(at[..., 3]) / 2, torch.sigmoid(at[..., 4]) / 2
        boxes = torch.stack([cx - half_w, cy - half_h, cx + half_w, cy + half_h], dim=-1)
        return boxes.clamp(0, 1), at[..., 5]

    @staticmethod
    def peaks(maps: torch.Tensor) -> torch.Tensor:
        """Return each class's heatmap peak as a flat cell index [B, K]."""
        b, k, _, hh, ww = maps.shape
        return maps[:, :, 0].reshape(b, k, hh * ww).argmax(dim=-1)

    def forward(self, images: torch.Tensor):
        """Return (boxes, scores, labels) per the output contract."""
        maps, presence = self.raw(images)
        boxes, quality = self.decode_at(maps, self.peaks(maps))
        scores = torch.sigmoid(presence) * torch.sigmoid(quality)
        labels = torch.arange(self.num_classes, device=images.device).expand(
            images.shape[0], -1)
        return boxes, scores, labels


#: Our architectures by the name a version file records (``arch``; files without one are
#: ``slots``, the first architecture).
ARCHITECTURES = {'centers': CenterDetector, 'slots': SlotDetector}


def check_arch(arch: str) -> str:
    """Return ``arch`` if it names one of ours (ValueError naming it otherwise)."""
    if arch not in ARCHITECTURES:
        raise ValueError(f'detector architecture `{arch}`: expected one of '
                         f'{", ".join(ARCHITECTURES)}')
    return arch


def check_threshold(value, what: str) -> float | None:
    """Return a calibrated threshold (None, or a number in (0, 1]); ValueError otherwise."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not 0.0 < float(value) <= 1.0:
        raise ValueError(f'{what}: threshold {value!r} must be a number in (0, 1]')
    return float(value)


def build_detector(arch: str, num_classes: int, input_size, width: int) -> nn.Module:
    """Return an untrained detector of architecture ``arch`` (ValueError naming it)."""
    return ARCHITECTURES[check_arch(arch)](num_classes, input_size, width)


class Detector:
    """A detector meeting the contract, with its classes, input size and version."""

    def __init__(self, fn, classes, input_size, version='', device='cpu', arch='',
                 threshold: float | None = None):
        """
        Wrap ``fn(images [B, 3, H, W]) -> (boxes, scores, labels)``.

        ``arch``: our architecture's name; ``threshold``: the version's calibrated
        auto-accept confidence (``train.calibrate``), None where it has none.
        """
        self.fn = fn
        self.arch = arch
        self.threshold = threshold
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
            arch = saved.get('arch', 'slots')
            model = build_detector(arch, len(saved['classes']), saved['input_size'],
                                   saved['width'])
            model.load_state_dict(saved['state_dict'])
            threshold = check_threshold(saved.get('threshold'), str(path))
        except Exception as exc:  # noqa: B902 - torch raises many types on a foreign file
            raise ValueError(f'detector {path}: not a factory detector version ({exc})') \
                from None
        model.to(device).eval()
        return Detector(model, saved['classes'], saved['input_size'], saved['version'],
                        device, arch, threshold)
    if classes is None or input_size is None:
        raise ValueError(f'detector {path}: a TorchScript or ONNX model needs --classes and '
                         '--input-size (they are not in the file)')
    if path.suffix == '.ts':
        module = torch.jit.load(str(path), map_location=device).eval()
        return Detector(module, classes, input_size, path.stem, device)
    if path.suffix == '.onnx':
        return Detector(_onnx_fn(path), classes, input_size, path.stem, 'cpu')
    raise ValueError(f'detector {path}: expected .pt (ours), .ts (TorchScript) or .onnx')
