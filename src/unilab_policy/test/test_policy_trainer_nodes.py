# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
PolicyNode and TrainerNode over real topics, with a test node playing the environment.

The environment answers in lock step, like the bridge: observation ``seq`` goes
out, and observation ``seq + 1`` only after the action for ``seq`` came back.
"""

import json
import time

import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
from unilab_core import topics
from unilab_core.ros.tensor_msg import make_batch, read_batch
from unilab_core.testing import spin_until
from unilab_interfaces.msg import TensorBatch
from unilab_policy.actor import ActOut, Chunk, StepResult
from unilab_policy.node_common import WEIGHTS_QOS
from unilab_policy.policy_node import PolicyNode
from unilab_policy.trainer_node import TrainerNode
from unilab_policy.weights import flatten_state

OBS, ACT, N, K, T = 3, 2, 2, 2, 4
EPISODE_LENGTH = 3  # every env truncates after 3 steps, so episodes finish often
SUMMARY_KEYS = {'steps', 'wall_s', 'fps', 'return_first', 'return_last', 'checkpoint'}


class FakeEnv(Node):
    """Publish observations in lock step with the actions; record every action."""

    def __init__(self, context):
        super().__init__('fake_env', context=context)
        qos = QoSProfile(depth=4)
        self.obs_pub = self.create_publisher(TensorBatch, topics.OBSERVATION, qos)
        self.create_subscription(TensorBatch, topics.ACTION, self._on_action, qos)
        self.create_subscription(TensorBatch, topics.WEIGHTS, self._on_weights, WEIGHTS_QOS)
        self.rng = np.random.default_rng(0)
        self.actions = []          # (seq, version, action) of every action message
        self.weight_versions = []  # versions seen on /unilab/weights
        self.auto = True           # step on the first action of the current seq ...
        self.stop_at = None        # ... unless this seq is reached
        self.seq = -1
        self.answered = False
        self.last_msg = None
        self.ep_return = np.zeros(N)
        self.ep_length = np.zeros(N, dtype=int)

    def start(self):
        """Publish the first observation (no step outcome yet)."""
        self._publish(np.zeros(N), np.zeros(N, bool))

    def _publish(self, reward, truncated):
        finished = np.where(truncated, self.ep_return, np.nan)
        lengths = np.where(truncated, self.ep_length, 0)
        self.ep_return[truncated] = 0.0
        self.ep_length[truncated] = 0
        self.seq += 1
        self.answered = False
        self.last_msg = make_batch('observation', self.seq, {
            'obs': self.rng.standard_normal((N, OBS)), 'reward': reward,
            'terminated': np.zeros(N), 'truncated': truncated,
            'episode_return': finished, 'episode_length': lengths})
        self.obs_pub.publish(self.last_msg)

    def step(self, action):
        """Apply ``action`` and publish the next observation."""
        reward = -np.abs(action).sum(axis=1)
        self.ep_return += reward
        self.ep_length += 1
        self._publish(reward, self.ep_length >= EPISODE_LENGTH)

    def _on_action(self, msg):
        b = read_batch(msg)
        assert b.tensors['action'].shape == (N, ACT)
        self.actions.append((b.seq, b.version, b.tensors['action'].copy()))
        if b.seq != self.seq or self.answered:
            return
        self.answered = True
        if self.auto and self.seq != self.stop_at:
            self.step(b.tensors['action'])

    def _on_weights(self, msg):
        self.weight_versions.append(msg.version)


@pytest.fixture
def graph(fresh_context, tmp_path, request):
    """Build (executor, env, policy, make_trainer); destroy every node afterwards."""
    context = fresh_context
    # Indirect parametrize: (model.action_history, extra policy parameters).
    history, extra = getattr(request, 'param', (0, {}))
    executor = SingleThreadedExecutor(context=context)
    nodes = []

    def add(node):
        nodes.append(node)
        executor.add_node(node)
        return node

    common = [Parameter('obs_dim', value=OBS), Parameter('act_dim', value=ACT),
              Parameter('run.device', value='cpu'), Parameter('model.hidden_sizes', value=[8]),
              Parameter('model.action_history', value=history)]
    env = add(FakeEnv(context))
    policy = add(PolicyNode(context=context, parameter_overrides=common + [
        Parameter('rollout.num_envs', value=N), Parameter('rollout.chunk_length', value=K),
        Parameter('rollout.rollout_length', value=T)]
        + [Parameter(k, value=v) for k, v in extra.items()]))

    def make_trainer(total_steps):
        trainer = add(TrainerNode(context=context, parameter_overrides=common + [
            Parameter('run_dir', value=str(tmp_path / 'run')),
            Parameter('run.total_steps', value=total_steps),
            Parameter('logging.checkpoint_every', value=1),
            Parameter('logging.tensorboard', value=False),
            Parameter('rollout.num_envs', value=N), Parameter('rollout.rollout_length', value=T),
            Parameter('rollout.chunk_length', value=K),
            Parameter('policy_update.batch_size', value=4),
            Parameter('policy_update.epochs', value=2)]))
        # Wait (without spinning: nothing may be acted on yet) until the first chunk
        # cannot be lost to discovery.
        deadline = time.monotonic() + 10.0
        while policy.rollout_pub.get_subscription_count() == 0:
            assert time.monotonic() < deadline, 'trainer never subscribed to the rollout'
            time.sleep(0.01)
        return trainer

    # Volatile topics lose what is published before a subscriber is matched.
    assert spin_until(executor, lambda: env.obs_pub.get_subscription_count() > 0
                      and policy.action_pub.get_subscription_count() > 0)
    try:
        yield executor, env, policy, make_trainer
    finally:
        for node in nodes:
            if isinstance(node, TrainerNode):
                node.close()
            executor.remove_node(node)
            node.destroy_node()
        executor.shutdown(timeout_sec=1.0)


def test_waits_for_weights_then_trains_on_policy(graph, tmp_path):
    executor, env, policy, make_trainer = graph
    env.start()
    # No trainer yet: the observation is held, nothing is answered.
    assert spin_until(executor, lambda: policy.actor.pending is not None, 5.0)
    spin_until(executor, lambda: bool(env.actions), 0.3)
    assert env.actions == []
    assert policy.actor.version == -1
    assert policy.counters['steps'] == 0

    updates = 3
    trainer = make_trainer(total_steps=updates * T * N)
    assert spin_until(executor, lambda: trainer.done, 30.0), \
        f'trainer not done: {trainer.trainer.updates} updates, {policy.counters}'
    spin_until(executor, lambda: False, 0.2)  # let in-flight messages settle

    # Lock step: each seq answered once, in order; T steps per version, then the next one.
    seqs = [s for s, _, _ in env.actions]
    versions = [v for _, v, _ in env.actions]
    assert seqs == list(range(updates * T))
    assert versions == [s // T for s in seqs]
    # On-policy: no action of version v after its rollout of T steps was complete.
    for v in range(updates):
        assert max(s for s, ver in zip(seqs, versions) if ver == v) == (v + 1) * T - 1
    # The observation after the last rollout is held until a version that never comes.
    assert policy.actor.pending is not None and policy.actor.pending.seq == updates * T
    assert env.seq == updates * T

    assert trainer.trainer.version == updates
    assert trainer.trainer.updates == updates
    assert trainer.trainer.stale_chunks == 0
    assert env.weight_versions == list(range(updates))  # done: no version 3 published
    assert policy.actor.version == updates - 1
    assert policy.counters['weight_swaps'] == updates
    assert policy.counters['chunks'] == updates * T // K
    assert policy.counters['steps'] == updates * T
    assert policy.counters['duplicates'] == 0 and policy.counters['bad_obs'] == 0

    run = tmp_path / 'run'
    summary = json.loads((run / 'summary.json').read_text())
    assert SUMMARY_KEYS <= set(summary)
    assert summary['steps'] == updates * T * N
    assert summary['updates'] == updates
    assert summary['fps'] > 0 and summary['wall_s'] > 0
    # Rewards are -|a|.sum(), so every finished episode has a negative return.
    assert summary['return_first'] < 0 and summary['return_last'] < 0
    assert summary['checkpoint'] == str(run / 'checkpoints' / f'model_{updates:06d}.pt')
    assert (run / 'checkpoints' / 'latest.pt').is_file()
    assert len((run / 'metrics.csv').read_text().splitlines()) == 1 + updates

    # Chunks arriving after the end are ignored.
    trainer._on_chunk(read_batch(make_batch('rollout', 0, {'rewards': np.zeros((K, N))},
                                            version=updates)))
    assert trainer.trainer.updates == updates


HISTORY_PARAMS = {'action_low': [-0.5, -0.4], 'action_high': [0.5, 0.4],
                  'action_history_fill': 'joint_position'}


@pytest.mark.parametrize('graph', [(2, HISTORY_PARAMS)], indirect=True)
def test_action_history_reaches_the_network_and_the_rollout(graph):
    executor, env, policy, make_trainer = graph
    assert policy.actor.input_dim == OBS + 2 * ACT
    assert policy.actor.bundle.actor_critic.obs_dim == OBS + 2 * ACT
    trainer = make_trainer(total_steps=T * N)  # one rollout, one update
    env.start()
    assert spin_until(executor, lambda: trainer.done, 30.0), policy.counters
    raw = trainer.trainer.raw_obs.numpy()
    assert raw.shape == (T, N, OBS + 2 * ACT)
    low, high = np.array([-0.5, -0.4]), np.array([0.5, 0.4])
    sent = {s: np.clip(a, low, high) for s, v, a in env.actions if v == 0}
    # An episode starts with the held command: here the observation's first ACT entries
    # (the joint positions of a position-controlled robot), clipped like every command.
    held = {s: np.clip(raw[s, :, :ACT], low, high) for s in range(T)}
    # Newest first; episodes last EPISODE_LENGTH = 3 steps, so step 3 starts over.
    want = {0: (held[0], held[0]), 1: (sent[0], held[0]), 2: (sent[1], sent[0]),
            3: (held[3], held[3])}
    for seq, (prev1, prev2) in want.items():
        np.testing.assert_allclose(raw[seq, :, OBS:OBS + ACT], prev1, rtol=0, atol=1e-6)
        np.testing.assert_allclose(raw[seq, :, OBS + ACT:], prev2, rtol=0, atol=1e-6)
    # The checks compare real, clipped actions: some sampled actions were outside the range.
    raw_actions = np.stack([a for _, v, a in env.actions if v == 0])
    assert np.any(np.abs(raw_actions) > high) and np.abs(sent[0]).sum() > 0


def test_duplicate_and_bad_observations(graph):
    executor, env, policy, make_trainer = graph
    trainer = make_trainer(total_steps=1000)
    assert spin_until(executor, lambda: policy.actor.version == 0)
    env.stop_at = T + 1
    env.start()
    assert spin_until(executor, lambda: env.seq == T + 1 and env.answered)
    env.auto = False
    env.stop_at = None
    spin_until(executor, lambda: False, 0.1)
    answered = len(env.actions)
    seq, version, action = env.actions[-1]
    assert (seq, version) == (T + 1, 1)

    # The environment re-sends the state (e.g. the bridge's timeout): same action again.
    env.obs_pub.publish(env.last_msg)
    assert spin_until(executor, lambda: len(env.actions) == answered + 1)
    seq2, version2, action2 = env.actions[-1]
    assert (seq2, version2) == (seq, version)
    np.testing.assert_array_equal(action2, action)
    assert policy.counters['duplicates'] == 1
    assert policy.counters['steps'] == T + 2
    assert policy.actor.last_seq == T + 1

    # An older state is counted too, but answered with nothing.
    env.obs_pub.publish(make_batch('observation', 0, {'obs': np.zeros((N, OBS))}))
    assert spin_until(executor, lambda: policy.counters['duplicates'] == 2)

    # Malformed observations: wrong obs width, wrong env count, no obs at all.
    bad = [{'obs': np.zeros((N, OBS + 1))}, {'obs': np.zeros((N + 1, OBS))},
           {'reward': np.zeros(N)}]
    for tensors in bad:
        env.obs_pub.publish(make_batch('observation', T + 2, tensors))
    assert spin_until(executor, lambda: policy.counters['bad_obs'] == len(bad))
    spin_until(executor, lambda: False, 0.1)
    assert len(env.actions) == answered + 1
    assert policy.actor.last_seq == T + 1

    # The node keeps working: the next good observation is answered and training goes on.
    env.auto = True
    env.stop_at = 2 * T + 1
    env.step(action)
    assert spin_until(executor, lambda: env.seq == 2 * T + 1 and env.answered)
    assert trainer.trainer.version == 2
    stepped = [(s, v) for s, v, _ in env.actions]
    assert stepped[answered + 1] == (T + 2, 1)
    assert all(v == s // T for s, v in stepped)
    assert policy.counters['duplicates'] == 2
    assert policy.counters['bad_obs'] == len(bad)
    assert trainer.trainer.stale_chunks == 0


def test_new_version_mid_rollout_starts_a_clean_rollout(graph):
    """A newer version arriving mid-rollout (trainer resumed elsewhere) never mixes data."""
    executor, env, policy, _ = graph
    chunks = []
    env.create_subscription(TensorBatch, topics.ROLLOUT, lambda m: chunks.append(read_batch(m)),
                            QoSProfile(depth=64))
    weights_pub = env.create_publisher(TensorBatch, topics.WEIGHTS, WEIGHTS_QOS)
    flat = flatten_state(policy.actor.bundle)[0].numpy()
    weights_pub.publish(make_batch('weights', 0, {'flat': flat}, version=0))
    assert spin_until(executor, lambda: policy.actor.version == 0
                      and policy.rollout_pub.get_subscription_count() > 0)

    # Three steps of version 0: one chunk sent, one step closed, one step open.
    env.stop_at = K + 1
    env.start()
    assert spin_until(executor, lambda: env.seq == K + 1 and env.answered)
    assert len(chunks) == 1 and policy.actor.chunk.size == 1 and policy.actor.chunk.has_open_step()

    weights_pub.publish(make_batch('weights', 5, {'flat': flat}, version=5))
    assert spin_until(executor, lambda: policy.actor.version == 5)
    env.stop_at = None
    env.step(env.actions[-1][2])
    assert spin_until(executor, lambda: policy.actor.pending is not None)
    assert spin_until(executor, lambda: len(chunks) == 1 + T // K)

    acted = {s: (v, a) for s, v, a in env.actions}
    for c in chunks:
        for i in range(K):
            version, action = acted[c.seq + i]
            assert version == c.version, f'chunk {c.seq} v{c.version} has a v{version} step'
            np.testing.assert_array_equal(c.tensors['actions'][i], action)
    assert sum(K for c in chunks if c.version == 5) == T
    assert [c.seq for c in chunks] == [0] + list(range(K + 2, K + 2 + T, K))


def test_the_action_goes_before_its_chunk_which_carries_the_wall_clock(graph, monkeypatch):
    """The command path first; the chunk's stamp gives a learner the control steps' phase."""
    _, _, policy, _ = graph
    sent = []
    monkeypatch.setattr(policy.action_pub, 'publish', lambda *a: sent.append(('action', a)))
    monkeypatch.setattr(policy.rollout_pub, 'publish', lambda *a: sent.append(('rollout', a)))
    out = ActOut(7, 2, 123, np.zeros((N, 2), np.float32), np.zeros(N, np.float32),
                 np.zeros(N, np.float32), None)
    before = time.time_ns()
    policy._send(StepResult(action=out, chunk=Chunk(0, 2, {'obs': np.zeros((K, N, 3))})))
    assert [kind for kind, _ in sent] == ['action', 'rollout']
    assert sent[0][1][-1] == 123   # the action keeps its observation's stamp
    assert before <= sent[1][1][-1] <= time.time_ns()
