# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Record a real training run from a second process, inspect it, train offline from it."""

import json
import os
import select
import signal
import subprocess
import sys
import time

from conftest import cli, cli_here, TINY
import numpy as np
from unilab_bag.dataset import build_dataset
from unilab_bag.storage import BagReader


def _action_map(task):
    """Return the action map the recorded run's policy used (the task's default)."""
    from unilab_core.config import ModelSection
    from unilab_policy.action_map import ActionMap, resolve_action_map
    return ActionMap.of(resolve_action_map(ModelSection(), task), task.action_dim)


def test_offline_with_a_missing_bag_names_it(tmp_path, capsys):
    proc = cli_here(capsys, 'train', '--offline', tmp_path / 'nope')
    assert proc.returncode == 2 and 'nope' in proc.stderr


def _record(tmp_path, bag, config, steps):
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    rec = subprocess.Popen([sys.executable, '-m', 'unilab.cli', 'record', str(bag)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0,
                           env=env)  # unbuffered bytes: select() sees every line
    try:
        # The recorder subscribes to the graph topics before it says so; wait for that
        # line (a loaded machine may take seconds to import), then let DDS settle.
        said = _wait_for_line(rec, 'unilab: recording', 120.0)
        assert said, 'the recorder never said it was recording'
        time.sleep(1.0)
        cli('train', '--steps', str(steps), *TINY, '--run-dir', tmp_path / 'run',
            '--config', config, check=True)
    finally:
        rec.send_signal(signal.SIGINT)
        out, _ = rec.communicate(timeout=30)
    assert rec.returncode == 0, out


def _wait_for_line(proc, needle: str, timeout_s: float) -> str:
    """Return the first line of ``proc``'s output holding ``needle`` ('' on time-out)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline().decode(errors='replace')
            if needle in line:
                return line
    return ''


def test_record_training_then_info_datasets_offline_training_and_export(
        tmp_path, tiny_config, capsys):
    """
    Record a run with an action history from a second process; use the bag.

    Inspect it, rebuild the dataset from rollouts and from sensors, train
    offline, export.
    """
    from unilab_bag.dataset import HistorySpec
    from unilab_bringup.prepare import task_info
    from unilab_core.graph import holds_joint_positions
    hist = tmp_path / 'hist.yaml'
    hist.write_text(tiny_config.read_text().replace(
        'model: {hidden_sizes: [32, 32]}', 'model: {hidden_sizes: [32, 32], action_history: 2}'))
    assert 'action_history: 2' in hist.read_text()
    bag = tmp_path / 'bag'
    _record(tmp_path, bag, hist, 2048)
    with BagReader(bag) as r:
        topics = r.topics
    for t in ('/unilab/sim/joint_states', '/unilab/task_state', '/unilab/observation',
              '/unilab/action', '/unilab/safe_command', '/unilab/rollout', '/unilab/sim/clock'):
        assert topics[t][1] > 0, (t, topics)
    # Every rollout chunk of the run (8 steps of 8 envs; seq: the chunk's first step).
    # A training's nodes take a second or more to build after its DDS participant starts,
    # and its steps then run in well under a second here: a recorder matched late gets
    # nothing or little. The project's DDS profile announces participants every 250 ms
    # (Fast DDS: 3 s), so the match comes within about 0.4 s, before the first step
    # (docs/dds.md); a recorder matched after 3 s failed this test about once in five runs.
    with BagReader(bag) as r:
        chunk_seqs = [int(msg.seq) for _, msg in r.decoded(['/unilab/rollout'])]
    assert chunk_seqs == list(range(0, 256, 8)), chunk_seqs

    info_out = cli_here(capsys, 'bag', 'info', bag, '--json')
    assert info_out.returncode == 0, info_out.stderr
    summary = json.loads(info_out.stdout)
    episodes = summary['episodes']
    assert episodes['source'] == '/unilab/rollout' and episodes['count'] == 16  # 8 envs x 2
    # Every step from the first recorded one to the last is in the bag (actions 0-255:
    # 2048 steps / 8 envs; states and observations one more, the state the last action
    # led to). The first ones may be missing (the training's publishers are matched by
    # discovery only after they start), and then the bag says how many (docs/bags.md).
    seq = {t: summary['topics'][t]['seq'] for t in ('/unilab/task_state', '/unilab/action',
                                                    '/unilab/observation')}
    assert seq['/unilab/action']['last'] == 255, seq
    for cover in seq.values():
        assert cover['missing'] == 0 and cover['last'] in (255, 256), seq
    skipped = max(cover['first'] for cover in seq.values())
    assert skipped < 64, seq
    # The sensors dataset's rows: all steps but the first two of each env (history
    # unknown); a bag that starts after step 0 also lacks the steps it missed and its first
    # recorded step, which has no state before it in the bag (a bag cut at step 8: 72 rows
    # fewer).
    sensor_rows = 2048 - 16 - (8 * (skipped + 1) if skipped else 0)

    # The two dataset sources agree: rollout chunks vs sensors through perception.
    info, _ = task_info('arm6_reach')
    a = build_dataset([bag]).arrays  # the policy node's own inputs, history included
    assert a['obs'].shape == (2048, 21 + 2 * 6)
    spec = HistorySpec(2, info.action_low, info.action_high, holds_joint_positions(info))
    d = build_dataset([bag], 'sensors', info.joint_names, info.uses_joint_state, spec,
                      action_map=_action_map(info))
    b = d.arrays
    # The first two steps of each env have no known history; every other row is rebuilt
    # exactly as the policy node kept it (clipped commands, joint positions at a reset).
    assert d.history_unknown == 2 * 8 and len(b['obs']) == sensor_rows, seq
    rows = {tuple(np.round(o, 5)): i for i, o in enumerate(a['obs'])}
    match = [rows.get(tuple(np.round(o, 5))) for o in b['obs']]
    assert None not in match
    for f in a:
        np.testing.assert_allclose(b[f], a[f][match], atol=1e-5, err_msg=f)

    off = tmp_path / 'offline.yaml'
    off.write_text('offline: {gradient_steps: 200, eval_every: 100, eval_envs: 8, '
                   'eval_episodes: 8, batch_size: 64, dataset_source: sensors}\n'
                   'logging: {tensorboard: false}\n'
                   'model: {hidden_sizes: [32, 32], action_history: 2}\n')
    cli('train', '--offline', bag, '--config', off, '--run-dir', tmp_path / 'off', check=True)
    s = json.loads((tmp_path / 'off' / 'summary.json').read_text())
    for k in ('steps', 'wall_s', 'fps', 'return_first', 'return_last', 'checkpoint',
              'iql_return', 'bc_return', 'behaviour_return'):
        assert s[k] is not None, k
    assert s['steps'] == 200
    assert s['dataset']['transitions'] == sensor_rows
    assert s['dataset']['history_unknown'] == 16
    assert len((tmp_path / 'off' / 'metrics.csv').read_text().splitlines()) == 3  # 2 evals
    assert (tmp_path / 'off' / 'checkpoints' / 'latest.pt').is_file()
    exported = cli_here(capsys, 'export', tmp_path / 'off', '--format', 'onnx')
    assert exported.returncode == 0, exported.stderr

    # The same rollouts with a config that forgets the history: the error says what to set.
    off.write_text('offline: {gradient_steps: 10, eval_every: 10}\n'
                   'logging: {tensorboard: false}\n')
    proc = cli_here(capsys, 'train', '--offline', bag, '--config', off,
                    '--run-dir', tmp_path / 'off2')
    assert proc.returncode == 2
    assert 'action history of 2: set model.action_history' in proc.stderr, proc.stderr
