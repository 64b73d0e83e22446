# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Bad input stops start-up with exit code 2 and a message naming file and key."""

from conftest import cli


def assert_clean_error(proc, *needles):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert 'Traceback' not in proc.stderr
    for n in needles:
        assert n in proc.stderr, proc.stderr


def test_unknown_key(tmp_path):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('policy_update: {learning_rate: 0.1}\n')
    proc = cli('train', '--config', bad, '--run-dir', tmp_path / 'r')
    assert_clean_error(proc, str(bad), '`policy_update.learning_rate`: unknown key')


def test_out_of_range_value(tmp_path):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('advantage: {gamma: 2.0}\n')
    proc = cli('train', '--config', bad, '--run-dir', tmp_path / 'r')
    assert_clean_error(proc, str(bad), '`advantage.gamma`')


def test_wrong_type_from_flag(tmp_path):
    proc = cli('train', '--num-envs', '0', '--run-dir', tmp_path / 'r')
    assert_clean_error(proc, 'command line', '`rollout.num_envs`')


def test_unknown_task_lists_available(tmp_path):
    proc = cli('train', '--task', 'arm7_teleport', '--run-dir', tmp_path / 'r')
    assert_clean_error(proc, 'arm7_teleport', 'arm6_reach')


def test_resume_of_a_non_run(tmp_path):
    proc = cli('train', '--resume', tmp_path)
    assert_clean_error(proc, 'not a run directory')


def test_unknown_benchmark():
    proc = cli('bench', 'warp-drive')
    assert_clean_error(proc, 'unknown benchmark', 'graph')


def test_tasks_and_config_listing():
    proc = cli('tasks', check=True)
    assert 'arm6_reach' in proc.stdout.split()
    proc = cli('config', check=True)
    assert 'policy_update.lr' in proc.stdout and 'gpu.memory_pool_ratio' in proc.stdout
