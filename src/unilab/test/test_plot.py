# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab plot``: one panel per metric, the operations preset, unknown columns refused."""

import csv

import pytest
from unilab.plot import expand_metrics, OPERATIONS, read_curve, RETURN

COLUMNS = ['update', 'env_steps', RETURN, *OPERATIONS]


def _run(tmp_path, rows):
    run = tmp_path / 'run'
    run.mkdir()
    with open(run / 'metrics.csv', 'w', newline='') as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        w.writerows(rows)
    return run


def test_operations_preset_expands_and_the_default_is_the_return():
    assert expand_metrics([]) == [RETURN]
    assert expand_metrics(['operations', 'safety/clamp_share']) == list(OPERATIONS)
    assert 'episodes/success_rate' in OPERATIONS and 'safety/clamp_share' in OPERATIONS


def test_a_column_is_read_where_it_is_a_number(tmp_path):
    nan = float('nan')
    run = _run(tmp_path, [[1, 512, -3.0, nan, nan, 0.98, 0.1, 0.0, 0.0],
                          [2, 1024, -2.0, 0.25, 100, 0.5, 0.0, 0.0, 0.01]])
    assert read_curve(run, 'episodes/success_rate') == ([1024.0], [0.25])
    assert read_curve(run, 'safety/clamp_share') == ([512.0, 1024.0], [0.98, 0.5])


def test_plot_draws_a_panel_per_metric_and_refuses_an_unknown_one(tmp_path, capsys):
    from unilab.cli import main
    run = _run(tmp_path, [[1, 512, -3.0, 0.5, 100, 0.9, 0.1, 0.0, 0.0]])
    out = tmp_path / 'p.png'
    assert main(['plot', str(run), '--out', str(out), '--metric', RETURN,
                 '--metric', 'operations']) == 0
    assert out.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert main(['plot', str(run), '--out', str(out), '--metric', 'safety/typo']) == 2
    err = capsys.readouterr().err
    assert 'no column `safety/typo`' in err and 'metrics.csv' in err


def test_rolling_mean_smooths_a_run_and_a_bad_window_is_refused(tmp_path, capsys):
    from unilab.cli import main
    from unilab.plot import rolling_mean
    assert rolling_mean([1.0, 3.0, 5.0, 7.0], 2) == [1.0, 2.0, 4.0, 6.0]
    assert rolling_mean([1.0, 3.0], 1) == [1.0, 3.0]  # 1: as logged
    assert rolling_mean([2.0, 4.0, 9.0], 10) == [2.0, 3.0, 5.0]  # fewer at the start
    run = _run(tmp_path, [[1, 512, -3.0, 0.5, 100, 0.9, 0.1, 0.0, 0.0],
                          [2, 1024, -1.0, 0.5, 100, 0.9, 0.1, 0.0, 0.0]])
    out = tmp_path / 's.png'
    assert main(['plot', str(run), '--out', str(out), '--smooth', '2']) == 0
    assert out.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    assert main(['plot', str(run), '--out', str(out), '--smooth', '0']) == 2
    assert '--smooth 0' in capsys.readouterr().err


def test_an_sb3_monitor_file_gives_steps_and_the_rolling_mean_return(tmp_path):
    from unilab.plot import MetricsFileError, read_monitor
    path = tmp_path / 'monitor.csv'
    path.write_text('#{"t_start": 0}\nr,l,t\n10,100,1\n20,50,2\n60,50,3\n')
    assert read_monitor(path, window=2) == ([100.0, 150.0, 200.0], [10.0, 15.0, 40.0])
    (tmp_path / 'bad.csv').write_text('not a monitor\n')
    with pytest.raises(MetricsFileError, match='not an SB3 Monitor CSV'):
        read_monitor(tmp_path / 'bad.csv')
