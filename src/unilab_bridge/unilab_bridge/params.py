# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The bridge package's node parameters: one typed model per node (no ROS)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator
from unilab_bridge.variants import LEGGED_VARIANTS, VARIANTS
from unilab_core.config import BridgeSection, DisturbancesSection, RunSection, Section
from unilab_core.health import HealthParams


class BridgeNodeParams(Section):
    """Parameters of the bridge node (``unilab_bridge.bridge_node``)."""

    run: RunSection = Field(default_factory=RunSection)
    num_envs: int = Field(64, ge=1, le=65536, description='Simulated envs stepped together.')
    run_dir: str = Field('', description='Append finished episodes\' disturbance parameters '
                         'to <run_dir>/disturbances.jsonl ("" = do not).')
    camera_required: bool = Field(
        False, description='Images are part of the observation: no rendering is a start-up '
        'error instead of a warning.')
    bridge: BridgeSection = Field(default_factory=BridgeSection)
    disturbances: DisturbancesSection = Field(default_factory=DisturbancesSection)
    health: HealthParams = Field(default_factory=HealthParams)


class RobotDoubleParams(Section):
    """Parameters of the robot double (``unilab_bridge.robot_double_node``)."""

    profile: str = Field('', min_length=1, description='Robot profile YAML (the robot it '
                         'simulates: joints, topics, controller, task).')
    variant: Literal[tuple(VARIANTS)] = Field(
        'nominal', description='nominal: the model as is; real: the held-out dynamics and '
        'imperfections of `bench sim2real` (unilab_bridge.variants).')
    robots: int = Field(1, ge=1, le=64, description='Robots in the double; more than one: '
                        'robot k under the namespace /robot<k> (k from 0).')
    time_scale: float = Field(1.0, gt=0.0, le=100.0, description='Simulated seconds per '
                              'wall-clock second (physics and broadcaster run this much '
                              'faster).')
    seed: int = Field(0, ge=0, description='Seed of the start poses and of the variant.')
    joint_state_rate_hz: float = Field(
        0.0, ge=0.0, description='Broadcaster rate in simulated time (0 = the profile\'s '
        'joint_state_rate_hz).')
    max_lag_s: float = Field(
        0.1, gt=0.0, description='Simulated seconds the physics may fall behind the scaled '
        'clock; beyond, the double slows its clock (counted in slipped_s) instead of '
        'stepping in bursts.')
    publish_description: bool = Field(
        True, description='Publish the URDF on <ns>/robot_description (transient local).')
    stats_file: str = Field('', description='Write the counters as JSON here on exit '
                            '("" = do not).')
    latency_probe_cycles: int = Field(
        0, ge=0, description='bench deploy: 0 = off; N: one joint state per control period '
        '(deadline-scheduled, stamped with its schedule) instead of the broadcaster, the '
        'first command after each timed, for N cycles (unilab_bridge.latency_probe); then '
        'the node ends. One robot only.')
    latency_probe_file: str = Field('', description='bench deploy: where the probe writes '
                                    'its figures (JSON).')

    @model_validator(mode='after')
    def _probe_needs_a_file(self):
        if self.latency_probe_cycles and not self.latency_probe_file:
            raise ValueError('latency_probe_cycles needs latency_probe_file')
        if self.latency_probe_cycles and self.robots != 1:
            raise ValueError('latency_probe_cycles: the probe times one robot (robots: 1)')
        return self


class ScenarioParams(Section):
    """Parameters of the scenario node (``unilab_bridge.scenario_node``)."""

    profile: str = Field('', min_length=1, description='Robot profile YAML (task inputs: '
                         'goal topic, tool site, model).')
    robots: int = Field(1, ge=1, le=64, description='Robots to give goals to (namespaces as '
                        'the robot double\'s).')
    goals: int = Field(10, ge=1, description='Goals per robot; the node ends when all are '
                       'scored.')
    goal_timeout_s: float = Field(4.0, gt=0.0, description='Simulated seconds a goal may '
                                  'take (walk: how long each velocity goal is held).')
    tolerance_m: float = Field(0.05, gt=0.0, description='Reach: the tool within this '
                               'distance of the goal is a success.')
    speed_tolerance_mps: float = Field(0.1, gt=0.0, description='Walk: mean forward-speed '
                                       'error allowed over the goal\'s second half.')
    time_scale: float = Field(1.0, gt=0.0, le=100.0, description='As the robot double\'s: '
                              'simulated seconds per wall-clock second.')
    seed: int = Field(1, ge=0, description='Seed of the goal sampling.')
    results_file: str = Field('', description='Per-goal results JSON, rewritten atomically '
                              'after every goal ("" = do not write).')
    wait_for_subscribers: bool = Field(
        True, description='Publish the first goal only once every robot\'s goal topic has a '
        'subscriber (the deploy graph is up) and its joint states arrive.')


class LeggedDoubleParams(Section):
    """Parameters of the legged robot double (``unilab_bridge.legged_double_node``)."""

    profile: str = Field('', min_length=1, description='Robot profile YAML with a `legged:` '
                         'section (the robot it simulates).')
    variant: Literal[tuple(LEGGED_VARIANTS)] = Field(
        'nominal', description='nominal: the model as is, no latency; real: floor friction '
        '0.8, 5-20 ms command latency, motors at 95%, 1 kg payload; slippery: real on a '
        'floor of friction 0.3 (unilab_bridge.variants.LEGGED_VARIANTS).')
    seed: int = Field(0, ge=0, description='Seed of the latency draw.')
    start: Literal['lie', 'stand', 'tilt'] = Field(
        'lie', description='Start pose: lie (legged.lie_pose, at rest on the floor), stand '
        '(legged.stand_pose) or tilt (the stand pose rolled by tilt_rad, falling).')
    tilt_rad: float = Field(0.9, ge=-3.2, le=3.2, description='start: tilt: the trunk\'s '
                            'roll (rad).')
    latency_s: float = Field(-1.0, ge=-1.0, le=0.5, description='Command latency (s); -1 = '
                             'drawn from the variant\'s range with the seed.')
    friction: float = Field(0.0, ge=0.0, le=5.0, description='Floor friction; 0 = the '
                            'variant\'s.')
    kp: float = Field(-1.0, ge=-1.0, description='Position interface: the driver\'s PD '
                      'stiffness (N m/rad), declared in robot_description; -1 = legged.kp.')
    kd: float = Field(-1.0, ge=-1.0, description='Position interface: the driver\'s PD '
                      'damping (N m s/rad); -1 = legged.kd.')
    pushes: list[float] = Field(default_factory=list, description='Pushes on a timetable: '
                                'flat triples t_s, dvx, dvy (sim s, m/s world frame).')
    time_scale: float = Field(1.0, gt=0.0, le=10.0, description='Simulated seconds per '
                              'wall-clock second.')
    max_lag_s: float = Field(0.05, gt=0.0, description='Simulated seconds the physics may '
                             'fall behind the scaled clock; beyond, the clock slips '
                             '(slipped_s) instead of stepping in bursts.')
    joint_state_rate_hz: float = Field(0.0, ge=0.0, le=1000.0, description='JointState and '
                                       'Imu rate in simulated time (0 = the profile\'s '
                                       'joint_state_rate_hz).')
    odom_rate_hz: float = Field(100.0, gt=0.0, le=1000.0, description='Ground-truth '
                                'Odometry rate on /odom (simulated time).')
    publish_description: bool = Field(
        True, description='Publish the URDF with its <ros2_control> block on '
        'robot_description (transient local).')
    stats_file: str = Field('', description='Write the counters as JSON here on exit '
                            '("" = do not).')
