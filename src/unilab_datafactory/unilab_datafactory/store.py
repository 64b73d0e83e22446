# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The sample store: one safetensors file per sample, its manifest in the file's header.

A store is a directory ``samples/<id>.safetensors``. Each file holds the tensors
``image`` [H, W, 3] uint8, ``boxes`` [M, 4] float32 (x0, y0, x1, y1 pixels), ``labels``
[M] int64 and ``scores`` [M] float32 (1 for ground truth and reviewed boxes), and a
``manifest`` (JSON in the safetensors metadata): ``id``, ``source`` (bag path or topic),
``topic``, ``stamp_ns``, ``frame_id``, ``detector_version``, ``decision`` (one of
``DECISIONS``), ``confidence`` and, once reviewed, ``proposed`` (the detector's boxes the
reviewer saw). The manifest lives with the tensors so a file copied alone still says where
it came from. Every write goes through ``unilab_core.atomic``: a reader sees the old
sample or the new one, never half. safetensors is a maintained, memory-mappable format
that stores no code (unlike pickle), so a store from elsewhere is safe to open.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import threading
import time

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file, save
from unilab_core.atomic import atomic_path, fsync_dir

#: ``ground_truth``: rendered with exact boxes; ``auto``: pseudo-label above the
#: confidence threshold; ``pending``: queued for review; then the reviewer's
#: ``accepted`` / ``corrected`` / ``rejected``.
DECISIONS = ('ground_truth', 'auto', 'pending', 'accepted', 'corrected', 'rejected')
#: Decisions whose boxes a training set may use.
TRAINABLE = ('ground_truth', 'auto', 'accepted', 'corrected')
_ID = re.compile(r'^[A-Za-z0-9_.-]+$')
#: Suffix of a written sample not yet committed (group commit; hidden, never a sample).
PENDING_SUFFIX = '.pending'


class StoreError(ValueError):
    """A store, sample or manifest cannot be used (the message names it)."""


def _check_sample(image, boxes, labels, scores):
    image = np.ascontiguousarray(image)
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise StoreError(f'image must be [H, W, 3] uint8, got {image.shape} {image.dtype}')
    boxes = np.ascontiguousarray(boxes, np.float32).reshape(-1, 4)
    labels = np.ascontiguousarray(labels, np.int64).reshape(-1)
    scores = np.ascontiguousarray(scores, np.float32).reshape(-1)
    if not (len(boxes) == len(labels) == len(scores)):
        raise StoreError(f'{len(boxes)} boxes, {len(labels)} labels, {len(scores)} scores')
    if not (np.isfinite(boxes).all() and np.isfinite(scores).all()):
        raise StoreError('boxes and scores must be finite')
    if (boxes[:, 2] < boxes[:, 0]).any() or (boxes[:, 3] < boxes[:, 1]).any():
        raise StoreError('a box has x1 < x0 or y1 < y0')
    h, w = image.shape[:2]
    if (boxes < 0).any() or (boxes[:, [0, 2]] > w).any() or (boxes[:, [1, 3]] > h).any():
        raise StoreError(f'a box lies outside the {w} x {h} image')
    if (labels < 0).any():
        raise StoreError('labels must be >= 0')
    return image, boxes, labels, scores


class SampleStore:
    """Read and write the samples of one store directory."""

    def __init__(self, root: str | pathlib.Path, create: bool = False,
                 commit_s: float = 0.0):
        """
        Open ``root`` (``create``: make it if missing; else it must exist).

        Every sample appears whole or not at all. By default each ``write`` is durable
        when it returns (file fsync, rename, directory fsync). ``commit_s`` > 0 is a
        group commit for the live path: ``write`` puts the sample's bytes in a hidden
        ``.<id>.safetensors.<n>.pending`` file (one per write) and returns; a committer
        thread, every ``commit_s`` and on ``flush()`` / ``close()``, fsyncs each pending
        file, renames it into place and fsyncs the directory once. No fsync on the
        per-frame path; a crash or power cut loses at most the last ``commit_s`` of samples
        (never a torn one), and the next open counts what it left (``uncommitted_at_open``).
        A failed commit is raised by the next ``write`` or ``flush``; its samples stay
        pending for the next commit.
        """
        if not commit_s >= 0.0:
            raise StoreError(f'commit period {commit_s}: must be >= 0')
        self.commit_s = float(commit_s)
        self.root = pathlib.Path(root)
        self.samples = self.root / 'samples'
        if create:
            self.samples.mkdir(parents=True, exist_ok=True)
        elif not self.samples.is_dir():
            raise StoreError(f'{self.root}: not a sample store (no samples/ directory)')
        self.uncommitted_at_open = len(list(self.samples.glob(f'.*{PENDING_SUFFIX}')))
        self._pending: list[tuple[pathlib.Path, pathlib.Path, float]] = []
        self._lock = threading.Lock()          # the pending list
        self._commit_lock = threading.Lock()   # one commit at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._written = 0
        #: ms from each group-committed write to its sample being durable and visible
        self.commit_ms: list[float] = []

    def path(self, sample_id: str) -> pathlib.Path:
        """Return the file of ``sample_id`` (the id is checked: no path tricks)."""
        if not _ID.match(sample_id):
            raise StoreError(f'sample id `{sample_id}`: letters, digits, _ . - only')
        return self.samples / f'{sample_id}.safetensors'

    def ids(self) -> list[str]:
        """Return the sample ids, sorted."""
        return sorted(p.stem for p in self.samples.glob('*.safetensors'))

    def next_id(self, prefix: str) -> str:
        """Return ``prefix`` + the next free 7-digit number."""
        taken = [int(i[len(prefix):]) for i in self.ids()
                 if i.startswith(prefix) and i[len(prefix):].isdigit()]
        return f'{prefix}{(max(taken) + 1) if taken else 0:07d}'

    def write(self, sample_id, image, boxes, labels, scores, manifest: dict) -> pathlib.Path:
        """Write one sample atomically; the manifest's ``decision`` must be known."""
        image, boxes, labels, scores = _check_sample(image, boxes, labels, scores)
        decision = manifest.get('decision')
        if decision not in DECISIONS:
            raise StoreError(f'decision `{decision}`: expected one of {", ".join(DECISIONS)}')
        manifest = {**manifest, 'id': sample_id}
        path = self.path(sample_id)
        data = save({'image': image, 'boxes': boxes, 'labels': labels, 'scores': scores},
                    metadata={'manifest': json.dumps(manifest, sort_keys=True)})
        if self.commit_s <= 0:
            with atomic_path(path) as tmp:
                tmp.write_bytes(data)
            return path
        self._raise_commit_error()
        with self._lock:  # one file per write: the same id twice is two renames, in order
            self._written += 1
            pending = path.with_name(f'.{path.name}.{self._written}{PENDING_SUFFIX}')
        with open(pending, 'wb') as f:
            f.write(data)
        with self._lock:
            self._pending.append((pending, path, time.monotonic()))
        if self._thread is None:
            self._thread = threading.Thread(target=self._commit_loop, daemon=True,
                                            name='store-commit')
            self._thread.start()
        return path

    def _raise_commit_error(self) -> None:
        if self._error is not None:
            raise StoreError(f'{self.root}: committing samples failed: {self._error}')

    def _commit_loop(self) -> None:
        while not self._stop.wait(self.commit_s):
            try:
                self._commit()
            except OSError as exc:  # kept for the writer: the next write or flush raises
                self._error = exc
                return

    def _commit(self) -> None:
        with self._commit_lock:
            with self._lock:
                batch, self._pending = self._pending, []
            if not batch:
                return
            for k, (pending, path, _) in enumerate(batch):
                try:
                    with open(pending, 'rb+') as f:
                        os.fsync(f.fileno())
                    os.replace(pending, path)
                except OSError:
                    with self._lock:  # not lost: the next commit tries these again
                        self._pending[:0] = batch[k:]
                    raise
            fsync_dir(self.samples)
            now = time.monotonic()
            self.commit_ms.extend(1e3 * (now - t) for _, _, t in batch)

    @property
    def uncommitted(self) -> int:
        """Return how many samples are written but not yet committed (group commit)."""
        with self._lock:
            return len(self._pending)

    def flush(self) -> None:
        """Commit every written sample now (group commit; a no-op otherwise)."""
        self._raise_commit_error()
        self._commit()

    def close(self) -> None:
        """Stop the committer thread after committing everything written."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self.flush()

    def manifest(self, sample_id: str) -> dict:
        """Return the manifest of one sample (reads only the file's header)."""
        path = self.path(sample_id)
        try:
            with safe_open(str(path), framework='numpy') as f:
                return json.loads((f.metadata() or {})['manifest'])
        except FileNotFoundError:
            raise StoreError(f'{self.root}: no sample `{sample_id}`') from None
        except Exception as exc:  # noqa: B902 - a foreign or damaged file, any reason
            raise StoreError(f'{path}: not a factory sample ({exc})') from None

    def read(self, sample_id: str) -> tuple[dict, dict]:
        """Return (tensors, manifest) of one sample."""
        manifest = self.manifest(sample_id)
        return load_file(str(self.path(sample_id))), manifest

    def manifests(self, decisions=None) -> list[dict]:
        """Return every manifest (only those whose decision is in ``decisions``)."""
        out = [self.manifest(i) for i in self.ids()]
        return [m for m in out if decisions is None or m['decision'] in decisions]

    def decide(self, sample_id: str, decision: str, boxes=None, labels=None,
               reviewer: str = '') -> dict:
        """
        Record a reviewer's decision; ``corrected`` replaces the boxes (scores become 1).

        Only a ``pending`` sample can be decided (twice is an error, not an overwrite). The
        detector's proposals stay in the manifest as ``proposed``.
        """
        if decision not in ('accepted', 'corrected', 'rejected'):
            raise StoreError(f'decision `{decision}`: accepted, corrected or rejected')
        tensors, manifest = self.read(sample_id)
        if manifest['decision'] != 'pending':
            raise StoreError(f'sample `{sample_id}` is `{manifest["decision"]}`, not pending')
        manifest['proposed'] = {'boxes': tensors['boxes'].tolist(),
                                'labels': tensors['labels'].tolist(),
                                'scores': tensors['scores'].tolist()}
        manifest['decision'] = decision
        manifest['reviewer'] = reviewer
        if decision == 'corrected':
            if boxes is None or labels is None:
                raise StoreError('a correction needs boxes and labels')
            tensors['boxes'] = np.asarray(boxes, np.float32).reshape(-1, 4)
            tensors['labels'] = np.asarray(labels, np.int64).reshape(-1)
            tensors['scores'] = np.ones(len(tensors['labels']), np.float32)
        elif decision == 'accepted':
            tensors['scores'] = np.ones_like(tensors['scores'])
        self.write(sample_id, tensors['image'], tensors['boxes'], tensors['labels'],
                   tensors['scores'], manifest)
        return manifest
