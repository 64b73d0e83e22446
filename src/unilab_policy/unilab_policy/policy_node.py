# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Policy node: batched inference on the observation topic, rollout chunks to the trainer.

On-policy rule: the node acts with weight version ``v`` for exactly
``rollout_length`` steps, sends them as chunks tagged ``v``, then holds the
next observation until version ``v + 1`` arrives, so no rollout ever mixes
two versions (collection pauses during the PPO update, as in rsl_rl).
Weights are swapped in place between two steps, never during one.
"""

from __future__ import annotations

import numpy as np
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile
import torch
from unilab_core import topics
from unilab_core.config import ConfigError
from unilab_core.ros.tensor_msg import Batch, TensorMessageError
from unilab_core.ros.tensor_topic import (batch_capacity, close_endpoints,
                                          TensorPublisher, TensorSubscription)
from unilab_policy.chunk import ChunkBuilder
from unilab_policy.history import ActionHistory
from unilab_policy.inference import InferencePolicy
from unilab_policy.node_common import PolicySetup, WEIGHTS_QOS
from unilab_policy.weights import flatten_state, unflatten_into


class PolicyNode(Node):
    """Act on observation batches with the trainer's latest weights."""

    def __init__(self, **kwargs):
        super().__init__('policy', **kwargs)
        try:
            self.setup = PolicySetup(self)
        except ValueError as exc:
            raise ConfigError(f'policy: {exc}') from None
        p = self.declare_parameter
        self.num_envs = p('num_envs', 64).value
        self.chunk_length = p('chunk_length', 8).value
        self.rollout_length = p('rollout_length', 32).value
        if self.rollout_length % self.chunk_length:
            raise ConfigError('policy: `rollout_length` must be a multiple of `chunk_length`')
        self.device = self.setup.device
        self.bundle = self.setup.build().eval()
        _, self.spec = flatten_state(self.bundle)
        self.version = -1  # no weights yet: wait for the trainer's version 0
        self.steps_in_version = 0
        self.pending: Batch | None = None
        self.last_seq = -1
        self.last_action_msg: tuple | None = None  # publish() arguments of the last action
        self.counters = {'steps': 0, 'chunks': 0, 'duplicates': 0, 'bad_obs': 0,
                         'weight_swaps': 0}
        self.inference = InferencePolicy(self.bundle, self.num_envs, self.device,
                                         graph_capture=self.setup.gpu.graph_capture,
                                         log=self.get_logger().info)
        # Rollouts carry what the network saw: the observation plus the action history
        # (commands clipped to the actuator range; at an episode start the held command,
        # the measured joint positions that lead the observation, or zeros).
        low = p('action_low', Parameter.Type.DOUBLE_ARRAY).value
        high = p('action_high', Parameter.Type.DOUBLE_ARRAY).value
        self.history_fill = p('action_history_fill', 'zero').value
        if self.history_fill not in ('zero', 'joint_position'):
            raise ConfigError(f"policy: `action_history_fill` must be 'zero' or "
                              f"'joint_position', got `{self.history_fill}`")
        try:
            self.history = ActionHistory(self.num_envs, self.setup.act_dim,
                                         self.setup.model.action_history, low, high)
        except ValueError as exc:
            raise ConfigError(f'policy: `action_low`/`action_high`: {exc}') from None
        self._history_started = False
        self.chunk = ChunkBuilder(self.chunk_length, self.num_envs, self.setup.input_dim,
                                  self.setup.act_dim)
        qos = QoSProfile(depth=4)
        n, o, a, k = self.num_envs, self.setup.input_dim, self.setup.act_dim, self.chunk_length
        # Zero-copy transport: in-process readers get these very arrays, other UniLab
        # processes read a shared-memory ring, plain ROS readers get a TensorBatch.
        self.action_pub = TensorPublisher(
            self, topics.ACTION, batch_capacity({'a': (n, a), 'v': (n,), 'l': (n,), 'r': (n,)}),
            qos=qos)
        self.rollout_pub = TensorPublisher(
            self, topics.ROLLOUT,
            batch_capacity({'obs': (k, n, o), 'act': (k, n, 3 * a), 'f': (k, n, 7),
                            'next_obs': (n, o)}),
            policy='reliable', slots=16, qos=QoSProfile(depth=64), timeout_s=60.0)
        self.obs_sub = TensorSubscription(self, topics.OBSERVATION, self._on_obs, qos=qos,
                                          on_error=self._bad_obs)
        self.weights_sub = TensorSubscription(self, topics.WEIGHTS, self._on_weights,
                                              policy='reliable', depth=4, qos=WEIGHTS_QOS)

    # ------------------------------------------------------------------ weights
    def _on_weights(self, batch: Batch) -> None:
        try:
            flat = batch.tensors['flat']
            if batch.version <= self.version:
                return
            unflatten_into(self.bundle, torch.from_numpy(flat.copy()), self.spec)
        except (TensorMessageError, KeyError, ValueError) as exc:
            self.get_logger().error(f'ignored weights version {batch.version}: {exc}')
            return
        self.version = int(batch.version)
        self.steps_in_version = 0
        # Steps of the old version not yet sent (a swap mid-rollout, e.g. a resumed
        # trainer) must not go out tagged with the new one: drop them.
        self.chunk.clear()
        self.counters['weight_swaps'] += 1
        if self.pending is not None:
            batch, self.pending = self.pending, None
            self._act(batch, continue_chunk=False)

    # ------------------------------------------------------------- observation
    def _bad_obs(self, exc: Exception) -> None:
        self.counters['bad_obs'] += 1
        self.get_logger().error(f'ignored observation: {exc}', once=True)

    def _on_obs(self, batch: Batch) -> None:
        try:
            obs = batch.tensors['obs']
            if obs.shape != (self.num_envs, self.setup.obs_dim):
                raise TensorMessageError(
                    f'obs shape {obs.shape}, expected {(self.num_envs, self.setup.obs_dim)}')
            for name in ('reward', 'terminated', 'truncated', 'episode_return',
                         'episode_length'):
                extra = batch.tensors.get(name)
                if extra is not None and extra.shape != (self.num_envs,):
                    raise TensorMessageError(
                        f'`{name}` shape {extra.shape}, expected {(self.num_envs,)}')
            if not np.all(np.isfinite(obs)):
                raise TensorMessageError('obs contains NaN or Inf')
        except (TensorMessageError, KeyError) as exc:
            self._bad_obs(exc)
            return
        if batch.seq <= self.last_seq:
            # A re-sent state (bridge timeout): answer with the same action.
            self.counters['duplicates'] += 1
            if batch.seq == self.last_seq and self.last_action_msg is not None:
                self.action_pub.publish(*self.last_action_msg)
            return
        if self.pending is not None and batch.seq == self.pending.seq:
            return
        if self.version < 0:
            self.pending = batch
            return
        self._act(batch, continue_chunk=True)

    def _act(self, batch: Batch, continue_chunk: bool) -> None:
        reward = batch.tensors.get('reward')
        raw = batch.tensors['obs']
        if not self._history_started:
            self._history_started = True
            self._start_history(np.ones(self.num_envs, bool), raw)
        elif 'terminated' in batch.tensors:
            # This observation starts a new episode for these envs.
            self._start_history(np.logical_or(batch.tensors['terminated'] > 0.5,
                                              batch.tensors['truncated'] > 0.5), raw)
        obs_np = self.history.observe(raw)
        if continue_chunk and self.chunk.has_open_step() and batch.seq == self.last_seq + 1 \
                and reward is not None:
            full = self.chunk.close_step(
                reward, batch.tensors['terminated'], batch.tensors['truncated'],
                batch.tensors.get('episode_return'), batch.tensors.get('episode_length'))
            if full:
                self._send_chunk(obs_np)
                self.steps_in_version += self.chunk_length
                if self.steps_in_version >= self.rollout_length:
                    # Rollout for this version complete: hold this observation until
                    # the trainer publishes version + 1.
                    self.pending = batch
                    return
        else:
            self.chunk.drop_open_step()
        out = self.inference.act(obs_np)
        action = out.action.cpu().numpy()
        self.history.push(action)
        log_prob, value = out.log_prob.cpu().numpy(), out.value.cpu().numpy()
        self.chunk.open_step(obs_np, action, log_prob, value, out.mean.cpu().numpy(),
                             out.std.cpu().numpy(), batch.seq)
        tensors = {'action': action, 'value': value, 'log_prob': log_prob}
        if 'terminated' in batch.tensors:
            tensors['reset'] = np.logical_or(batch.tensors['terminated'] > 0.5,
                                             batch.tensors['truncated'] > 0.5).astype(np.float32)
        msg = ('action', batch.seq, tensors, self.version, batch.stamp_ns)
        self.action_pub.publish(*msg)
        self.last_action_msg = msg
        self.last_seq = batch.seq
        self.counters['steps'] += 1

    def _start_history(self, envs: np.ndarray, obs: np.ndarray) -> None:
        if envs.any():
            fill = obs[envs, :self.setup.act_dim] if self.history_fill == 'joint_position' \
                else None
            self.history.reset(envs, fill)

    def _send_chunk(self, next_obs: np.ndarray) -> None:
        # Copies: the builder's buffers are reused for the next chunk, and published
        # arrays are handed over read-only to in-process readers.
        tensors = {k: np.array(v, dtype=np.float32)
                   for k, v in self.chunk.tensors(next_obs).items()}
        self.rollout_pub.publish('rollout', self.chunk.first_seq, tensors, self.version)
        self.counters['chunks'] += 1
        self.chunk.clear()

    def destroy_node(self):
        """Release transport endpoints (unlink shared memory), then destroy the node."""
        close_endpoints(self)
        return super().destroy_node()


def main(args=None):
    """Run the policy node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(PolicyNode, args)


if __name__ == '__main__':
    main()
