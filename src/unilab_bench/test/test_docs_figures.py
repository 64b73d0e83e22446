# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The documentation's figures against the benchmark JSON they come from.

Three checks over README.md and docs/*.md: every generated block
(``<!-- figures:NAME -->``) equals what ``scripts/figures.py`` renders from
docs/bench today; every decimal number on a prose line that cites exactly one
``docs/bench/*.json`` is a value of that JSON (as written, as a percentage, or
in ms/µs), unless the line is marked ``<!-- figures:unchecked -->``; every
relative link points to a file that exists. What the second check does not
cover is listed in docs/benchmarks.md.
"""

from __future__ import annotations

import importlib.util
import json
import math
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = ROOT / 'scripts' / 'figures.py'

pytestmark = pytest.mark.skipif(not SCRIPT.exists(), reason='no source tree (scripts/figures.py)')

# A citation, not one of the JSON's history (`git log docs/bench/X.json`).
CITE = re.compile(r'(?<!git log )(?<!history of )(?<!:)docs/bench/([A-Za-z0-9_]+\.json)'
                  r'|\(bench/([A-Za-z0-9_]+\.json)\)')
# A decimal number, not a count of millions of steps ("1.5 M steps").
DECIMAL = re.compile(r'(?<![\w.])-?\d+\.\d+(?![\w.])(?! M\b)')
LINK = re.compile(r'\]\(([^)\s#]+)(#[^)\s]*)?\)')
UNCHECKED = '<!-- figures:unchecked -->'


def _figures():
    spec = importlib.util.spec_from_file_location('figures', SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _leaves(value) -> list[float]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [float(value)] if math.isfinite(value) else []
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return []


def _written_as(x: float, text: str) -> bool:
    """Return whether ``text`` (a decimal as written) is ``x`` rounded, in any of the units."""
    decimals = len(text.split('.')[1])
    half = 0.5 * 10 ** -decimals + 1e-9
    written = float(text)
    return any(abs(x * scale - written) <= half for scale in (1.0, 100.0, 1e-3, 1e3))


def unmatched_numbers(lines: list[str], bench: pathlib.Path) -> list[str]:
    """Return ``'line: number (json)'`` for each cited-JSON number the JSON does not hold."""
    bad, fence, block = [], False, False
    for n, line in enumerate(lines, 1):
        if line.startswith('```'):
            fence = not fence
        if '<!-- figures:' in line and UNCHECKED not in line:
            block = True
        if '<!-- /figures -->' in line:
            block = False
        if fence or block or UNCHECKED in line:
            continue
        cited = {a or b for a, b in CITE.findall(line)}
        if len(cited) != 1:
            continue
        name = cited.pop()
        if not (bench / name).exists():
            bad.append(f'{n}: cites missing docs/bench/{name}')
            continue
        values = _leaves(json.loads((bench / name).read_text()))
        for text in DECIMAL.findall(line):
            if not any(_written_as(v, text.lstrip('-')) or _written_as(v, text)
                       for v in values):
                bad.append(f'{n}: {text} ({name})')
    return bad


def _pages() -> list[pathlib.Path]:
    return _figures().pages()


def test_generated_blocks_match_the_json():
    figures = _figures()
    stale = []
    for page in _pages():
        _, changed = figures.render_page(page.read_text(), str(page))
        stale += [f'{page.relative_to(ROOT)}: {name}' for name in changed]
    assert not stale, f'regenerate with `python3 scripts/figures.py`: {stale}'


def test_every_figure_is_used_once():
    text = ''.join(p.read_text() for p in _pages())
    for name in _figures().FIGURES:
        assert text.count(f'<!-- figures:{name} -->') == 1, name


def test_numbers_on_lines_citing_a_bench_json_are_in_it():
    bad = []
    for page in _pages():
        bad += [f'{page.relative_to(ROOT)}:{b}'
                for b in unmatched_numbers(page.read_text().split('\n'), ROOT / 'docs' / 'bench')]
    assert not bad, 'numbers not in the cited JSON:\n' + '\n'.join(bad)


def test_the_number_check_catches_a_changed_figure(tmp_path):
    (tmp_path / 'x.json').write_text(json.dumps({'a': {'p99_us': 1761.5, 'share': 0.9348}}))
    good = ['p99 1761.5 µs = 1.76 ms, 93.48 % (`docs/bench/x.json`)']
    assert unmatched_numbers(good, tmp_path) == []
    stale = ['p99 1.80 ms (`docs/bench/x.json`)']
    assert unmatched_numbers(stale, tmp_path) == ['1: 1.80 (x.json)']
    assert unmatched_numbers(['see docs/bench/gone.json'], tmp_path) == [
        '1: cites missing docs/bench/gone.json']
    assert unmatched_numbers(['```', '9.99 docs/bench/x.json', '```'], tmp_path) == []
    # Step counts and the JSON's history are not figures of the JSON.
    assert unmatched_numbers(['1.5 M steps (docs/bench/x.json)'], tmp_path) == []
    assert unmatched_numbers(['was 9.99 (git log docs/bench/x.json)'], tmp_path) == []
    assert unmatched_numbers(['was 9.99 (git show abc1234:docs/bench/x.json)'], tmp_path) == []


def test_relative_links_point_to_files():
    missing = []
    for page in _pages():
        for target, _ in LINK.findall(page.read_text()):
            if re.match(r'[a-z]+:', target):
                continue
            if not (page.parent / target).exists():
                missing.append(f'{page.relative_to(ROOT)}: {target}')
    assert not missing, missing


def test_the_runner_records_where_a_result_comes_from(tmp_path, monkeypatch):
    import subprocess
    import sys

    from unilab_bench import command, registry
    repo = tmp_path / 'repo'
    repo.mkdir()
    git = ['git', '-c', 'user.name=t', '-c', 'user.email=t@t', '-C', str(repo)]
    subprocess.run(git[:5] + ['init', '-q', str(repo)], check=True)
    (repo / 'f').write_text('a')
    (repo / 'docs').mkdir()
    (repo / 'docs' / 'r.json').write_text('{}')
    subprocess.run(git + ['add', 'f', 'docs'], check=True)
    subprocess.run(git + ['commit', '-qm', 'c'], check=True)
    head = subprocess.run(git + ['rev-parse', 'HEAD'], capture_output=True, text=True,
                          check=True).stdout.strip()
    clean = registry.provenance(str(repo))
    assert (clean['commit'], clean['dirty']) == (head, False)
    assert clean['measured_at'].endswith('+00:00')
    # A result written before (docs/) is not a change of the measured code ...
    (repo / 'docs' / 'r.json').write_text('{"x": 1}')
    assert registry.provenance(str(repo))['dirty'] is False
    # ... a change of a tracked file elsewhere is, also seen from a subfolder.
    (repo / 'f').write_text('b')
    assert registry.provenance(str(repo))['dirty'] is True
    assert registry.provenance(str(repo / 'docs'))['dirty'] is True
    assert registry.provenance(str(tmp_path))['commit'] is None

    # The command writes them into the JSON, with the command line.
    monkeypatch.chdir(repo)
    monkeypatch.setattr(registry, 'run_benchmark', lambda name, args: {'x': 1.5})
    monkeypatch.setattr(sys, 'argv', ['unilab', 'bench', 'gae', '--json', 'out.json'])
    out = repo / 'out.json'

    class Args:
        name, json = 'gae', str(out)
    assert command._bench(Args) == 0
    written = json.loads(out.read_text())
    assert written['x'] == 1.5 and written['commit'] == head and written['dirty'] is True
    assert written['command_line'] == 'bin/unilab bench gae --json out.json'
