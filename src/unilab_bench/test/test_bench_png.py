# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A bench writes its pictures where ``--png`` says, and nowhere without it.

``bench transport`` and ``bench scale`` used to draw into ``docs/img/`` of the
current folder (the checkout, under ``bin/unilab``) on every run. Each is run
here from an empty folder with its slow measurements replaced by fixed figures,
so the summary and the drawing are the real ones.
"""

import argparse
import pathlib
import tempfile

import pytest
from unilab_bench import scale, transport

PNG = b'\x89PNG\r\n\x1a\n'


def _transport(monkeypatch):
    """``bench transport`` at 3 messages; the ROS and cross-process paths give fixed latencies."""
    fixed = transport._summary([1000, 2000, 4000], 0, 4000, 0)
    monkeypatch.setattr(transport, 'isolate_ros_domain', lambda: 0)
    monkeypatch.setattr(transport, '_inproc', lambda *a: dict(fixed))
    monkeypatch.setattr(transport, '_xproc', lambda *a: dict(fixed))
    return lambda png: transport.bench_transport(argparse.Namespace(steps=3, png=png))


def _scale(monkeypatch):
    """``bench scale`` on 4 envs; the training runs and the all-reduce give fixed figures."""
    def run(ranks, num_envs, steps, task, root):
        return {'fps': 1000.0 * ranks, 'update_s': 0.4, 'collect_fps_per_rank': 4000.0}

    monkeypatch.setattr(scale, 'direct_run', run)
    monkeypatch.setattr(scale, 'allreduce_times',
                        lambda mparams, reps: {1e-6: 0.5, 0.01: 0.6, 0.1: 1.5})
    return lambda png: scale.bench_scale(argparse.Namespace(
        task=None, num_envs=4, steps=None, repeats=3, png=png))


BENCHES = {'transport': _transport, 'scale': _scale}


@pytest.mark.parametrize('name', sorted(BENCHES))
def test_a_bench_draws_only_where_png_says(name, tmp_path, monkeypatch):
    bench = BENCHES[name](monkeypatch)
    # The bench's own temporary folders (scale's runs) stay inside tmp_path too.
    (tmp_path / 'tmp').mkdir()
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path / 'tmp'))
    cwd = tmp_path / 'cwd'
    cwd.mkdir()
    monkeypatch.chdir(cwd)

    out = bench(None)
    assert out['plot'] is None
    assert list(cwd.iterdir()) == []
    assert list(tmp_path.rglob('*.png')) == []

    png = tmp_path / 'figures' / f'{name}.png'
    out = bench(str(png))
    assert out['plot'] == str(png)
    assert png.read_bytes()[:8] == PNG
    assert list(cwd.iterdir()) == []
    assert list(tmp_path.rglob('*.png')) == [png]


def test_png_on_a_bench_that_draws_nothing_is_an_error_naming_those_that_draw(
        tmp_path, monkeypatch, capsys):
    from unilab.cli import main
    from unilab_bench.registry import PICTURES
    monkeypatch.chdir(tmp_path)
    assert main(['bench', 'gae', '--png', 'gae.png', '--json', 'gae.json']) == 2
    err = capsys.readouterr().err
    assert 'bench gae draws nothing' in err and 'Traceback' not in err
    assert all(name in err for name in PICTURES)
    assert list(pathlib.Path(tmp_path).iterdir()) == []


def test_learn_keeps_its_runs_in_run_root_else_in_a_new_temporary_folder(tmp_path, monkeypatch):
    from unilab_bench.learn import _run_root
    (tmp_path / 'tmp').mkdir()
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path / 'tmp'))
    monkeypatch.chdir(tmp_path)
    assert _run_root(argparse.Namespace(run_root='kept')) == pathlib.Path('kept')
    first, second = (_run_root(argparse.Namespace(run_root=None)) for _ in range(2))
    assert first != second
    assert first.parent == second.parent == tmp_path / 'tmp' and first.is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ['tmp']
