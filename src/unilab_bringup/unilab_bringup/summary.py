# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A run's summary.json: the trainer's figures, the safety gate's counters and run facts."""

from __future__ import annotations

import json
import pathlib

from unilab_core.atomic import atomic_write_text


def merge_summary(run_dir: str | pathlib.Path, extra: dict) -> dict:
    """Add the safety counters (``safety_stats.json``) and ``extra`` to ``summary.json``."""
    run_dir = pathlib.Path(run_dir)
    path = run_dir / 'summary.json'
    summary = json.loads(path.read_text()) if path.is_file() else {}
    stats = run_dir / 'safety_stats.json'
    if stats.is_file():
        summary['safety'] = json.loads(stats.read_text())
    summary.update(extra)
    atomic_write_text(path, json.dumps(summary, indent=2))
    return summary
