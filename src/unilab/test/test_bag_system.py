# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Record a real training run from a second process, inspect it, train offline from it."""

import json
import signal
import subprocess
import sys
import time

from conftest import cli, TINY
import numpy as np
from unilab.bag.dataset import build_dataset
from unilab.bag.storage import BagReader
from unilab_bridge.tasks import make_task


def _action_map(task):
    """Return the action map the recorded run's policy used (the task's default)."""
    from unilab_core.config import ModelSection
    from unilab_policy.action_map import ActionMap, resolve_action_map
    return ActionMap.of(resolve_action_map(ModelSection(), task), task.action_dim)


def test_record_training_then_info_dataset_and_offline_training(tmp_path, tiny_config):
    bag = tmp_path / 'bag'
    _record(tmp_path, bag, tiny_config, 2048)
    with BagReader(bag) as r:
        topics = r.topics
    for t in ('/joint_states', '/unilab/task_state', '/unilab/observation', '/unilab/action',
              '/unilab/safe_command', '/unilab/rollout', '/clock'):
        assert topics[t][1] > 0, (t, topics)
    assert topics['/unilab/rollout'][1] == 2048 // (8 * 8)  # every chunk of the run

    info = cli('bag', 'info', bag, '--json', check=True)
    episodes = json.loads(info.stdout)['episodes']
    assert episodes['source'] == '/unilab/rollout' and episodes['count'] == 16  # 8 envs x 2

    # The two dataset sources agree: rollout chunks vs sensors through perception.
    task = make_task('arm6_reach', 1)
    a = build_dataset([bag]).arrays
    b = build_dataset([bag], 'sensors', task.joint_names, task.uses_joint_state,
                      action_map=_action_map(task)).arrays
    task.close()
    assert len(a['obs']) == 2048
    order = lambda x: np.lexsort(x['obs'].T)  # noqa: E731 - same rows, maybe another order
    for f in a:
        np.testing.assert_allclose(a[f][order(a)], b[f][order(b)], atol=1e-6, err_msg=f)

    off = tmp_path / 'offline.yaml'
    off.write_text('offline: {gradient_steps: 200, eval_every: 100, eval_envs: 8, '
                   'eval_episodes: 8, batch_size: 64}\nlogging: {tensorboard: false}\n'
                   'model: {hidden_sizes: [32, 32]}\n')
    cli('train', '--offline', bag, '--config', off, '--run-dir', tmp_path / 'off', check=True)
    s = json.loads((tmp_path / 'off' / 'summary.json').read_text())
    for k in ('steps', 'wall_s', 'fps', 'return_first', 'return_last', 'checkpoint',
              'iql_return', 'bc_return', 'behaviour_return'):
        assert s[k] is not None, k
    assert s['steps'] == 200 and s['dataset']['transitions'] == 2048
    assert len((tmp_path / 'off' / 'metrics.csv').read_text().splitlines()) == 3  # 2 evals
    assert (tmp_path / 'off' / 'checkpoints' / 'latest.pt').is_file()
    cli('export', tmp_path / 'off', '--format', 'torchscript', check=True)


def test_offline_with_a_missing_bag_names_it(tmp_path):
    proc = cli('train', '--offline', tmp_path / 'nope')
    assert proc.returncode == 2 and 'nope' in proc.stderr


def _record(tmp_path, bag, config, steps):
    rec = subprocess.Popen([sys.executable, '-m', 'unilab.cli', 'record', str(bag)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1.0)  # graph topics are subscribed at start; this only lets DDS settle
        cli('train', '--steps', str(steps), *TINY, '--run-dir', tmp_path / 'run',
            '--config', config, check=True)
    finally:
        rec.send_signal(signal.SIGINT)
        out, _ = rec.communicate(timeout=30)
    assert rec.returncode == 0, out


def test_offline_training_with_an_action_history(tmp_path, tiny_config):
    """A run with model.action_history: 2 recorded, rebuilt from sensors, trained offline."""
    from unilab.bag.dataset import HistorySpec
    from unilab.prepare import task_info
    from unilab_core.graph import holds_joint_positions
    hist = tmp_path / 'hist.yaml'
    hist.write_text(tiny_config.read_text().replace(
        'model: {hidden_sizes: [32, 32]}', 'model: {hidden_sizes: [32, 32], action_history: 2}'))
    assert 'action_history: 2' in hist.read_text()
    bag = tmp_path / 'bag'
    _record(tmp_path, bag, hist, 1024)
    info, _ = task_info('arm6_reach')
    a = build_dataset([bag]).arrays  # the policy node's own inputs, history included
    assert a['obs'].shape == (1024, 21 + 2 * 6)
    spec = HistorySpec(2, info.action_low, info.action_high, holds_joint_positions(info))
    d = build_dataset([bag], 'sensors', info.joint_names, info.uses_joint_state, spec,
                      action_map=_action_map(info))
    b = d.arrays
    # The first two steps of each env have no known history; every other row is rebuilt
    # exactly as the policy node kept it (clipped commands, joint positions at a reset).
    assert d.history_unknown == 2 * 8 and len(b['obs']) == 1024 - 16
    rows = {tuple(np.round(o, 5)): i for i, o in enumerate(a['obs'])}
    match = [rows.get(tuple(np.round(o, 5))) for o in b['obs']]
    assert None not in match
    for f in a:
        np.testing.assert_allclose(b[f], a[f][match], atol=1e-5, err_msg=f)

    off = tmp_path / 'offline.yaml'
    off.write_text('offline: {gradient_steps: 100, eval_every: 100, eval_envs: 8, '
                   'eval_episodes: 8, batch_size: 64, dataset_source: sensors}\n'
                   'logging: {tensorboard: false}\n'
                   'model: {hidden_sizes: [32, 32], action_history: 2}\n')
    cli('train', '--offline', bag, '--config', off, '--run-dir', tmp_path / 'off', check=True)
    s = json.loads((tmp_path / 'off' / 'summary.json').read_text())
    assert s['dataset']['transitions'] == 1024 - 16 and s['dataset']['history_unknown'] == 16
    assert s['iql_return'] is not None and s['bc_return'] is not None
    cli('export', tmp_path / 'off', '--format', 'onnx', check=True)

    # The same rollouts with a config that forgets the history: the error says what to set.
    off.write_text('offline: {gradient_steps: 10, eval_every: 10}\n'
                   'logging: {tensorboard: false}\n')
    proc = cli('train', '--offline', bag, '--config', off, '--run-dir', tmp_path / 'off2')
    assert proc.returncode == 2
    assert 'action history of 2: set model.action_history' in proc.stderr, proc.stderr
