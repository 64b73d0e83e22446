# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The workspace box from the live graph: the view asks the nodes that hold it.

Real rclpy nodes named as the graphs name them, their parameters declared from the
nodes' own typed sections (so a renamed parameter fails here): a deploy's
``perception`` (``goal_workspace``), a training graph's (``[]``: no check) beside its
``trainer`` (``workspace``).
"""

import time

import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from unilab_core.ros.params import declare_params
from unilab_core.testing import isolate_ros_domain
from unilab_perception.params import PerceptionNodeParams
from unilab_policy.params import TrainerNodeParams
from unilab_view.live_workspace import LiveWorkspace
from unilab_view.workspace import parse_workspace

isolate_ros_domain()  # before rclpy.init: this test's nodes stay its own

BOX = [0.25, -0.4, 0.1, 0.65, 0.4, 0.5]
TRAINED = [0.2, -0.5, 0.0, 0.7, 0.5, 0.6]
WAIT_S = 20.0
#: what the nodes' sections require beyond the box
REQUIRED = {'joint_names': ['j1', 'j2'], 'obs_dim': 4, 'act_dim': 2}


def _node(name, ns, section, **params):
    params = {**REQUIRED, **params}
    node = rclpy.create_node(name, namespace=ns, parameter_overrides=[
        Parameter(k.replace('__', '.'), value=v) for k, v in params.items()])
    declare_params(node, section)
    return node


def _poll_until_found(live, executor):
    deadline = time.monotonic() + WAIT_S
    while (found := live.poll()) is None:
        assert time.monotonic() < deadline, f'no workspace after {live.asked} questions'
        executor.spin_once(timeout_sec=0.05)
    return found


@pytest.fixture
def ros():
    rclpy.init()
    executor = SingleThreadedExecutor()
    nodes = []
    yield executor, nodes
    for node in nodes:
        executor.remove_node(node)
        node.destroy_node()
    executor.shutdown()
    rclpy.try_shutdown()


def test_a_deploys_perception_gives_the_box_it_refuses_goals_outside_of(ros):
    executor, nodes = ros
    view = rclpy.create_node('unilab_view')
    nodes += [view, _node('perception', '/robot1', PerceptionNodeParams, goal_workspace=BOX,
                          task_inputs__goal_frame='base')]
    for node in nodes:
        executor.add_node(node)
    live = LiveWorkspace(view, '/robot1', retry_s=0.1)
    assert _poll_until_found(live, executor) == (tuple(BOX), 'base')
    assert live.asked == 1
    assert live.poll() == (tuple(BOX), 'base')
    assert live.asked == 1  # once found, never asked again
    assert live.sources == [] and list(view.clients) == []  # its service clients destroyed


def test_beside_training_the_trainers_box_and_nothing_from_elsewhere(ros):
    executor, nodes = ros
    view = rclpy.create_node('unilab_view')
    # Training's perception checks no goals ([]); the trainer checkpoints the task's box.
    nodes += [view, _node('perception', '/', PerceptionNodeParams),
              _node('trainer', '/', TrainerNodeParams, workspace=TRAINED,
                    workspace_frame='base_link'),
              # Another robot's namespace: not this view's.
              _node('perception', '/robot9', PerceptionNodeParams, goal_workspace=BOX)]
    for node in nodes:
        executor.add_node(node)
    live = LiveWorkspace(view, '', retry_s=0.1)
    assert _poll_until_found(live, executor) == (tuple(TRAINED), 'base_link')
    assert live.asked == 2  # perception answered without a box, then the trainer
    assert list(view.clients) == []


def test_no_node_holds_a_box_no_box_and_no_blocking(ros):
    executor, nodes = ros
    view = rclpy.create_node('unilab_view')
    nodes.append(view)
    executor.add_node(view)
    live = LiveWorkspace(view, '/nobody', retry_s=0.1)
    start = time.monotonic()
    for _ in range(20):
        assert live.poll() is None
        executor.spin_once(timeout_sec=0.01)
    assert live.asked == 0  # no services up: no question sent
    assert len(list(view.clients)) == 2  # kept, for a graph that starts later
    assert time.monotonic() - start < WAIT_S


def test_only_a_finite_ordered_box_in_a_named_frame_is_taken():
    assert parse_workspace(BOX, 'base_link') == (tuple(BOX), 'base_link')
    assert parse_workspace([], 'base_link') is None
    assert parse_workspace(BOX[:5], 'base_link') is None
    assert parse_workspace([*BOX[:5], float('nan')], 'base_link') is None
    assert parse_workspace([*BOX[3:], *BOX[:3]], 'base_link') is None  # min above max
    assert parse_workspace(BOX, '') is None
    assert parse_workspace(None, None) is None


def test_a_question_never_answered_is_dropped_and_asked_again(monkeypatch):
    import unilab_view.live_workspace as lw

    class _Future:
        def done(self):
            return False

    class _Client:
        def __init__(self):
            self.calls, self.removed = 0, 0

        def service_is_ready(self):
            return True

        def call_async(self, request):
            self.calls += 1
            return _Future()

        def remove_pending_request(self, future):
            self.removed += 1

    client = _Client()

    class _Node:
        def create_client(self, srv, name):
            return client

    monkeypatch.setattr(lw, 'ANSWER_TIMEOUT_S', 0.05)
    live = LiveWorkspace(_Node(), '/r', retry_s=0.0)
    assert live.poll() is None and client.calls == 1
    time.sleep(0.1)
    assert live.poll() is None and client.removed == 1  # dropped after the timeout
    assert live.poll() is None and client.calls == 2  # and asked again
