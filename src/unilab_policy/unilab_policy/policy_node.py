# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Policy node: observation batches in, actions (and rollout chunks to the trainer) out.

Wiring only: the step protocol (weight versions, the on-policy hold, the
action history, chunking, the answer to a re-sent step) is the ROS-free
``unilab_policy.actor.PolicyActor``; this node turns topics into its calls
and its results into messages. Weights arrive on the versioned weights
topic (training), or from ``weights_file`` at start (deployment).
"""

from __future__ import annotations

import time

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from unilab_core import topics
from unilab_core.config import ConfigError
from unilab_core.ros.diagnostics import NodeDiagnostics
from unilab_core.ros.params import declare_params
from unilab_core.ros.tensor_msg import Batch, TensorMessageError
from unilab_core.ros.tensor_topic import (batch_capacity, close_endpoints,
                                          TensorPublisher, TensorSubscription)

from unilab_policy.actor import ObservationError, StepIn, StepResult
from unilab_policy.checkpoint import CheckpointError
from unilab_policy.device import setup_device
from unilab_policy.networks import load_weights_file, make_actor
from unilab_policy.node_common import WEIGHTS_QOS
from unilab_policy.params import PolicyNodeParams


class PolicyNode(Node):
    """Act on observation batches with the trainer's latest weights."""

    def __init__(self, **kwargs):
        super().__init__('policy', **kwargs)
        self.params = p = declare_params(self, PolicyNodeParams)
        try:
            self.device = setup_device(p.run.device, p.run.torch_threads)
            self.actor = make_actor(p, self.device, log=self.get_logger().info)
            if p.weights_file:
                loaded = load_weights_file(self.actor, p.weights_file)
                self.get_logger().info(f'{p.mode}: acting with {loaded}')
        except (ValueError, OSError, CheckpointError) as exc:
            raise ConfigError(f'policy: {exc}') from None
        self.counters = self.actor.counters
        self.counters['bad_obs'] = 0
        qos = QoSProfile(depth=4)
        n, o, a = p.rollout.num_envs, self.actor.input_dim, p.act_dim
        k = self.actor.chunk_length
        # Zero-copy transport: in-process readers get these very arrays, other UniLab
        # processes read a shared-memory ring, plain ROS readers get a TensorBatch.
        self.action_pub = TensorPublisher(
            self, topics.ACTION, batch_capacity({'a': (n, a), 'v': (n,), 'l': (n,)}),
            qos=qos)
        self.rollout_pub = None
        if p.mode != 'deploy':
            # Training waits for every chunk to arrive (reliable); on a robot (adapt) the
            # control loop must never wait for a learner: the latest chunks, drops counted.
            on_robot = p.mode == 'adapt'
            self.rollout_pub = TensorPublisher(
                self, topics.ROLLOUT,
                batch_capacity({'obs': (k, n, o), 'act': (k, n, 3 * a), 'f': (k, n, 7),
                                'next_obs': (n, o)}),
                policy='latest' if on_robot else 'reliable', slots=16,
                qos=QoSProfile(depth=64), timeout_s=60.0)
        # In one process the policy acts inside perception's publish (no executor round).
        self.obs_sub = TensorSubscription(self, topics.OBSERVATION, self._on_obs, qos=qos,
                                          on_error=self._bad_obs, deliver='inline')
        self.weights_sub = TensorSubscription(self, topics.WEIGHTS, self._on_weights,
                                              policy='reliable', depth=4, qos=WEIGHTS_QOS)
        self._inference_ns: list[int] = []
        self.health = NodeDiagnostics(self, p.health, self._health_counters, device=self.device)

    def _on_weights(self, batch: Batch) -> None:
        try:
            result = self.actor.load_weights(batch.tensors['flat'], int(batch.version))
        except (TensorMessageError, KeyError, ValueError, RuntimeError) as exc:
            self.get_logger().error(f'ignored weights version {batch.version}: {exc}')
            return
        self._send(result)

    def _bad_obs(self, exc: Exception) -> None:
        self.counters['bad_obs'] += 1
        self.get_logger().error(f'ignored observation: {exc}', once=True)

    def _on_obs(self, batch: Batch) -> None:
        try:
            step = StepIn.from_tensors(batch.seq, batch.tensors, batch.stamp_ns)
            t0 = time.perf_counter_ns()
            result = self.actor.step(step)
            self._inference_ns.append(time.perf_counter_ns() - t0)
        except (TensorMessageError, KeyError, ObservationError) as exc:
            self._bad_obs(exc)
            return
        self._send(result)

    def rehearse(self) -> None:
        """Warm the network on the last observation, the output thrown away (deploy only)."""
        self.actor.rehearse()

    def _send(self, result: StepResult) -> None:
        out = result.action
        if out is not None:
            # The action first: in one process the gate answers inside this publish, so the
            # command is out before the chunk (copied, serialized for plain readers) goes.
            tensors = {'action': out.action, 'value': out.value, 'log_prob': out.log_prob}
            self.action_pub.publish('action', out.seq, tensors, out.version, out.stamp_ns)
        if result.chunk is not None:
            c = result.chunk
            # Stamped with the wall clock as the step's work ends: a learner beside the
            # robot (the adapter) times its own work around the control steps from it.
            self.rollout_pub.publish('rollout', c.first_seq, c.tensors, c.version,
                                     time.time_ns())

    def _health_counters(self) -> dict:
        c = self.counters
        # The actor's step (inference on the policy's device) over the period since the
        # last report: what an operator watches for a slow or throttled GPU.
        times, self._inference_ns = self._inference_ns, []
        infer = {}
        if times:
            ms = np.asarray(times) / 1e6
            infer = {'inference_p50_ms': round(float(np.percentile(ms, 50)), 4),
                     'inference_p99_ms': round(float(np.percentile(ms, 99)), 4),
                     'inference_max_ms': round(float(ms.max()), 4)}
        runtime = self.actor.inference
        if hasattr(runtime, 'onnx_active'):
            # A checkpoint exported in memory (runtime onnx): whether steps go through
            # onnxruntime now, and exports built / refused (torch acts after a refusal).
            infer.update(onnx_active=int(runtime.onnx_active), onnx_exports=runtime.exports,
                         onnx_failed=runtime.failed)
        return {**c, 'dropped': c['bad_obs'], 'messages': c['steps'] + c['bad_obs'], **infer}

    def destroy_node(self):
        """Release transport endpoints (unlink shared memory), then destroy the node."""
        if hasattr(self, 'health'):
            self.health.close()
        close_endpoints(self)
        return super().destroy_node()


def main(args=None):
    """Run the policy node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(PolicyNode, args)


if __name__ == '__main__':
    main()
