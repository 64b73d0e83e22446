# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Bridge node: batched MuJoCo simulation that publishes what robot drivers would.

Lock-step protocol: the node publishes the state of step ``seq`` (one batched
sensor_msgs/JointState, a ``task_state`` TensorBatch and /clock, all with the
same simulated stamp) and advances only when the safety gate's command for
that ``seq`` arrives on the safe-command topic, the only input it accepts.
If no command comes within ``state_timeout_s`` it re-sends the same state
(consumers de-duplicate by ``seq``), so a lost message cannot stall training.
"""

from __future__ import annotations

import array
import time

from builtin_interfaces.msg import Time
import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from unilab_bridge.tasks import make_task, UnknownTaskError
from unilab_core import topics
from unilab_core.config import ConfigError
from unilab_core.ros.tensor_msg import make_batch, read_batch, TensorMessageError
from unilab_interfaces.msg import TensorBatch


def _f64(a: np.ndarray) -> array.array:
    out = array.array('d')
    out.frombytes(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    return out


class BridgeNode(Node):
    """Step N simulated robots in lock-step with the safe command topic."""

    def __init__(self, **kwargs):
        super().__init__('bridge', **kwargs)
        p = self.declare_parameter
        task_name = p('task', 'arm6_reach').value
        self.num_envs = p('num_envs', 64).value
        seed = p('seed', 0).value
        self.timeout = p('state_timeout_s', 1.0).value
        self.publish_clock = p('publish_clock', True).value
        try:
            self.task = make_task(task_name, self.num_envs, seed=seed)
        except UnknownTaskError as exc:
            raise ConfigError(f'bridge: parameter `task`: {exc}') from None
        self.seq = 0
        self.counters = {'steps': 0, 'republished': 0, 'stale_commands': 0, 'bad_commands': 0}
        self._logged: set[str] = set()
        names = [f'env{i}/{j}' for i in range(self.num_envs) for j in self.task.joint_names]
        self._js = JointState()
        self._js.name = names
        qos = QoSProfile(depth=4)
        self.js_pub = self.create_publisher(JointState, topics.JOINT_STATES, qos)
        self.task_pub = self.create_publisher(TensorBatch, topics.TASK_STATE, qos)
        self.clock_pub = self.create_publisher(Clock, topics.CLOCK, 10)
        self.create_subscription(TensorBatch, topics.SAFE_COMMAND, self._on_command, qos)
        self.state = self.task.reset(seed=seed)
        self._last_pub = 0.0
        self._publish()
        self.create_timer(self.timeout / 2.0, self._check_timeout)
        self.get_logger().info(
            f'{task_name}: {self.num_envs} envs, {len(self.task.joint_names)} joints, '
            f'control dt {self.task.control_dt:.3f} s, obs {self.task.obs_dim}, '
            f'act {self.task.action_dim} ({self.task.command_interface})')

    def _stamp_ns(self) -> int:
        return int(round(self.seq * self.task.control_dt * 1e9))

    def _publish(self) -> None:
        s = self.state
        stamp_ns = self._stamp_ns()
        t = Time(sec=stamp_ns // 1_000_000_000, nanosec=stamp_ns % 1_000_000_000)
        if self.publish_clock:
            self.clock_pub.publish(Clock(clock=t))
        self._js.header.stamp = t
        self._js.position = _f64(s.joint_position)
        self._js.velocity = _f64(s.joint_velocity)
        self._js.effort = _f64(s.joint_effort)
        self.js_pub.publish(self._js)
        tensors = {
            'extras': s.extras, 'reward': s.reward,
            'terminated': s.terminated, 'truncated': s.truncated,
            'episode_return': s.episode_return, 'episode_length': s.episode_length,
        }
        self.task_pub.publish(make_batch('task_state', self.seq, tensors, stamp_ns=stamp_ns))
        self._last_pub = time.monotonic()

    def _check_timeout(self) -> None:
        if time.monotonic() - self._last_pub > self.timeout:
            self.counters['republished'] += 1
            self._publish()

    def _on_command(self, msg: TensorBatch) -> None:
        try:
            batch = read_batch(msg)
            command = batch.tensors['command']
        except (TensorMessageError, KeyError) as exc:
            self._bad(f'malformed command message: {exc}')
            return
        if batch.seq != self.seq:
            self.counters['stale_commands'] += 1
            return
        expected = (self.num_envs, self.task.action_dim)
        if command.shape != expected or not np.all(np.isfinite(command)):
            # The safety gate never sends this; refuse rather than step with it.
            self._bad(f'command shape {command.shape} (expected {expected}) or non-finite')
            return
        self.state = self.task.step(command)
        self.seq += 1
        self.counters['steps'] += 1
        self._publish()

    def _bad(self, text: str) -> None:
        self.counters['bad_commands'] += 1
        if text not in self._logged:
            self._logged.add(text)
            self.get_logger().error(f'ignored: {text}')

    def close(self) -> None:
        """Release the simulator."""
        self.task.close()


def main(args=None):
    """Run the bridge node."""
    from unilab_core.ros.runtime import spin_node
    spin_node(BridgeNode, args)


if __name__ == '__main__':
    main()
