# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Bad input stops start-up with exit code 2 and a message naming file and key."""

import json

from conftest import cli, cli_here
from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
import pytest


def assert_clean_error(proc, *needles):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert 'Traceback' not in proc.stderr
    for n in needles:
        assert n in proc.stderr, proc.stderr


def test_unknown_key(tmp_path, capsys):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('policy_update: {learning_rate: 0.1}\n')
    proc = cli_here(capsys, 'train', '--config', bad, '--run-dir', tmp_path / 'r')
    assert_clean_error(proc, str(bad), '`policy_update.learning_rate`: unknown key')


def test_out_of_range_value(tmp_path, capsys):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('advantage: {gamma: 2.0}\n')
    proc = cli_here(capsys, 'train', '--config', bad, '--run-dir', tmp_path / 'r')
    assert_clean_error(proc, str(bad), '`advantage.gamma`')


def test_wrong_type_from_flag(tmp_path, capsys):
    proc = cli_here(capsys, 'train', '--num-envs', '0', '--run-dir', tmp_path / 'r')
    assert_clean_error(proc, 'command line', '`rollout.num_envs`')


def test_unknown_task_lists_available(tmp_path, capsys):
    proc = cli_here(capsys, 'train', '--task', 'arm7_teleport', '--run-dir', tmp_path / 'r')
    assert_clean_error(proc, 'arm7_teleport', 'arm6_reach')


def test_resume_of_a_non_run(tmp_path, capsys):
    proc = cli_here(capsys, 'train', '--resume', tmp_path)
    assert_clean_error(proc, 'not a run directory')


def test_unknown_benchmark(capsys):
    proc = cli_here(capsys, 'bench', 'warp-drive')
    assert_clean_error(proc, 'unknown benchmark', 'graph')


def test_view_on_an_address_that_is_not_one(capsys):
    proc = cli_here(capsys, 'view', '--host', 'the-lab-wifi')
    assert_clean_error(proc, '--host the-lab-wifi: not an IP address')
    assert proc.stderr.count('\n') == 1, proc.stderr


def test_tasks_and_config_listing(capsys):
    proc = cli_here(capsys, 'tasks')
    assert proc.returncode == 0 and 'arm6_reach' in proc.stdout.split()
    proc = cli_here(capsys, 'config')
    assert proc.returncode == 0
    assert 'policy_update.lr' in proc.stdout and 'gpu.memory_pool_ratio' in proc.stdout


# ------------------------------------------------------------------ bad files, one line each
def _run_dir(tmp_path):
    """Make a run directory as --resume and export read it: config.yaml, checkpoints/."""
    from unilab_bringup.paths import default_config_files
    from unilab_core.config import dump_config, load_run_config
    rd = tmp_path / 'run'
    (rd / 'checkpoints').mkdir(parents=True)
    dump_config(load_run_config(list(default_config_files())), rd / 'config.yaml')
    return rd


def _resume_state(**change):
    import torch
    from unilab_policy.trainer import RESUME_KEYS
    state = {k: 0 for k in RESUME_KEYS}
    state.update(bundle={'w': torch.zeros(2)}, ppo={}, rng={}, wall_s=0.0,
                 episode_returns=torch.zeros(0))
    state.update(change)
    return state


def _write(path, what):
    import torch
    from unilab_policy.checkpoint import save_checkpoint
    if isinstance(what, bytes):
        path.write_bytes(what)
    elif isinstance(what, dict):
        save_checkpoint(path, what)
    else:
        torch.save(what, path)


BAD_CHECKPOINTS = {
    'garbage': (b'PK\x03\x04' + bytes(range(256)) * 4, 'corrupt or truncated'),
    'empty': (b'', 'corrupt or truncated'),
    'list': ([1, 2, 3], 'holds list'),
    'no keys': ({'version': 1}, 'lacks'),
    'nan': (None, 'NaN or Inf in `bundle.w`'),
    'wrong model': (None, 'does not fit'),
}


@pytest.mark.parametrize('case', sorted(BAD_CHECKPOINTS))
def test_resume_and_export_refuse_a_bad_checkpoint_in_one_line(tmp_path, capsys, case):
    import torch
    from unilab.cli import main
    rd = _run_dir(tmp_path)
    what, needle = BAD_CHECKPOINTS[case]
    if case == 'nan':
        what = _resume_state(bundle={'w': torch.tensor([0.0, float('nan')])})
    elif case == 'wrong model':
        what = _resume_state()
    ckpt = rd / 'checkpoints' / 'latest.pt'
    _write(ckpt, what)
    for argv in (['train', '--resume', str(rd)], ['export', str(rd)]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip()
        assert '\n' not in err and str(ckpt) in err and needle in err, (argv, err)
    if case == 'garbage':  # once as a process: exit 2, one line, no traceback
        proc = cli('export', rd)
        assert_clean_error(proc, str(ckpt), needle)
        assert proc.stderr.count('\n') == 1


def test_export_of_a_run_with_garbage_parameters(tmp_path, capsys):
    rd = _run_dir(tmp_path)
    (rd / 'graph_params.yaml').write_bytes(b'\xff\xfe not yaml: [')
    _write(rd / 'checkpoints' / 'latest.pt', _resume_state())
    proc = cli_here(capsys, 'export', rd)
    assert_clean_error(proc, 'graph_params.yaml', 'no valid policy parameters')


# ------------------------------------------------------------------ YAML
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8))
yaml_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=8)
known = st.sampled_from(['policy_update.lr', 'rollout.num_envs', 'advantage.gamma',
                         'safety.max_delta', 'run.seed', 'normalization.clip',
                         'bridge.state_timeout_s', 'perception.voxel_size'])


@st.composite
def config_text(draw):
    """Draw a config file: known keys with hostile values, random trees, or raw bytes."""
    import yaml
    kind = draw(st.sampled_from(['known', 'tree', 'bytes', 'deep']))
    if kind == 'bytes':
        return draw(st.binary(max_size=64))
    if kind == 'deep':
        depth = draw(st.integers(50, 3000))
        return ('[' * depth + ']' * depth).encode()
    if kind == 'tree':
        return yaml.safe_dump(draw(yaml_values)).encode()
    doc = {}
    for key in draw(st.lists(known, min_size=1, max_size=3)):
        section, name = key.split('.')
        doc.setdefault(section, {})[name] = draw(yaml_values)
    return yaml.safe_dump(doc).encode()


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=config_text())
def test_any_config_file_is_accepted_or_refused_cleanly(tmp_path, capsys, text):
    import math
    from unilab.cli import main
    path = tmp_path / 'cfg.yaml'
    path.write_bytes(text)
    code = main(['config', '--check', str(path)])
    out = capsys.readouterr()
    assert code in (0, 2)
    if code == 2:
        assert out.err.startswith('unilab: configuration error:') and str(path) in out.err
        return
    cfg = json.loads(out.out)  # accepted: every number in it is finite

    def finite(v):
        if isinstance(v, float):
            return math.isfinite(v)
        if isinstance(v, dict):
            return all(map(finite, v.values()))
        if isinstance(v, list):
            return all(map(finite, v))
        return True
    assert finite(cfg)


@pytest.mark.parametrize('text,key', [
    ('policy_update: {lr: .nan}\n', 'policy_update.lr'),
    ('safety: {max_delta: .inf}\n', 'safety.max_delta'),
    ('advantage: {gamma: -.inf}\n', 'advantage.gamma'),
])
def test_nan_and_inf_settings_are_refused(tmp_path, text, key, capsys):
    bad = tmp_path / 'bad.yaml'
    bad.write_text(text)
    proc = cli_here(capsys, 'config', '--check', bad)
    assert_clean_error(proc, str(bad), f'`{key}`')


def test_plot_and_record_refuse_bad_paths_in_one_line(tmp_path, capsys):
    from unilab.cli import main
    run = tmp_path / 'run'
    run.mkdir()
    (run / 'metrics.csv').write_bytes(b'\x00\xffgarbage\n1,2\n')
    assert main(['plot', str(run), '--out', str(tmp_path / 'p.png')]) == 2
    err = capsys.readouterr().err.strip()
    assert '\n' not in err and 'metrics.csv' in err
    (tmp_path / 'taken').mkdir()
    proc = cli('record', tmp_path / 'taken', '--duration', '0.1')
    assert_clean_error(proc, 'taken', 'exists already')
    assert proc.stderr.count('\n') == 1


def test_a_broken_yaml_config_is_one_line_naming_file_line_and_column(tmp_path, capsys):
    path = tmp_path / 'bad.yaml'
    path.write_text('run:\n  task: [arm6\n  seed: 1\n')
    proc = cli_here(capsys, 'train', '--config', path)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"unilab: configuration error: {path}:3:7: not valid YAML: expected ',' or ']', but "
        "got ':' (while parsing a flow sequence at line 2, column 9)"]
