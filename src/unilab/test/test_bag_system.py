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
import pytest
from unilab.bag.dataset import build_dataset
from unilab.bag.storage import BagReader
from unilab_bridge.tasks import make_task


def test_record_training_then_info_dataset_and_offline_training(tmp_path, tiny_config):
    bag = tmp_path / 'bag'
    rec = subprocess.Popen([sys.executable, '-m', 'unilab.cli', 'record', str(bag)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1.0)  # graph topics are subscribed at start; this only lets DDS settle
        cli('train', '--steps', '2048', *TINY, '--run-dir', tmp_path / 'run',
            '--config', tiny_config, check=True)
    finally:
        rec.send_signal(signal.SIGINT)
        out, _ = rec.communicate(timeout=30)
    assert rec.returncode == 0, out
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
    b = build_dataset([bag], 'sensors', task.joint_names, task.uses_joint_state).arrays
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


def test_offline_refuses_an_action_history_by_name(tmp_path):
    from unilab.bag.offline import train_offline
    from unilab_core.config import ConfigError
    with pytest.raises(ConfigError, match='model.action_history'):
        train_offline([str(tmp_path / 'any')], overrides={'model.action_history': 2},
                      run_dir=str(tmp_path / 'off'))
    assert not (tmp_path / 'off').exists()  # refused before anything was written
