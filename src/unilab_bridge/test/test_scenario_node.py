# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The scenario node with the robot double: a scripted operator-side controller is scored."""

import json

from double_helpers import Graph, overrides, profile_file, solve_ik
from geometry_msgs.msg import PoseStamped, Twist
import numpy as np
import pytest
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray
from unilab_bridge.robot_double_node import RobotDoubleNode
from unilab_bridge.scenario_node import GOAL_QOS, ScenarioNode
from unilab_core.config import ConfigError
from unilab_core.kinematics import SiteKinematics
from unilab_core.robot_profile import load_profile

ARM = load_profile(profile_file('arm6'))
SCALE = 4.0


class ScriptedController(Node):
    """Puts the tool at each goal: inverse kinematics, then one forward command."""

    def __init__(self, context, namespace=''):
        super().__init__('scripted_controller' + namespace.replace('/', '_'), context=context)
        fk = SiteKinematics(ARM.model_file, ARM.joint_names, ARM.task_inputs.tool_site)
        self.fk = lambda q: fk.positions(q)[0]
        self.pub = self.create_publisher(Float64MultiArray, namespace + ARM.command.topic, 10)
        self.create_subscription(PoseStamped, namespace + ARM.task_inputs.goal_topic,
                                 self._on_goal, GOAL_QOS)
        self.goals = 0

    def _on_goal(self, msg):
        p = msg.pose.position
        q = solve_ik(self.fk, [p.x, p.y, p.z], [-3.1, -2.0, -2.6, -3.1, -3.1, -3.1],
                     [3.1, 2.0, 2.6, 3.1, 3.1, 3.1])
        self.pub.publish(Float64MultiArray(data=q.tolist()))
        self.goals += 1


def _start(context, robots, **scenario):
    graph = Graph(context)
    graph.add(RobotDoubleNode(context=context, parameter_overrides=overrides(
        profile=profile_file('arm6'), robots=robots, time_scale=SCALE)))
    node = graph.add(ScenarioNode(context=context, parameter_overrides=overrides(
        profile=profile_file('arm6'), robots=robots, time_scale=SCALE, **scenario)))
    return graph, node


def test_a_tool_at_each_goal_scores_success_for_every_robot_of_a_fleet(context, tmp_path):
    results = tmp_path / 'results.json'
    graph, scenario = _start(context, 2, goals=2, goal_timeout_s=4.0,
                             results_file=str(results))
    try:
        ctrl = [graph.add(ScriptedController(context, f'/robot{k}')) for k in (0, 1)]
        assert graph.spin_until(lambda: scenario.done, timeout_s=60.0)
    finally:
        graph.close()
    doc = json.loads(results.read_text())
    assert doc['robot'] == 'arm6' and doc['scenario'] == 'reach' and doc['time_scale'] == SCALE
    assert doc['summary']['goals_scored'] == 4 and doc['summary']['success_fraction'] == 1.0
    assert sorted((g['robot'], g['goal']) for g in doc['goals']) == [(0, 0), (0, 1), (1, 0),
                                                                     (1, 1)]
    assert all(g['final_distance_m'] < 0.05 for g in doc['goals'])
    assert [c.goals for c in ctrl] == [2, 2]


def test_a_robot_that_does_not_move_times_out_on_every_goal(context, tmp_path):
    results = tmp_path / 'results.json'
    graph, scenario = _start(context, 1, goals=2, goal_timeout_s=0.5, tolerance_m=0.01,
                             results_file=str(results), wait_for_subscribers=False)
    try:
        assert graph.spin_until(lambda: scenario.done, timeout_s=60.0)
    finally:
        graph.close()
    doc = json.loads(results.read_text())
    assert doc['summary']['success_fraction'] == 0.0
    assert all(g['time_to_reach_s'] is None and g['elapsed_s'] >= 0.5 for g in doc['goals'])
    assert all(np.isfinite(g['min_distance_m']) for g in doc['goals'])


def test_scenario_needs_a_reach_or_walk_profile(context, tmp_path):
    bad = tmp_path / 'noinputs.yaml'
    text = open(profile_file('arm6')).read().replace('kind: reach', 'kind: none')
    bad.write_text(text.replace('arm6_joint_limits.yaml',
                                profile_file('arm6').replace('arm6.yaml',
                                                             'arm6_joint_limits.yaml')))
    with pytest.raises(ConfigError, match='task_inputs.kind'):
        ScenarioNode(context=context, parameter_overrides=overrides(profile=str(bad)))


def test_walk_scenario_commands_velocities_and_scores_from_odometry(context, tmp_path):
    results = tmp_path / 'walk.json'
    graph = Graph(context)
    try:
        graph.add(RobotDoubleNode(context=context, parameter_overrides=overrides(
            profile=profile_file('quad8'), time_scale=SCALE)))
        scenario = graph.add(ScenarioNode(context=context, parameter_overrides=overrides(
            profile=profile_file('quad8'), time_scale=SCALE, goals=2, goal_timeout_s=0.5,
            results_file=str(results))))
        probe = graph.add(Node('teleop_probe', context=context))
        twists = []
        probe.create_subscription(Twist, '/cmd_vel', twists.append, 10)
        assert graph.spin_until(lambda: scenario.done, timeout_s=60.0)
    finally:
        graph.close()
    doc = json.loads(results.read_text())
    assert doc['scenario'] == 'walk' and doc['summary']['goals_scored'] == 2
    # The double's drives hold the crouch: it stands but does not walk, so no goal succeeds.
    assert all(not g['success'] and not g['fallen'] for g in doc['goals'])
    assert all(g['mean_speed_error_mps'] > 0.1 for g in doc['goals'])
    assert any(0.3 <= t.linear.x <= 0.6 for t in twists)
