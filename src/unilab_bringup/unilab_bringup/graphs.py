# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The graphs UniLab starts, as data: each one description, built from the run config.

A description names the nodes (``NodeSpec``) and gives each its typed
parameter model, built here and nowhere else from the resolved configuration
and the task (or robot profile): ``bridge_params``, ``perception_params``,
``policy_params``, ``trainer_params`` and ``safety_spec`` are the one mapping
from config sections to node parameters. The CLI (composed or one process per
node), the launch files and the loops without ROS (``unilab_bringup.sim_loop``) all
start from these descriptions, so they cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import pathlib

from unilab_bridge.params import (BridgeNodeParams, LeggedDoubleParams, RobotDoubleParams,
                                  ScenarioParams)
from unilab_core import topics
from unilab_core.config import RunConfig
from unilab_core.graph import Graph, holds_joint_positions, NodeSpec, TaskInfo
from unilab_core.health import HealthParams
from unilab_core.robot_profile import namespaced, RobotProfile
from unilab_perception.layout import observation_layout
from unilab_perception.params import (BevSection, ImageSection, PerceptionNodeParams,
                                      PointCloudSection, SensorsSection)
from unilab_policy.action_map import resolve_action_map
from unilab_policy.envelope import joint_range
from unilab_policy.params import PolicyNodeParams, TrainerNodeParams
from unilab_safety.params import OutputSection, SafetySpec

BRIDGE = NodeSpec('bridge', 'unilab_bridge', 'bridge_node', 'unilab_bridge.bridge_node',
                  'BridgeNode')
PERCEPTION = NodeSpec('perception', 'unilab_perception', 'perception_node',
                      'unilab_perception.perception_node', 'PerceptionNode')
POLICY = NodeSpec('policy', 'unilab_policy', 'policy_node', 'unilab_policy.policy_node',
                  'PolicyNode')
TRAINER = NodeSpec('trainer', 'unilab_policy', 'trainer_node', 'unilab_policy.trainer_node',
                   'TrainerNode')
#: The deploy graph's watchdog: at least this many control periods without an action.
DEPLOY_WATCHDOG_PERIODS = 3

SAFETY = NodeSpec('safety', 'unilab_safety', 'safety_node', 'unilab_safety.safety_node',
                  'SafetyNode')


def bridge_params(cfg: RunConfig, run_dir: str | pathlib.Path) -> BridgeNodeParams:
    """Return the simulated bridge's parameters (sensors on when perception needs them)."""
    per = cfg.perception
    return BridgeNodeParams(
        run=cfg.run, num_envs=cfg.rollout.num_envs, run_dir=str(run_dir),
        # The observation needs every env's image: no rendering is a start-up error.
        camera_required=per.image,
        bridge=cfg.bridge.model_copy(update={
            'lidar': cfg.bridge.lidar or per.pointcloud, 'imu': cfg.bridge.imu or per.imu,
            'camera': cfg.bridge.camera or per.image}),
        disturbances=cfg.disturbances)


def perception_params(cfg: RunConfig, task: TaskInfo, num_envs: int) -> PerceptionNodeParams:
    """Return the perception node's parameters: the joint path plus the sensors configured."""
    per = cfg.perception
    obs_dim, _ = observation_layout(per, task.obs_dim)
    return PerceptionNodeParams(
        num_envs=num_envs, joint_names=list(task.joint_names),
        uses_joint_state=task.uses_joint_state, extras_dim=task.extras_dim, obs_dim=obs_dim,
        sensors=SensorsSection(pointcloud=per.pointcloud, imu=per.imu, image=per.image),
        image=ImageSection(feature_dim=per.image_feature_dim),
        bev=BevSection(feature_dim=per.bev_feature_dim, output=per.bev_output,
                       x_range=[-per.bev_range, per.bev_range],
                       y_range=[-per.bev_range, per.bev_range],
                       pillar_size=per.pillar_size),
        pointcloud=PointCloudSection(voxel_size=per.voxel_size))


def _network(cfg: RunConfig, task: TaskInfo) -> dict:
    """Return the fields that describe the network, shared by policy and trainer."""
    obs_dim, grid_input = observation_layout(cfg.perception, task.obs_dim)
    model = cfg.model.model_copy(update={'grid_input': grid_input}) if grid_input \
        else cfg.model
    model = resolve_action_map(model, task)
    if task.critic_only_extras:
        # The task's last extras columns: the critic's alone (models.ActorCritic).
        joints = 2 * len(task.joint_names) if task.uses_joint_state else 0
        offset = joints + task.extras_dim - task.critic_only_extras
        model = model.model_copy(update={'critic_only': [offset, task.critic_only_extras]})
    return {'obs_dim': obs_dim, 'act_dim': task.action_dim, 'run': cfg.run, 'model': model,
            'normalization': cfg.normalization, 'gpu': cfg.gpu}


def policy_params(cfg: RunConfig, task: TaskInfo, mode: str = 'on_policy',
                  num_envs: int | None = None, weights_file: str = '') -> PolicyNodeParams:
    """Return the policy node's parameters (``mode`` on_policy for training, deploy)."""
    rollout = cfg.rollout if num_envs is None else cfg.rollout.model_copy(
        update={'num_envs': num_envs})
    return PolicyNodeParams(
        **_network(cfg, task), mode=mode, rollout=rollout,
        # model.action_history: commands as the actuators take them (clipped to their
        # range), and at an episode start the held command (see unilab_policy.history).
        action_low=list(task.action_low), action_high=list(task.action_high),
        action_history_fill='joint_position' if holds_joint_positions(task) else 'zero',
        weights_file=weights_file)


def trainer_params(cfg: RunConfig, task: TaskInfo, run_dir: str | pathlib.Path,
                   resume: str = '') -> TrainerNodeParams:
    """Return the trainer node's parameters."""
    # The checkpoints carry the trained envelope: the range of the joint positions that
    # lead the observation (position-held joints), and the task's workspace.
    return TrainerNodeParams(**_network(cfg, task), run_dir=str(run_dir), resume=resume,
                             rollout=cfg.rollout, advantage=cfg.advantage,
                             policy_update=cfg.policy_update, logging=cfg.logging,
                             envelope_joints=len(task.joint_names)
                             if holds_joint_positions(task) else 0,
                             workspace=list(task.workspace),
                             workspace_frame=task.workspace_frame)


def safety_spec(cfg: RunConfig, task: TaskInfo, limits_file: str | pathlib.Path,
                num_envs: int, lockstep: bool, run_dir: str | pathlib.Path = '') -> SafetySpec:
    """Return the safety gate's spec: the ``safety`` section with the limits file in force."""
    return SafetySpec(joint_names=list(task.joint_names), interface=task.command_interface,
                      dt=task.control_dt, num_envs=num_envs, lockstep=lockstep,
                      run_dir=str(run_dir),
                      safety=cfg.safety.model_copy(
                          update={'joint_limits_file': str(limits_file)}))


def with_health(params: dict, cfg: RunConfig, hardware_id: str,
                namespace: str = '') -> dict:
    """
    Return ``params`` with each node's ``health``: the run's section, its hardware, its peers.

    The peers of a node are the other nodes of its graph, by fully qualified name.
    """
    ns = namespace.rstrip('/')
    return {name: p.model_copy(update={'health': HealthParams(
        **cfg.health.model_dump(), hardware_id=hardware_id,
        peers=[f'{ns}/{other}' for other in params if other != name])})
        for name, p in params.items()}


def training_graph(cfg: RunConfig, task: TaskInfo, run_dir: str | pathlib.Path,
                   limits_file: str | pathlib.Path, resume: str = '') -> Graph:
    """Return the training graph: bridge, perception, policy, trainer, safety (lock-step)."""
    n = cfg.rollout.num_envs
    params = {
        'bridge': bridge_params(cfg, run_dir),
        'perception': perception_params(cfg, task, n),
        'policy': policy_params(cfg, task),
        'trainer': trainer_params(cfg, task, run_dir, resume),
        # The bridge steps on 'command' batches only.
        'safety': safety_spec(cfg, task, limits_file, n, lockstep=True, run_dir=run_dir),
    }
    # The simulated robots: one hardware id per task; every node on the bridge's clock.
    params = with_health(params, cfg, f'sim/{task.name}')
    # Joint states and clock under the training graph's own names (topics.SIM_REMAPS): a
    # robot's nodes on the same domain never see simulated joints or time.
    return Graph('train', (BRIDGE, PERCEPTION, POLICY, TRAINER, SAFETY), params,
                 end_node='trainer', use_sim_time=True,
                 remappings={name: dict(topics.SIM_REMAPS) for name in params})


def deploy_graph(cfg: RunConfig, profile: RobotProfile, policy: PolicyNodeParams,
                 task: TaskInfo, weights: str | pathlib.Path, limits_file: str | pathlib.Path,
                 namespace: str = '', armed: bool = False,
                 run_dir: str | pathlib.Path = '', envelope: dict | None = None) -> Graph:
    """
    Return the deploy graph: perception, policy and safety for one robot, on its own topics.

    No simulator and no trainer: the robot's drivers (or the robot double) publish
    the joint states under the profile's names, the perception node makes one
    observation per control period with the task's inputs from standard topics,
    the policy acts deterministically with the trained weights and never waits,
    and the safety gate (wall clock, real-time loop) is the only path to the
    controller, armed or not at start.

    ``envelope`` is the model's trained envelope (``unilab_policy.envelope``): the
    gate narrows the position limits to its joint range plus
    ``safety.envelope_margin_rad``, and goals outside its workspace are refused
    (else the task's own workspace). The robot-only rules (tracking bound; the
    tool-speed limit for a reach task with a model) are on here, never in training.
    """
    def ns(topic: str) -> str:  # a robot's topic inside its namespace (a fleet on one graph)
        return namespaced(namespace, topic)

    ws = list((envelope or {}).get('workspace') or task.workspace)
    inputs = profile.task_inputs.model_copy(update={
        k: ns(getattr(profile.task_inputs, k))
        for k in ('goal_topic', 'cmd_vel_topic', 'odom_topic', 'estimate_topic')
        if getattr(profile.task_inputs, k)})
    per = perception_params(cfg, task, 1).model_copy(update={
        'joint_names': list(profile.joint_names), 'obs_dim': policy.obs_dim,
        'source': 'robot', 'control_rate_hz': profile.control_rate_hz,
        'model_file': profile.model_file, 'task_inputs': inputs, 'goal_workspace': ws,
        'rehearse_lead_ms': cfg.run.deploy_rehearse_lead_ms})
    if profile.imu_topic:
        per = per.model_copy(update={'imu': per.imu.model_copy(
            update={'topic': ns(profile.imu_topic)})})
    pol = policy.model_copy(update={
        'mode': 'deploy', 'weights_file': str(weights), 'runtime': cfg.run.deploy_runtime,
        'rollout': policy.rollout.model_copy(update={'num_envs': 1})})
    # A legged robot: the gate takes the policy's position targets; the supervisor behind
    # it drives the controller's interface (effort: the PD at the motor rate).
    legged = profile.legged
    if legged is not None:
        # Not yet for a legged robot: its gate's motor loop (a thread of this process, at
        # 500-1000 Hz) shares the GIL with the executor, and what a rehearsal per control
        # step costs that loop's deadlines is not measured.
        per = per.model_copy(update={'rehearse_lead_ms': 0.0})
    robot_task = dataclasses.replace(task, joint_names=tuple(profile.joint_names),
                                     control_dt=profile.control_dt,
                                     command_interface='position' if legged is not None
                                     else profile.command.interface)
    spec = safety_spec(cfg, robot_task, limits_file, 1, lockstep=False, run_dir=run_dir)
    # At one command per control period, a watchdog of one period would trip on jitter.
    watchdog = max(cfg.safety.watchdog_timeout_s, DEPLOY_WATCHDOG_PERIODS * profile.control_dt)
    joints = joint_range(envelope, cfg.safety.envelope_margin_rad)
    # The tool-speed limit needs a tool: a reach task's, on the profile's model.
    tool = profile.task_inputs.kind == 'reach' and bool(profile.model_file)
    spec = spec.model_copy(update={
        'robot_rules': True, 'envelope_low': joints[0] if joints else [],
        'envelope_high': joints[1] if joints else [],
        'tool_model_file': profile.model_file if tool else '',
        'tool_site': profile.task_inputs.tool_site if tool else '',
        'armed': armed, 'state_timeout_s': profile.joint_state_timeout_s,
        **({} if legged is None else {
            'legged_interface': profile.command.interface, 'legged': legged,
            'imu_topic': ns(profile.imu_topic), 'motor_model_file': profile.model_file,
            # PD targets lie away from the measured joints by design (tau / kp): the
            # tracking bound is an arm's rule; the supervisor bounds a legged robot.
            'robot_rules': False}),
        'output': OutputSection(type=profile.command.type, topic=ns(profile.command.topic),
                                stamp=profile.command.stamp,
                                joints=profile.controller_joints),
        'safety': spec.safety.model_copy(update={
            'watchdog_timeout_s': watchdog,
            'max_tool_speed_mps': cfg.safety.max_tool_speed_mps if tool else 0.0})})
    # The graph's own topics (absolute names) and the robot's joint states, per robot.
    own = {t: ns(t) for t in (topics.OBSERVATION, topics.ACTION, topics.WEIGHTS,
                              topics.SAFE_COMMAND, topics.ROLLOUT)}
    remap = {**own, topics.JOINT_STATES: ns(profile.joint_states_topic)}
    params = with_health({'perception': per, 'policy': pol, 'safety': spec}, cfg,
                         f'robot/{profile.name}{namespace.rstrip("/")}', namespace)
    return Graph('deploy', (PERCEPTION, POLICY, SAFETY), params,
                 namespace=namespace, remappings={n: dict(remap) for n in (
                     'perception', 'policy', 'safety')})


# ---------------------------------------------------------------- robot side (robot double)
ROBOT_DOUBLE = NodeSpec('robot_double', 'unilab_bridge', 'robot_double_node',
                        'unilab_bridge.robot_double_node', 'RobotDoubleNode')
#: A legged robot (a profile with ``legged:``): its own 1 kHz simulation, not the task's.
LEGGED_DOUBLE = NodeSpec('legged_double', 'unilab_bridge', 'legged_double_node',
                         'unilab_bridge.legged_double_node', 'LeggedDoubleNode')
SCENARIO = NodeSpec('scenario', 'unilab_bridge', 'scenario_node',
                    'unilab_bridge.scenario_node', 'ScenarioNode')


def robot_sim_graph(double: RobotDoubleParams | LeggedDoubleParams,
                    scenario: ScenarioParams | None = None) -> Graph:
    """
    Return the robot side a deploy graph talks to: the robot double, optionally a scenario.

    A legged robot's double (``LeggedDoubleParams``) runs alone: no scenario scores it yet.

    The scenario shares the double's profile, fleet size and time scale; with it the
    graph ends when every goal is scored (``end_node='scenario'``).
    """
    if isinstance(double, LeggedDoubleParams):
        return Graph('robot_sim', (LEGGED_DOUBLE,), {'legged_double': double})
    params = {'robot_double': double}
    nodes = (ROBOT_DOUBLE,)
    if scenario is not None:
        params['scenario'] = scenario.model_copy(update={
            'profile': double.profile, 'robots': double.robots,
            'time_scale': double.time_scale})
        nodes += (SCENARIO,)
    return Graph('robot_sim', nodes, params, end_node='scenario' if scenario else '')
