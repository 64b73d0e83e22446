# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The adaptation graph: the deploy graph plus recorder and adapter (``unilab adapt``).

``prepare_adapt`` is ``unilab_bringup.deploy.prepare_deploy`` with the adaptation's
checks and graph extension (``ADAPT``); the deploy code knows nothing of adaptation.
"""

from __future__ import annotations

import pathlib

from unilab_adapt.finetune import ROBOT_REWARD_TASKS
from unilab_adapt.params import AdapterNodeParams, RECORDINGS
from unilab_bag.recorder_params import RecorderNodeParams
from unilab_bringup.deploy import DeployModel, GraphExtension, prepare_deploy, PreparedDeploy
from unilab_core import topics
from unilab_core.config import ConfigError, RunConfig
from unilab_core.graph import Graph, NodeSpec
from unilab_policy.exported_inference import is_exported


RECORDER = NodeSpec('recorder', 'unilab_bag', 'recorder_node', 'unilab_bag.recorder_node',
                    'RecorderNode')
ADAPTER = NodeSpec('adapter', 'unilab_adapt', 'adapter_node', 'unilab_adapt.adapter_node',
                   'AdapterNode')


def adapt_graph(deploy: Graph, cfg: RunConfig, model: str | pathlib.Path,
                run_dir: str | pathlib.Path) -> Graph:
    """
    Return the adaptation graph: a deploy graph that learns on the robot (docs/adapt.md).

    The deploy graph's policy samples and sends its steps as rollout chunks
    (``adapt`` mode: never waits), a recorder writes the deployed topics into
    rotating rosbag2 bags (bounded disk use), and the adapter fine-tunes on
    the chunks and publishes the versions its fuse allows on the weights topic.
    """
    a = cfg.adapt
    params = dict(deploy.parameters)
    inputs = params['perception'].task_inputs
    if inputs.kind == 'legged' and not inputs.estimate_topic:
        raise ConfigError('adapt: a walking robot\'s reward needs the trunk\'s velocity: set '
                          'the robot profile\'s task_inputs.estimate_topic to its state '
                          'estimator\'s nav_msgs/Odometry (docs/adapt.md)')
    # Adaptation samples actions and swaps weights in torch.
    params['policy'] = params['policy'].model_copy(update={'mode': 'adapt',
                                                           'runtime': 'torch'})
    # No rehearsal of the chain (run.deploy_rehearse_lead_ms): a sampling policy cannot
    # rehearse its network, and its cost beside the learners is not measured.
    params['perception'] = params['perception'].model_copy(update={'rehearse_lead_ms': 0.0})
    safety = params['safety']
    recorded = [topics.ROLLOUT, topics.WEIGHTS, topics.OBSERVATION, topics.SAFE_COMMAND,
                topics.JOINT_STATES, safety.output.topic]
    params['recorder'] = RecorderNodeParams(
        out=str(pathlib.Path(run_dir) / RECORDINGS), topics=list(dict.fromkeys(recorded)),
        rotate_mb=a.record_rotate_mb, keep_mb=a.record_keep_mb, sched_idle=a.sched_idle)
    # A legged robot armed at start stands up once the learners have joined the graph:
    # their discovery, while the supervisor was active, starved its inputs past the fall
    # stop's bound (docs/adapt.md).
    ns = deploy.namespace.rstrip('/')
    params['safety'] = safety.model_copy(update={
        'arm_after_nodes': [f'{ns}/recorder', f'{ns}/adapter']})
    # The adapter reports as part of the robot; it needs the deploy graph's nodes (they do
    # not need it).
    robot_health = params['policy'].health
    params['adapter'] = AdapterNodeParams(
        run_dir=str(run_dir), model=str(model), adapt=a,
        control_rate_hz=params['perception'].control_rate_hz,
        max_tilt_rad=safety.legged.max_tilt_rad if safety.legged_interface else 0.0,
        health=robot_health.model_copy(
            update={'peers': [f'{ns}/{n.name}' for n in deploy.nodes]}))
    remap = dict(deploy.remappings)
    robot = remap.get('policy', {})
    remap['recorder'] = dict(robot)
    remap['adapter'] = dict(robot)
    # The robot runs on if the learner or the recorder dies (a killed adapter leaves the
    # deployed version acting).
    # The control loop runs composed, as `unilab deploy` runs it; the learners beside it in
    # their own processes (one GIL and one executor for the robot alone).
    return Graph('adapt', deploy.nodes + (RECORDER, ADAPTER), params,
                 namespace=deploy.namespace, remappings=remap,
                 optional=('recorder', 'adapter'),
                 together=tuple(n.name for n in deploy.nodes),
                 idle=('recorder', 'adapter') if a.sched_idle else ())


def check_adaptable(desc: DeployModel) -> None:
    """Refuse a model adaptation cannot fine-tune (ConfigError naming why)."""
    if is_exported(desc.path):
        raise ConfigError(f'model {desc.path}: adaptation fine-tunes the network; give the '
                          'run directory or a checkpoint, not an exported model')
    if desc.task.name not in ROBOT_REWARD_TASKS:
        raise ConfigError(f'model {desc.path}: task `{desc.task.name}` has no reward '
                          'computable on a robot; adaptation supports '
                          f'{", ".join(ROBOT_REWARD_TASKS)}')


#: What adaptation adds to a deploy: its checks of the model and its graph.
ADAPT = GraphExtension('adapt', check_adaptable, adapt_graph)


def prepare_adapt(model: str, robot: str, **kwargs) -> PreparedDeploy:
    """Prepare the adaptation graph (``prepare_deploy``'s arguments): ``unilab adapt``."""
    return prepare_deploy(model, robot, extension=ADAPT, **kwargs)
