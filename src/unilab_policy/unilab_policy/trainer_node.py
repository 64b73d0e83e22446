# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Trainer node: rollout chunks in, PPO updates, versioned weights out.

The PPO update runs inside the chunk callback. That blocks this node's
executor for the update's duration, which is what on-policy training wants:
the policy node holds collection until the new version arrives anyway.
"""

from __future__ import annotations

import json
import math
import pathlib

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from rclpy.qos import QoSProfile
from unilab_core import topics
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError
from unilab_core.health import RunMetrics, TRAINER_STATUS_METRICS
from unilab_core.ros.diagnostics import NodeDiagnostics
from unilab_core.ros.params import declare_params
from unilab_core.ros.tensor_msg import Batch, TensorMessageError
from unilab_core.ros.tensor_topic import (batch_capacity, close_endpoints,
                                          TensorPublisher, TensorSubscription)

from unilab_policy import distributed
from unilab_policy.device import setup_device
from unilab_policy.networks import make_trainer
from unilab_policy.node_common import WEIGHTS_QOS
from unilab_policy.params import TrainerNodeParams
from unilab_policy.trainer import BadChunkError, StaleChunkError, TrainingFailedError


class TrainerNode(Node):
    """Collect rollout chunks and train."""

    def __init__(self, **kwargs):
        super().__init__('trainer', **kwargs)
        self.params = p = declare_params(self, TrainerNodeParams)
        try:
            self.device = setup_device(p.run.device, p.run.torch_threads,
                                       p.gpu.memory_pool_ratio, log=self.get_logger().info)
            # Under torchrun (one graph per rank) the trainers of all ranks form one
            # process group: gradients all-reduced, rank 0 writes (unilab_policy.distributed).
            self.device = distributed.rank_device(self.device)
            self.joined = distributed.init_from_env(self.device)
            self.trainer = make_trainer(p, self.device)
        except ValueError as exc:
            raise ConfigError(f'trainer: {exc}') from None
        self.run_dir = pathlib.Path(p.run_dir)
        if p.resume:
            self.trainer.load(p.resume)
            self.get_logger().info(f'resumed from {p.resume}: update {self.trainer.updates}, '
                                   f'{self.trainer.env_steps} env steps')
        self.done = False
        #: Process exit status when this node runs alone (1: training failed).
        self.exit_code = 0
        self.failure = ''
        n_weights = self.trainer.weights().size
        self.weights_pub = TensorPublisher(self, topics.WEIGHTS,
                                           batch_capacity({'flat': (n_weights,)}),
                                           policy='reliable', slots=4, qos=WEIGHTS_QOS,
                                           timeout_s=60.0, latched=True)
        self.chunk_sub = TensorSubscription(self, topics.ROLLOUT, self._on_chunk,
                                            policy='reliable', depth=64,
                                            qos=QoSProfile(depth=64), on_error=self._bad_chunk)
        self._publish_weights()
        self.health = NodeDiagnostics(self, p.health, self._health_counters,
                                      errors=self._health_errors, device=self.device)
        # The graph's success, safety and transport rates in each metrics row, from every
        # node's health counters on /diagnostics (composed or one process per node alike).
        self.run_metrics = RunMetrics()
        self.trainer.extra_metrics = self.run_metrics.row
        self.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, self._on_diagnostics, 50)
        ppo = self.trainer.params
        self.get_logger().info(
            f'training on {self.device}: {p.rollout.num_envs} envs x '
            f'{p.rollout.rollout_length} steps per update, {ppo.num_mini_batches} minibatches '
            f'x {ppo.update.epochs} epochs, run dir {p.run_dir}')

    def _publish_weights(self) -> None:
        t = self.trainer
        self.weights_pub.publish('weights', t.updates, {'flat': t.weights()}, t.version)

    def _bad_chunk(self, exc: Exception) -> None:
        self.trainer.bad_chunks += 1
        self.get_logger().error(f'dropped malformed rollout chunk: {exc}')

    def _on_chunk(self, batch: Batch) -> None:
        if self.done:
            return
        try:
            updated = self.trainer.add_chunk(batch.tensors, batch.version)
        except BadChunkError as exc:
            self.get_logger().error(f'rejected rollout chunk ({self.trainer.bad_chunks} so far): '
                                    f'{exc}', throttle_duration_sec=5.0)
            return
        except StaleChunkError as exc:
            self.get_logger().warning(f'dropped rollout chunk: {exc}', throttle_duration_sec=5.0)
            return
        except TrainingFailedError as exc:
            self.fail(str(exc))
            return
        except (TensorMessageError, KeyError, ValueError, RuntimeError) as exc:
            self.get_logger().error(f'dropped malformed rollout chunk: {exc}')
            return
        if not updated:
            return
        t = self.trainer
        if t.last_update_rejected:
            self.get_logger().error(
                f'PPO update {t.updates} rejected ({t.last_update_rejected}); continuing '
                'from the last good weights')
        if t.last_update_failed:
            self.get_logger().error(
                f'PPO update {t.updates} failed ({t.last_update_failed}); skipped '
                f'({t.failed_updates} failed so far), collection continues with the same '
                f'weights as version {t.version}')
        if self.trainer.done:
            self.finish()
        else:
            self._publish_weights()

    def finish(self) -> None:
        """Write the final checkpoint and summary; mark the node done."""
        if self.done:
            return
        try:
            self.trainer.save_checkpoint()
        except TrainingFailedError as exc:  # the final checkpoint could not be written
            self.fail(str(exc))
            return
        summary = self.trainer.summary()
        atomic_write_text(self.run_dir / 'summary.json', json.dumps(summary, indent=2))
        self.get_logger().info(f'training done: {json.dumps(summary)}')
        self.done = True

    def fail(self, message: str) -> None:
        """Stop training after an unrecoverable failure: summary, error line, exit code 1."""
        self.failure = message
        self.get_logger().error(f'training stopped: {message}')
        summary = dict(self.trainer.summary(), failed=message)
        atomic_write_text(self.run_dir / 'summary.json', json.dumps(summary, indent=2))
        self.exit_code = 1
        self.done = True

    def close(self) -> None:
        """Flush logs (and checkpoint if stopped early)."""
        if not self.done:
            # Stopped early (Ctrl-C): keep what was learned and say how far it got.
            failed = {}
            if self.trainer.updates > 0:
                try:
                    self.trainer.save_checkpoint()
                except TrainingFailedError as exc:
                    self.get_logger().error(f'training stopped: {exc}')
                    failed, self.exit_code = {'failed': str(exc)}, 1
            summary = dict(self.trainer.summary(), stopped_early=True, **failed)
            atomic_write_text(self.run_dir / 'summary.json', json.dumps(summary, indent=2))
        self.trainer.close()

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            self.run_metrics.observe(status.name, {kv.key: kv.value for kv in status.values})

    def _health_counters(self) -> dict:
        t = self.trainer
        # With the last update's return: a live view draws it from here (unilab_view).
        return {'chunks_stale': t.stale_chunks, 'chunks_bad': t.bad_chunks,
                'updates': t.updates, 'rejected_updates': t.rejected_updates,
                'failed_updates': t.failed_updates, 'env_steps': t.env_steps,
                'stale': t.stale_chunks, 'dropped': t.bad_chunks,
                **{k: t.last_metrics.get(k, math.nan) for k in TRAINER_STATUS_METRICS}}

    def _health_errors(self) -> list[str]:
        return [f'training stopped: {self.failure}'] if self.failure else []

    def destroy_node(self):
        """Release transport endpoints (unlink shared memory), then destroy the node."""
        if hasattr(self, 'health'):
            self.health.close()
        close_endpoints(self)
        if getattr(self, 'joined', False):  # meet the other ranks only after a clean finish
            trainer = getattr(self, 'trainer', None)
            distributed.shutdown(synchronise=bool(trainer is not None and trainer.done
                                                  and not getattr(self, 'failure', '')))
        return super().destroy_node()


def main(args=None):
    """Run the trainer node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(TrainerNode, args)


if __name__ == '__main__':
    main()
