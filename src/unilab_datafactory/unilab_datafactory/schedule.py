# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Periodic fine-tuning: a new detector version whenever enough new reviewed samples exist.

The reviewers' decisions land in the stores (``review``); ``factory finetune --every N``
counts the accepted and corrected samples of the reviewed stores, compares the count with
the one the latest version was trained with (``reviewed_count`` in its record; 0 for a
version trained before) and, at N or more new ones, fine-tunes the latest version on them
(plus the replay stores), as ``factory finetune`` does once. ``--watch`` repeats the check
every ``--poll`` seconds until ``--duration`` or Ctrl-C; ``factory live --reload`` picks
each new version up between two frames. Every version is kept with its record and scores.
"""

from __future__ import annotations

import json
import math
import pathlib
import time
from typing import Callable

import numpy as np

from unilab_datafactory.store import SampleStore

#: Reviewer decisions that make a sample a training sample for the fine-tune.
REVIEWED = ('accepted', 'corrected')


def reviewed_count(stores) -> int:
    """Return the accepted and corrected samples of ``stores`` together."""
    return sum(len(SampleStore(s).manifests(REVIEWED)) for s in stores)


def trained_count(detector_dir) -> int:
    """Return the reviewed samples the latest version was trained with (0 if unknown)."""
    from unilab_datafactory.train_detector import latest_version
    record = latest_version(detector_dir).with_suffix('.json')
    if not record.is_file():
        return 0
    return int(json.loads(record.read_text()).get('reviewed_count', 0))


def finetune_if_due(detector_dir, reviewed, every: int, train: Callable[..., dict],
                    log=print) -> dict | None:
    """
    Fine-tune the latest version when ``every`` new reviewed samples exist; else None.

    ``train(init, extra)`` trains the new version from the file ``init`` and writes
    ``extra`` into its record (``reviewed_count``); it returns the record.
    """
    from unilab_datafactory.train_detector import latest_version
    if every < 1:
        raise ValueError(f'--every {every}: must be >= 1')
    have, had = reviewed_count(reviewed), trained_count(detector_dir)
    if have - had < every:
        return None
    if log is not None:
        log(f'{have - had} new reviewed samples (>= {every}): fine-tuning '
            f'{latest_version(detector_dir).stem}')
    return train(str(latest_version(detector_dir)), {'reviewed_count': have})


def watch(detector_dir, reviewed, every: int, train: Callable[..., dict], poll_s: float,
          duration_s: float = 0.0, log=print, sleep=time.sleep) -> list[dict]:
    """Check every ``poll_s`` (for ``duration_s``; 0: until Ctrl-C); return the new records."""
    if not (math.isfinite(poll_s) and poll_s > 0):
        raise ValueError(f'--poll {poll_s}: must be a finite number > 0')
    if not (math.isfinite(duration_s) and duration_s >= 0):
        raise ValueError(f'--duration {duration_s}: must be a finite number >= 0')
    end = time.monotonic() + duration_s if duration_s > 0 else None
    records = []
    try:
        while True:
            record = finetune_if_due(detector_dir, reviewed, every, train, log)
            if record is not None:
                records.append(record)
            if end is not None and time.monotonic() + poll_s > end:
                return records
            sleep(poll_s)
    except KeyboardInterrupt:
        return records


def newer_version(detector_dir, current: str) -> pathlib.Path | None:
    """Return the latest version's file when it is not ``current`` (a version name)."""
    from unilab_datafactory.train_detector import latest_version
    try:
        path = latest_version(detector_dir)
    except (FileNotFoundError, OSError, ValueError, KeyError):
        return None  # no pointer yet, or one being replaced: ask again later
    return path if path.stem != current else None


class Reloader:
    """Every ``every_s``, open a newer version of ``directory`` (``open(path)`` -> Detector)."""

    def __init__(self, directory, every_s: float, open_detector: Callable, clock=time.monotonic):
        if not (math.isfinite(every_s) and every_s > 0):
            raise ValueError(f'--reload {every_s}: must be a finite number > 0 (s between '
                             'checks)')
        self.directory, self.every_s, self.open = directory, float(every_s), open_detector
        self.clock = clock
        self._checked = clock()
        self.errors = 0
        self.last_error = ''

    def check(self, current):
        """Return a newer, warmed-up Detector than ``current``, or None (also on a bad file)."""
        if self.clock() - self._checked < self.every_s:
            return None
        self._checked = self.clock()
        path = newer_version(self.directory, current.version)
        if path is None:
            return None
        try:
            detector = self.open(path)
            detector(np.zeros((1, *detector.input_size, 3), np.uint8))  # warm up first
        except (OSError, ValueError, RuntimeError) as exc:
            self.errors += 1
            self.last_error = f'detector {path} not taken: {exc}'
            return None
        return detector
