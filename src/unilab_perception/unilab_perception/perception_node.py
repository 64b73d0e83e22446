# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Perception node: JointState + task state -> policy observation batch."""

from __future__ import annotations

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from unilab_core import topics
from unilab_core.ros.tensor_msg import make_batch, read_batch, TensorMessageError
from unilab_interfaces.msg import TensorBatch

from unilab_perception.joint_obs import build_observation, JointLayoutError, JointStateIndex

#: Unmatched messages kept per source while waiting for the partner stamp.
MAX_PENDING = 32
PASS_THROUGH = ('reward', 'terminated', 'truncated', 'episode_return', 'episode_length')


class PerceptionNode(Node):
    """Align joint states with task state by stamp and publish the observation."""

    def __init__(self, **kwargs):
        super().__init__('perception', **kwargs)
        self.num_envs = self.declare_parameter('num_envs', 64).value
        joint_names = list(self.declare_parameter('joint_names', ['']).value)
        self.uses_joint_state = self.declare_parameter('uses_joint_state', True).value
        self.extras_dim = self.declare_parameter('extras_dim', 0).value
        self.obs_dim = self.declare_parameter('obs_dim', 0).value
        self.index = JointStateIndex(joint_names, self.num_envs)
        self.counters = {'published': 0, 'invalid': 0, 'unmatched': 0}
        self._logged_kinds: set[str] = set()
        self._joint: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._task: dict[int, object] = {}
        self._out: np.ndarray | None = None
        qos = QoSProfile(depth=4)
        self.pub = self.create_publisher(TensorBatch, topics.OBSERVATION, qos)
        self.create_subscription(JointState, topics.JOINT_STATES, self._on_joint_state, qos)
        self.create_subscription(TensorBatch, topics.TASK_STATE, self._on_task_state, qos)

    def _invalid(self, kind: str, why: str) -> None:
        # Counted always, logged once per kind: a flood of identical log lines
        # would hide everything else and cost time on the control path.
        self.counters['invalid'] += 1
        if kind not in self._logged_kinds:
            self._logged_kinds.add(kind)
            self.get_logger().error(f'dropping invalid {kind}: {why}')

    def _on_joint_state(self, msg: JointState) -> None:
        stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        if not self.uses_joint_state:
            self._joint[stamp] = (None, None)
        else:
            try:
                q = self.index.gather(msg.name, msg.position, 'position')
                qd = self.index.gather(msg.name, msg.velocity, 'velocity')
            except JointLayoutError as exc:
                self._invalid('joint_state', str(exc))
                return
            self._joint[stamp] = (q, qd)
        self._bound(self._joint)
        self._try_emit(stamp)

    def _on_task_state(self, msg: TensorBatch) -> None:
        try:
            batch = read_batch(msg)
            extras = batch.tensors['extras']
            if extras.shape != (self.num_envs, self.extras_dim):
                raise TensorMessageError(
                    f'extras shape {extras.shape}, expected {(self.num_envs, self.extras_dim)}')
        except (TensorMessageError, KeyError) as exc:
            self._invalid('task_state', str(exc))
            return
        self._task[batch.stamp_ns] = batch
        self._bound(self._task)
        self._try_emit(batch.stamp_ns)

    def _bound(self, store: dict) -> None:
        # A source that never gets its partner (a driver without task state,
        # a dead bridge) must not grow memory: keep the newest MAX_PENDING.
        while len(store) > MAX_PENDING:
            del store[min(store)]
            self.counters['unmatched'] += 1

    def _try_emit(self, stamp: int) -> None:
        if stamp not in self._joint or stamp not in self._task:
            return
        q, qd = self._joint.pop(stamp)
        batch = self._task.pop(stamp)
        # Anything older than the matched stamp can never be matched any more.
        for store in (self._joint, self._task):
            for old in [s for s in store if s < stamp]:
                del store[old]
                self.counters['unmatched'] += 1
        self._out = build_observation(q, qd, batch.tensors['extras'], self.uses_joint_state,
                                      self._out)
        tensors = {'obs': self._out}
        tensors.update({k: batch.tensors[k] for k in PASS_THROUGH if k in batch.tensors})
        self.pub.publish(make_batch('observation', batch.seq, tensors, stamp_ns=stamp))
        self.counters['published'] += 1


def main(args=None):
    """Run the perception node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(PerceptionNode, args)


if __name__ == '__main__':
    main()
