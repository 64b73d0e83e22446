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
import pathlib

from rclpy.node import Node
from rclpy.qos import QoSProfile
from unilab_core import topics
from unilab_core.atomic import atomic_write_text
from unilab_core.config import (AdvantageSection, ConfigError, PolicyUpdateSection,
                                RolloutSection)
from unilab_core.ros.params import declare_section
from unilab_core.ros.tensor_msg import Batch, TensorMessageError
from unilab_core.ros.tensor_topic import (batch_capacity, close_endpoints,
                                          TensorPublisher, TensorSubscription)

from unilab_policy.node_common import PolicySetup, WEIGHTS_QOS
from unilab_policy.ppo import num_mini_batches_for, PPOParams
from unilab_policy.trainer import BadChunkError, StaleChunkError, Trainer


class TrainerNode(Node):
    """Collect rollout chunks and train."""

    def __init__(self, **kwargs):
        super().__init__('trainer', **kwargs)
        try:
            self.setup = PolicySetup(self, reserve_memory=True)
        except ValueError as exc:
            raise ConfigError(f'trainer: {exc}') from None
        p = self.declare_parameter
        run_dir = p('run_dir', 'runs/latest').value
        total_steps = p('total_steps', 100_000).value
        checkpoint_every = p('checkpoint_every', 20).value
        tensorboard = p('tensorboard', True).value
        resume = p('resume', '').value
        ro = declare_section(self, 'rollout', RolloutSection)
        adv = declare_section(self, 'advantage', AdvantageSection)
        up = declare_section(self, 'policy_update', PolicyUpdateSection)
        params = PPOParams(
            clip_param=up.clip_param, num_learning_epochs=up.epochs,
            num_mini_batches=num_mini_batches_for(up.batch_size, ro.rollout_length,
                                                  ro.num_envs),
            value_loss_coef=up.value_loss_coef, entropy_coef=up.entropy_coef,
            learning_rate=up.lr, max_grad_norm=up.max_grad_norm,
            use_clipped_value_loss=up.clipped_value_loss, schedule=up.schedule,
            desired_kl=up.desired_kl, gamma=adv.gamma, lam=adv.gae_lambda)
        self.run_dir = pathlib.Path(run_dir)
        self.trainer = Trainer(self.setup.build(), params, ro.rollout_length, ro.num_envs,
                               self.setup.device, run_dir, total_steps, checkpoint_every,
                               tensorboard, normalize_obs=self.setup.norm.observations)
        if resume:
            self.trainer.load(resume)
            self.get_logger().info(f'resumed from {resume}: update {self.trainer.updates}, '
                                   f'{self.trainer.env_steps} env steps')
        self.done = False
        n_weights = self.trainer.weights().size
        self.weights_pub = TensorPublisher(self, topics.WEIGHTS,
                                           batch_capacity({'flat': (n_weights,)}),
                                           policy='reliable', slots=4, qos=WEIGHTS_QOS,
                                           timeout_s=60.0, latched=True)
        self.chunk_sub = TensorSubscription(self, topics.ROLLOUT, self._on_chunk,
                                            policy='reliable', depth=64,
                                            qos=QoSProfile(depth=64), on_error=self._bad_chunk)
        self._publish_weights()
        self.get_logger().info(
            f'training on {self.setup.device}: {ro.num_envs} envs x {ro.rollout_length} steps '
            f'per update, {params.num_mini_batches} minibatches x {params.num_learning_epochs} '
            f'epochs, run dir {run_dir}')

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
        except (TensorMessageError, KeyError, ValueError, RuntimeError) as exc:
            self.get_logger().error(f'dropped malformed rollout chunk: {exc}')
            return
        if not updated:
            return
        if self.trainer.last_update_rejected:
            self.get_logger().error(
                f'PPO update {self.trainer.updates} rejected '
                f'({self.trainer.last_update_rejected}); continuing from the last good weights')
        if self.trainer.done:
            self.finish()
        else:
            self._publish_weights()

    def finish(self) -> None:
        """Write the final checkpoint and summary; mark the node done."""
        if self.done:
            return
        self.trainer.save_checkpoint()
        summary = self.trainer.summary()
        atomic_write_text(self.run_dir / 'summary.json', json.dumps(summary, indent=2))
        self.get_logger().info(f'training done: {json.dumps(summary)}')
        self.done = True

    def close(self) -> None:
        """Flush logs (and checkpoint if stopped early)."""
        if not self.done:
            # Stopped early (Ctrl-C): keep what was learned and say how far it got.
            if self.trainer.updates > 0:
                self.trainer.save_checkpoint()
            summary = dict(self.trainer.summary(), stopped_early=True)
            atomic_write_text(self.run_dir / 'summary.json', json.dumps(summary, indent=2))
        self.trainer.close()

    def destroy_node(self):
        """Release transport endpoints (unlink shared memory), then destroy the node."""
        close_endpoints(self)
        return super().destroy_node()


def main(args=None):
    """Run the trainer node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(TrainerNode, args)


if __name__ == '__main__':
    main()
