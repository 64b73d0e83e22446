# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
An rsl_rl policy on the robot double: rsl_rl's commands, step for step, before the gate.

The round trip of issue 43 on ``arm6_reach``, each step by its own tool: a short
rsl_rl training through our ``VecEnv`` (``unilab_interop.rsl_train``, observation
normaliser on), rsl_rl's own ``export_policy_to_onnx``, ``unilab import-policy``
of that file, then ``unilab robot-sim --robot arm6`` and ``unilab deploy RUN --robot
arm6 --armed`` as separate processes over DDS. This process is the operator (the
goal) and records the policy node's observations (``/unilab/observation``) and
its commands before the gate (``/unilab/action``, command units) as plain
``TensorBatch`` readers. On exactly those observations rsl_rl's inference (its
own policy module, and its ONNX file through onnxruntime) mapped by the task's
action map gives the recorded commands within TOL, every step; the gate's
output reaches the double.
"""

import contextlib
import io
import json
import threading

from conftest import cli
import numpy as np
import onnxruntime
import pytest
from rclpy.qos import QoSProfile
from rsl_rl.runners import OnPolicyRunner
from tensordict import TensorDict
from test_deploy_system import operator, Process  # noqa: F401 (the fixture, by name)
import torch
from unilab_core import topics
from unilab_core.ros.tensor_msg import read_batch
from unilab_interfaces.msg import TensorBatch
from unilab_interop.convert import rsl_train_cfg
from unilab_interop.rsl_train import train_rsl
from unilab_interop.vecenv import make_vec_env

TOL = 1e-5
#: Control steps recorded on the double (50 Hz: about ten seconds).
STEPS = 500
#: A tiny rsl_rl run: envs x steps per iteration x iterations.
ENVS, STEPS_PER_ENV, ITERATIONS = 8, 8, 2


def _rsl_policy(tmp_path):
    """Train rsl_rl briefly through our VecEnv; return (runner, its env, its ONNX file)."""
    cfg = rsl_train_cfg(num_steps_per_env=STEPS_PER_ENV)
    for net in ('actor', 'critic'):
        cfg[net]['obs_normalization'] = True
    out = train_rsl('arm6_reach', 0, ENVS * STEPS_PER_ENV * ITERATIONS, tmp_path / 'rsl',
                    num_envs=ENVS, train_cfg=cfg)
    # rsl_rl's own runner, as a user reloads a checkpoint: inference and its ONNX export.
    env = make_vec_env('arm6_reach', 1, 0, tmp_path / 'env')
    with contextlib.redirect_stdout(io.StringIO()):  # the runner prints its networks
        runner = OnPolicyRunner(env, cfg, log_dir=None, device='cpu')
    runner.load(out['checkpoint'])
    runner.export_policy_to_onnx(str(tmp_path / 'export'), 'policy.onnx')
    return runner, env, tmp_path / 'export' / 'policy.onnx'


class Recorder:
    """The policy node's observations and commands, by step (``seq``), from DDS."""

    def __init__(self, node):
        self.obs: dict[int, np.ndarray] = {}
        self.act: dict[int, np.ndarray] = {}
        self.lock = threading.Lock()  # the executor's thread writes, the test reads
        qos = QoSProfile(depth=1000)  # reliable, as the graph publishes them
        node.create_subscription(TensorBatch, topics.OBSERVATION,
                                 lambda m: self._keep(self.obs, m, 'obs'), qos)
        node.create_subscription(TensorBatch, topics.ACTION,
                                 lambda m: self._keep(self.act, m, 'action'), qos)

    def _keep(self, into: dict, msg, name: str) -> None:
        b = read_batch(msg)
        with self.lock:
            into[b.seq] = b.tensors[name].copy()

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Return (observations [S, obs], commands [S, act]) of the steps seen on both."""
        with self.lock:
            seqs = sorted(set(self.obs) & set(self.act))
            if not seqs:
                return np.zeros((0, 0), np.float32), np.zeros((0, 0), np.float32)
            return (np.concatenate([self.obs[s] for s in seqs]),
                    np.concatenate([self.act[s] for s in seqs]))


@pytest.mark.system
def test_rsl_rl_policy_deployed_on_the_double_commands_as_rsl_rl(
        operator, tmp_path):  # noqa: F811
    runner, env, onnx_file = _rsl_policy(tmp_path)
    policy = runner.get_inference_policy('cpu')
    # The normaliser matters: identity statistics would hide a missing or wrong one.
    assert float(policy.obs_normalizer._std.min()) != 1.0
    run = tmp_path / 'imported'
    cli('import-policy', 'rsl_rl', onnx_file, '--task', 'arm6_reach', '--run-dir', run,
        check=True)

    op = operator()
    rec = Recorder(op.node)
    stats = tmp_path / 'double.json'
    double = Process('robot-sim', '--robot', 'arm6', '--stats', stats)
    deploy = Process('deploy', run, '--robot', 'arm6', '--armed', '--run-dir', tmp_path / 'd')
    try:
        op.wait(lambda: len(rec.pairs()[0]) >= STEPS and len(op.commands) >= STEPS,
                timeout_s=300, proc=deploy)
    finally:
        deploy.stop()
        double.stop()
    obs, ours = rec.pairs()

    # rsl_rl's inference on exactly those observations, mapped as the task maps actions.
    with torch.no_grad():
        t = torch.from_numpy(obs)
        actions = policy(TensorDict({'policy': t, 'critic': t}, batch_size=[len(t)])).numpy()
    sess = onnxruntime.InferenceSession(str(onnx_file))
    onnx_actions = np.concatenate([sess.run(['actions'], {'obs': row[None]})[0] for row in obs])
    worst = {}
    for name, a in (('rsl_rl policy', actions), ('rsl_rl onnx', onnx_actions)):
        theirs = env.action_map.command(obs, a)
        worst[name] = float(np.max(np.abs(ours - theirs)))
    print(f'\nrsl_rl round trip on the arm6 double: {len(obs)} steps, max abs command '
          f'difference {json.dumps(worst)}')
    assert len(obs) >= STEPS
    assert all(d <= TOL for d in worst.values()), worst
    # The commands were the policy's, not a constant: the robot moved them.
    assert np.ptp(ours, axis=0).max() > 1e-3

    # Everything the gate sent reached the double, which refused none of it.
    got = json.loads(stats.read_text())
    gate = json.loads((tmp_path / 'd' / 'safety_stats.json').read_text())
    sent = gate['published_command'] + gate['published_fallback']
    print(f'the gate sent {sent} commands, the double applied {got["commands"]}')
    assert got['commands'] == sent >= STEPS, (got, gate)
    assert not any(v for k, v in got.items() if k.startswith('refused_')), got
    assert len(op.commands) >= STEPS
    for _, msg in op.commands:
        assert len(msg.data) == 6 and np.all(np.isfinite(msg.data))
    # rsl_rl records no joint range: the deploy says so and runs on the driver's limits.
    assert 'carries no trained joint range' in deploy.output()
    assert 'Traceback' not in deploy.output() + double.output()
    env.close()
