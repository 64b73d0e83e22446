# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab adapt`` against the robot double: a round end to end, and a killed adapter."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
import rclpy
from std_msgs.msg import Float64MultiArray
from test_deploy import _run_dir
from unilab_bringup.prepare import task_info
from unilab_core.config import ModelSection
from unilab_core.testing import spin_until
from unilab_policy.params import PolicyNodeParams
import yaml

FAST = {'adapt': {'period_s': 0.5, 'min_episodes': 2, 'sim_envs': 2,
                  'sim_episodes_per_env': 1, 'sim_tolerance': 1.0, 'batch_size': 16}}


def _pids_running(*needles):
    pids = []
    for proc in pathlib.Path('/proc').iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / 'cmdline').read_bytes().replace(b'\0', b' ').decode()
        except OSError:
            continue
        if all(n in cmd for n in needles):
            pids.append(int(proc.name))
    return pids


def _wait(condition, timeout_s, what):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.25)
    raise AssertionError(f'{what} within {timeout_s} s')


def _commands_flow(topic, seconds=2.0):
    """Return the messages ``topic`` got in ``seconds`` (how many commands reached the robot)."""
    rclpy.init()
    try:
        node = rclpy.create_node('command_counter')
        got = []
        node.create_subscription(Float64MultiArray, topic, got.append, 10)
        ex = rclpy.executors.SingleThreadedExecutor()
        ex.add_node(node)
        # Discovery first (slow on a loaded machine), then count for ``seconds``.
        spin_until(ex, lambda: bool(got), timeout_s=30.0)
        got.clear()
        spin_until(ex, lambda: False, timeout_s=seconds)
        node.destroy_node()
        return got
    finally:
        rclpy.try_shutdown()


def _adapter_statuses(timeout_s=60.0):
    """Return the adapter's statuses on ``/diagnostics``, waiting for the first one."""
    rclpy.init()
    try:
        node = rclpy.create_node('diagnostics_reader')
        mine = []
        node.create_subscription(
            DiagnosticArray, '/diagnostics',
            lambda d: mine.extend(s for s in d.status if s.name == '/adapter'), 10)
        ex = rclpy.executors.SingleThreadedExecutor()
        ex.add_node(node)
        spin_until(ex, lambda: bool(mine), timeout_s=timeout_s)
        node.destroy_node()
        return mine
    finally:
        rclpy.try_shutdown()


def test_adapt_runs_a_round_on_the_robot_double_and_survives_a_killed_adapter(tmp_path):
    info, _ = task_info('arm6_reach')
    params = PolicyNodeParams(obs_dim=info.obs_dim, act_dim=info.action_dim,
                              model=ModelSection(hidden_sizes=[16]))
    model, _ = _run_dir(tmp_path, params)
    (model / 'config.yaml').write_text('run: {task: arm6_reach}\n')
    fast = tmp_path / 'fast.yaml'
    fast.write_text(yaml.safe_dump(FAST))
    rd = tmp_path / 'adapt_run'
    env = dict(os.environ)
    double = subprocess.Popen([sys.executable, '-m', 'unilab.cli', 'robot-sim', '--robot',
                               'arm6', '--goals', '1000', '--goal-timeout', '0.6'], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    adapt = subprocess.Popen([sys.executable, '-m', 'unilab.cli', 'adapt', str(model),
                              '--robot', 'arm6', '--armed', '--config',
                              str(fast), '--run-dir', str(rd)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    a = rd / 'adapt'
    try:
        # One round end to end: recorded steps, fine-tuned, simulation-tested, published.
        _wait(lambda: (a / 'deployments.json').is_file() and '1' in json.loads(
            (a / 'deployments.json').read_text()), 150, 'no fine-tuned version deployed')
        history = [json.loads(line) for line in open(a / 'history.jsonl')]
        assert [h['kind'] for h in history][:3] == ['start', 'robot', 'candidate']
        assert history[1]['episodes'] >= 2 and history[2]['deployed'] is True
        assert (a / 'versions' / 'v0001.npy').is_file()
        bags = rd / 'recordings'
        _wait(lambda: bags.is_dir() and any(bags.iterdir()), 30, 'nothing recorded')
        # Kill the adapter: the deployed policy keeps commanding the robot.
        assert len(_commands_flow('/forward_position_controller/commands')) > 10
        # The adapter reports on /diagnostics with the robot's hardware id (waiting for its
        # own status: other nodes' statuses may arrive first, and a round under way on a
        # loaded machine delays the adapter's timer).
        mine = _adapter_statuses()
        assert mine and mine[-1].hardware_id == 'robot/arm6'
        values = {kv.key: kv.value for kv in mine[-1].values}
        assert {'running_version', 'fuse_rollbacks', 'pauses', 'paused_s'} <= set(values)
        # The round's work yielded to the control steps (50 Hz, phase from the chunks).
        assert int(values['pauses']) > 0 and float(values['paused_s']) > 0.0
        pids = _pids_running('adapter_node', str(rd))
        assert len(pids) == 1, pids
        os.kill(pids[0], signal.SIGKILL)
        _wait(lambda: not _pids_running('adapter_node', str(rd)), 10, 'adapter still alive')
        assert len(_commands_flow('/forward_position_controller/commands')) > 10
        fuse = json.loads((a / 'fuse.json').read_text())
        for v in fuse['versions']:
            weights = np.load(a / 'versions' / f'v{int(v):04d}.npy')
            assert weights.dtype == np.float32 and np.all(np.isfinite(weights))
        # The kill may cut a write short: its temp file stays (the real files are whole,
        # read above) until the next adapter start removes it (test_adapt_adapter.py).
        assert all(f.name.startswith('.') and f.name.endswith('.tmp')
                   for f in a.rglob('*.tmp*')), list(a.rglob('*.tmp*'))
    finally:
        for p in (adapt, double):
            p.send_signal(signal.SIGINT)
        for p in (adapt, double):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
    assert adapt.returncode is not None


def test_adapt_refuses_a_task_without_a_robot_reward_and_an_export(tmp_path):
    from conftest import cli
    info, _ = task_info('quad_walk')
    params = PolicyNodeParams(obs_dim=info.obs_dim, act_dim=info.action_dim,
                              model=ModelSection(hidden_sizes=[16]))
    model, _ = _run_dir(tmp_path, params)
    (model / 'config.yaml').write_text('run: {task: quad_walk}\n')
    proc = cli('adapt', model, '--robot', 'quad8', '--run-dir', tmp_path / 'rd')
    assert proc.returncode == 2, proc.stderr
    assert 'quad_walk' in proc.stderr and 'arm6_reach' in proc.stderr
    assert 'Traceback' not in proc.stderr
