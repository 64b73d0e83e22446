# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Composed nodes on simulated time: one /clock subscription drives every node's clock."""

from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from unilab_core.ros.runtime import share_sim_clock
from unilab_core.testing import isolate_ros_domain, spin_until

isolate_ros_domain()

from unilab_core.pytest_fixtures import fresh_context  # noqa: E402,F401,I100


def _clock_subscriptions(node) -> int:
    return sum(s.topic_name == '/clock' for s in node.subscriptions)


def test_one_clock_subscription_sets_every_composed_nodes_time(fresh_context):  # noqa: F811
    sim = [Parameter('use_sim_time', value=True)]
    nodes = [Node(f'n{i}', context=fresh_context, parameter_overrides=sim) for i in range(3)]
    wall = Node('wall', context=fresh_context)  # on wall time: left alone
    source = Node('sim', context=fresh_context)
    executor = SingleThreadedExecutor(context=fresh_context)
    try:
        assert [_clock_subscriptions(n) for n in nodes] == [1, 1, 1]
        assert share_sim_clock([*nodes, wall]) == 2
        assert [_clock_subscriptions(n) for n in nodes + [wall]] == [1, 0, 0, 0]
        for n in (*nodes, wall, source):
            executor.add_node(n)
        pub = source.create_publisher(
            Clock, '/clock', QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT))
        msg = Clock()
        msg.clock.sec, msg.clock.nanosec = 42, 5

        def every_clock_set():
            pub.publish(msg)
            return all(n.get_clock().now().nanoseconds == 42_000_000_005 for n in nodes)
        assert spin_until(executor, every_clock_set, 10.0)
        assert wall.get_clock().now().nanoseconds > 42_000_000_005 * 1000  # wall time
        assert share_sim_clock([wall]) == 0 and share_sim_clock([]) == 0
    finally:
        executor.shutdown()
        for n in (*nodes, wall, source):
            n.destroy_node()


class _Simulator(Node):
    """A node that publishes simulated time and drives composed clocks (the bridge's role)."""

    def __init__(self, context, publishes_clock=True):
        super().__init__('simulator', context=context)
        self.drives_sim_clock = publishes_clock
        self.clocks = []

    def drive_clocks(self, clocks):
        self.clocks = list(clocks)


def test_with_the_simulator_composed_every_clock_is_driven_and_no_subscription_stays(
        fresh_context):  # noqa: F811
    sim = [Parameter('use_sim_time', value=True)]
    nodes = [Node(f'n{i}', context=fresh_context, parameter_overrides=sim) for i in range(3)]
    simulator = _Simulator(fresh_context)
    try:
        assert share_sim_clock([simulator, *nodes]) == 3
        assert [_clock_subscriptions(n) for n in nodes] == [0, 0, 0]
        assert simulator.clocks == [n.get_clock() for n in nodes]
        # What the simulator does at a step: every node reads the step's time.
        from rclpy.clock import ClockType
        from rclpy.time import Time
        for clock in simulator.clocks:
            clock.set_ros_time_override(Time(nanoseconds=7_000, clock_type=ClockType.ROS_TIME))
        assert [n.get_clock().now().nanoseconds for n in nodes] == [7_000] * 3
    finally:
        for n in (*nodes, simulator):
            n.destroy_node()


def test_a_simulator_that_does_not_publish_the_clock_leaves_one_subscription(
        fresh_context):  # noqa: F811
    sim = [Parameter('use_sim_time', value=True)]
    nodes = [Node(f'n{i}', context=fresh_context, parameter_overrides=sim) for i in range(2)]
    simulator = _Simulator(fresh_context, publishes_clock=False)
    try:
        assert share_sim_clock([simulator, *nodes]) == 1
        assert [_clock_subscriptions(n) for n in nodes] == [1, 0]
        assert simulator.clocks == []
    finally:
        for n in (*nodes, simulator):
            n.destroy_node()
