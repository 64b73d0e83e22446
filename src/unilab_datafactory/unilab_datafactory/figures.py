# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Figures for docs/factory.md: a precision-recall plot and frames with their labels."""

from __future__ import annotations

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402 - after choosing the headless backend

from unilab_datafactory.store import SampleStore  # noqa: E402

COLORS = ('tab:red', 'tab:green', 'gold', 'tab:cyan', 'tab:purple')


def plot_pr(curves: dict, out) -> None:
    """Plot precision against recall; ``curves``: label -> ``pr_curve`` list."""
    fig, ax = plt.subplots(figsize=(5, 4))
    for label, curve in curves.items():
        r = [p['recall'] for p in curve]
        p = [p['precision'] for p in curve]
        ax.plot(r, p, marker='o', ms=3, label=label)
    ax.set_xlabel('recall (IoU >= 0.5)')
    ax.set_ylabel('precision')
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(loc='lower left', fontsize=8)
    ax.set_title('pseudo-labels on held-out renders (keep threshold swept)', fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_frames(root, out, count: int = 8, scale: int = 3) -> None:
    """Draw the first ``count`` samples of a store with their boxes, decision, confidence."""
    store = SampleStore(root)
    ids = store.ids()[:count]
    if not ids:
        raise ValueError(f'{root}: no samples to show')
    cols = min(4, len(ids))
    rows = (len(ids) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(cols * scale, rows * scale * 0.8),
                             squeeze=False)
    for ax in axes.flat:
        ax.axis('off')
    for ax, sample_id in zip(axes.flat, ids):
        t, m = store.read(sample_id)
        ax.imshow(t['image'], interpolation='nearest')
        names = m.get('classes', [])
        for box, label, score in zip(t['boxes'], t['labels'], t['scores']):
            x0, y0, x1, y1 = box
            c = COLORS[int(label) % len(COLORS)]
            ax.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, color=c, lw=1))
            name = names[label] if label < len(names) else str(label)
            ax.text(x0, y0 - 1, f'{name} {score:.2f}', color=c, fontsize=6)
        conf = m.get('confidence')
        ax.set_title(f'{m["decision"]}' + ('' if conf is None else f' ({conf:.2f})'),
                     fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
