#!/usr/bin/env python3
# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Render result tables from docs/bench JSON into the Markdown pages.

A generated block sits between ``<!-- figures:NAME -->`` and ``<!-- /figures -->``;
``python3 scripts/figures.py`` rewrites every block of README.md and docs/*.md from
the JSON, ``--check`` only reports blocks that differ (exit 1). NAME is a key of
FIGURES. ``src/unilab_bench/test/test_docs_figures.py`` runs the same check.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOCK = re.compile(r'(<!-- figures:([a-z0-9_]+) -->\n)(.*?)(<!-- /figures -->)', re.S)


def load(name: str) -> dict:
    """Return docs/bench/NAME as a dict."""
    return json.loads((ROOT / 'docs' / 'bench' / name).read_text())


def _pct(x: float) -> str:
    return f'{100 * x:.0f} %'


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
    lines += ['| ' + ' | '.join(r) + ' |' for r in rows]
    return '\n'.join(lines) + '\n'


def learn_arm6() -> str:
    """Return the default arm run's table: one row per seed and the IK expert."""
    d = load('learn_arm6.json')
    seeds = sorted(d['per_seed'].items(), key=lambda kv: int(kv[0]))
    # return_first appears only where the bench recorded it.
    first = all('train_return_first' in r for _, r in seeds)
    rows = []
    for seed, r in seeds:
        rows.append([seed] + ([f'{r["train_return_first"]:.1f}'] if first else [])
                    + [f'{r["train_return_last"]:.2f}', f'{r["eval_return"]:.2f}',
                       _pct(r['eval_success']), f'{r["wall_s"]:,.0f}'])
    e = d['expert']
    rows.append(['IK expert (same episodes, same gate)'] + ([''] if first else [])
                + ['', f'{e["return"]:.2f}', _pct(e['success']), ''])
    header = (['seed'] + (['return_first'] if first else [])
              + ['return_last (training)', 'deterministic eval return', 'reach success',
                 'wall_s'])
    return (_table(header, rows)
            + f'\nSource: `docs/bench/learn_arm6.json` (commit `{str(d.get("commit"))[:10]}`).\n')


def headline() -> str:
    """Return README's headline table: one line per area, each from its JSON."""
    arm = load('learn_arm6.json')
    quad = load('quad_walk_eval.json')
    safety = load('safety.json')
    deploy = load('deploy.json')
    rows = [
        ['`arm6_reach` (default run, 3 seeds)',
         f'eval return {arm["eval_return"]["mean"]:.2f} ± {arm["eval_return"]["std"]:.2f}, '
         f'{arm["expert_share"] * 100:.0f} % of the IK expert, reach success '
         f'{_pct(arm["eval_success"]["mean"])}', '`docs/bench/learn_arm6.json`'],
        ['`quad_walk` at 0.5 m/s',
         f'velocity error {quad["vx0.5"]["vx_error"]:.3f} m/s, survival '
         f'{_pct(quad["vx0.5"]["survival"])}', '`docs/bench/quad_walk_eval.json`'],
        ['deploy path (arm6 double, 50 Hz)',
         f'p50 {deploy["deploy_p50_ms"]:.2f} ms, p99 {deploy["deploy_p99_ms"]:.2f} ms '
         f'(rclpy node: {deploy["rclpy_p50_ms"]:.2f} / {deploy["rclpy_p99_ms"]:.2f} ms)',
         '`docs/bench/deploy.json`'],
        ['safety loop, 1 kHz under load',
         f'p99 {safety["unilab_p99_us"] / 1000:.2f} ms, max '
         f'{safety["unilab_max_us"] / 1000:.1f} ms (target 0.05 / 0.5 ms: '
         f'{"met" if safety["target_met"] else "not met"})',
         '`docs/bench/safety.json`'],
    ]
    return _table(['what', 'result', 'source'], rows)


FIGURES = {'learn_arm6': learn_arm6, 'headline': headline}


def pages() -> list[pathlib.Path]:
    """Return the Markdown pages that may hold generated blocks."""
    return [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]


def render_page(text: str, where: str = '') -> tuple[str, list[str]]:
    """Return the page with every block regenerated, and the names of blocks that changed."""
    changed = []

    def rep(m: re.Match) -> str:
        name = m.group(2)
        if name not in FIGURES:
            raise SystemExit(f'{where}: unknown figure `{name}`; known: {", ".join(FIGURES)}')
        new = FIGURES[name]()
        if new != m.group(3):
            changed.append(name)
        return m.group(1) + new + m.group(4)

    return BLOCK.sub(rep, text), changed


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or with --check, compare) every generated block."""
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0].strip())
    p.add_argument('--check', action='store_true', help='report stale blocks, exit 1')
    args = p.parse_args(argv)
    stale = []
    for page in pages():
        text = page.read_text()
        new, changed = render_page(text, str(page.relative_to(ROOT)))
        stale += [f'{page.relative_to(ROOT)}: {name}' for name in changed]
        if changed and not args.check:
            page.write_text(new)
    for s in stale:
        print(('stale: ' if args.check else 'updated: ') + s)
    return 1 if stale and args.check else 0


if __name__ == '__main__':
    sys.exit(main())
