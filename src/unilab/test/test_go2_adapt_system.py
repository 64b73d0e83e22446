# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab adapt`` on the Go2 double over DDS: walk segments scored, a round run, the robot on.

Separate processes as on a robot: the legged double (``unilab robot-sim``) and ``unilab
adapt`` (the deploy graph with the legged supervisor, plus the recorder and the adapter);
this process is the operator, holding a ``/cmd_vel`` command per walk segment. The robot's
profile is the shipped ``go2`` with a state estimate (``task_inputs.estimate_topic``: the
double's ``/odom`` plays the robot's estimator), which a walking robot's reward needs; the
shipped profile without one is refused by name. The policy is a freshly initialised
network (it stands, or falls): what is checked is the path, not what adaptation gains
(``bench adapt --robot go2``, docs/adapt.md).
"""

import ast
import json
import re
import shutil
import time

from geometry_msgs.msg import Twist
import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from test_deploy_system import _fresh_run, Process
from unilab_bag.dataset import batch_tensors
from unilab_bag.storage import BagReader
from unilab_bringup.paths import profile_path
from unilab_core import topics
import yaml

FAST = {'adapt': {'period_s': 0.5, 'min_episodes': 2, 'sim_envs': 1,
                  'sim_episodes_per_env': 1, 'sim_tolerance': 1.0, 'batch_size': 16}}
#: Walk segments' commands, each held SEGMENT_S (a new command starts an episode).
COMMANDS = ((0.3, 0.0, 0.0), (0.0, 0.0, 0.5), (-0.3, 0.0, 0.0), (0.0, 0.2, 0.0))
SEGMENT_S = 1.5
TILT = 0.65


def _profile_with_estimate(tmp_path):
    shipped = profile_path('go2')
    data = yaml.safe_load(shipped.read_text())
    data['robot']['task_inputs']['estimate_topic'] = '/odom'
    # The robot's own fall-stop bound (not the default 0.7) is the walking reward's fall.
    data['robot']['legged']['max_tilt_rad'] = TILT
    path = tmp_path / 'go2_estimate.yaml'
    path.write_text(yaml.safe_dump(data))
    # The profile's files are relative to it.
    limits = data['robot']['joint_limits_file']
    shutil.copy(shipped.parent / limits, tmp_path / limits)
    return path


@pytest.mark.system
def test_adapt_on_the_go2_double_scores_walk_segments_and_deploys_a_version(tmp_path):
    from conftest import cli
    run = _fresh_run(tmp_path / 'run', 'go2_walk')
    fast = tmp_path / 'fast.yaml'
    fast.write_text(yaml.safe_dump(FAST))
    # Without a state estimate the walking reward cannot be computed: refused by name.
    refused = cli('adapt', run, '--robot', 'go2', '--run-dir', tmp_path / 'refused')
    assert refused.returncode == 2 and 'estimate_topic' in refused.stderr, refused.stderr
    assert 'Traceback' not in refused.stderr
    profile = _profile_with_estimate(tmp_path)
    rd = tmp_path / 'adapt_run'
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node('go2_adapt_operator', context=context)
    cmd_pub = node.create_publisher(Twist, '/cmd_vel', 10)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    double = Process('robot-sim', '--robot', profile, '--variant', 'slippery', '--start',
                     'stand')
    adapt = Process('adapt', run, '--robot', profile, '--armed', '--config', fast,
                    '--run-dir', rd)
    a = rd / 'adapt'
    try:
        start = time.monotonic()
        deployed = False
        while time.monotonic() - start < 180 and not deployed:
            seg = int((time.monotonic() - start) / SEGMENT_S) % len(COMMANDS)
            vx, vy, yaw = COMMANDS[seg]
            msg = Twist()
            msg.linear.x, msg.linear.y, msg.angular.z = vx, vy, yaw
            cmd_pub.publish(msg)
            executor.spin_once(timeout_sec=0.1)
            for p in (double, adapt):
                assert p.poll() is None, p.output()[-3000:]
            dep = a / 'deployments.json'
            deployed = dep.is_file() and '1' in json.loads(dep.read_text())
        assert deployed, 'no fine-tuned version within 180 s:\n' + adapt.output()[-3000:]
        history = [json.loads(line) for line in open(a / 'history.jsonl')]
        assert [h['kind'] for h in history][:3] == ['start', 'robot', 'candidate']
        # The robot's episodes were walk segments (one command each), scored by the rule.
        assert history[1]['episodes'] >= 2
        assert 0.0 <= history[1]['robot_success'] <= 1.0
        assert (a / 'versions' / 'v0001.npy').is_file()
        params = yaml.safe_load((rd / 'graph_params.yaml').read_text())
        assert params['adapter']['ros__parameters']['max_tilt_rad'] == TILT
    finally:
        adapt.stop()
        double.stop()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
    assert 'Traceback' not in adapt.output() + double.output()
    # Stopped by Ctrl-C, every process ended cleanly: the adapter stopped its running round
    # first (a round left running crashed it, exit -11).
    stopped = re.search(r'unilab: stopped \((\{.*\})\)', adapt.output())
    assert stopped and set(ast.literal_eval(stopped.group(1)).values()) == {0}, \
        adapt.output()[-3000:]
    safety = json.loads((rd / 'safety_stats.json').read_text())
    if not safety['legged_faults']:
        # Walking when Ctrl-C came: the stop put it in damping, no stale-input fault while
        # the process closed. (A fault latched while walking, a stall of this 2-core machine
        # under two test streams, is the fall stop doing its job: counted and named.)
        assert safety['legged_stops'] == 1 and safety['legged_mode'] == 'passive', safety
    # Armed at start only once the learners had joined the graph (their discovery while
    # the supervisor was active starved its inputs into the fall stop).
    control = next((rd / 'logs').glob('perception+policy+safety.log')).read_text()
    # The log names the learners not yet joined at the first look (one, both, or none when
    # both were up by then).
    after = yaml.safe_load((rd / 'graph_params.yaml').read_text())['safety']
    assert sorted(after['ros__parameters']['arm_after_nodes']) == ['/adapter', '/recorder']
    if 'legged: armed at start once /' in control:
        waiting = control.index('legged: armed at start once /')
        assert control.index('legged: armed at start: standing up') > waiting
    # The state estimate reached the observations the robot recorded (the critic's
    # velocity and height columns, zeros without one).
    estimates = []
    for bag in sorted((rd / 'recordings').iterdir()):
        if not (bag / 'metadata.yaml').is_file():
            continue
        with BagReader(bag, allow_damaged=True) as reader:
            for _, msg in reader.decoded([topics.ROLLOUT]):
                obs = np.asarray(batch_tensors(msg)['obs'])[:, 0]
                estimates.append(obs[:, 24 + 9:24 + 13])
    estimates = np.concatenate(estimates)
    assert np.all(np.isfinite(estimates)) and np.any(estimates[:, 3] > 0.1)   # height
