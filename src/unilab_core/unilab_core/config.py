# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Typed, validated run configuration (``unilab_config.yaml`` + ``ppo_unilab.yaml``).

Every section is a pydantic model with a description and a default per field.
Files are merged in order (later files override earlier ones) and validated
after each merge, so an error names the file that introduced it and the key
(``policy_update.lr``). Unknown keys are errors, never silently ignored.
"""

from __future__ import annotations

import functools
import math
import pathlib
from typing import Any, Literal

from pydantic import (BaseModel, ConfigDict, create_model, Field, field_validator, model_validator,
                      ValidationError)
from unilab_core.atomic import atomic_write_text
from unilab_core.errors import yaml_error
import yaml


class ConfigError(ValueError):
    """A configuration file or value is wrong; the message names file and key."""


class Section(BaseModel):
    """Base of every typed config section: unknown keys, NaN and Inf are errors."""

    # NaN and Inf are never a setting (`lr: .nan` would pass `gt=0` checks by accident).
    model_config = ConfigDict(extra='forbid', validate_assignment=True, allow_inf_nan=False)


#: The former private name, kept for code written against it.
_Section = Section


def nested_section(field) -> type[Section] | None:
    """Return the section model of a pydantic field that holds a nested section, else None."""
    ann = field.annotation
    return ann if isinstance(ann, type) and issubclass(ann, Section) else None


# --------------------------------------------------------------------------
# unilab_config.yaml
# --------------------------------------------------------------------------
class RunSection(Section):
    """What to train and for how long."""

    task: str = Field('arm6_reach', description='Task name (ours or a gymnasium MuJoCo id).')
    total_steps: int = Field(1_500_000, gt=0, description='Environment steps to train for.')
    seed: int = Field(0, ge=0, description='Seed for simulation, policy and trainer.')
    device: Literal['auto', 'cpu', 'cuda'] = Field(
        'auto', description='Torch device: auto = CUDA when present, else CPU.')
    process_mode: Literal['composed', 'multiprocess'] = Field(
        'composed', description='All nodes in one process (one executor) or one per node.')
    torch_threads: int = Field(
        1, ge=1, le=256, description='torch intra-op threads on CPU (small MLPs lose time to '
        'thread hand-off on 2 cores; raise on big machines).')
    deploy_runtime: Literal['auto', 'torch', 'onnx'] = Field(
        'auto', description='How a policy deployed on a robot (`unilab deploy`) runs its '
        'network: onnx = exported in memory at start and run through onnxruntime (one C++ '
        'call per step, 0.4-0.5 ms less per cycle on a CPU); torch = the checkpoint\'s network '
        'in torch; auto = onnx on a CPU, torch on CUDA. Adaptation acts in torch.')
    deploy_rehearse_lead_ms: float = Field(
        4.0, ge=0.0, le=100.0, description='`unilab deploy`\'s chain (task inputs, network, a '
        'shadow of the gate) runs once on the last joint state this long before the next '
        'control step is due, '
        'its results thrown away, so the real pass finds caches warm (docs/deploy.md); not '
        'for inputs faster than twice this, legged robots or `unilab adapt`; 0 = off.')
    executor: Literal['events', 'single_threaded'] = Field(
        'events', description='rclpy executor for composed mode (EventsExecutor is ~8x '
        'faster per round trip on these machines).')


class TransportSection(Section):
    """How tensor topics cross process boundaries (docs/transport.md)."""

    backend: Literal['ring', 'iceoryx2'] = Field(
        'ring', description='Cross-process backend of every tensor publisher: `ring` (UniLab\'s '
        'shared-memory ring, futex wake-ups) or `iceoryx2` (one iceoryx2 service per topic). '
        'Subscribers follow the publisher\'s choice; in-process and plain-ROS paths are the '
        'same for both. Started processes get it as UNILAB_TRANSPORT_BACKEND.')


class GpuSection(Section):
    """CUDA settings; ignored (with a log line) on CPU."""

    memory_pool_ratio: float = Field(
        0.7, gt=0.0, le=1.0, description='Share of device memory reserved at start.')
    graph_capture: bool = Field(True, description='Capture the policy forward in a CUDA graph.')
    unified_memory: bool = Field(True, description='Prefer unified (managed) host/device memory.')


class BridgeSection(Section):
    """Simulation bridge settings."""

    state_timeout_s: float = Field(
        1.0, gt=0.0, description='Re-publish the current state if no command arrives within '
        'this time (recovers from a lost message; consumers de-duplicate by seq).')
    publish_clock: bool = Field(True, description='Publish /clock with simulated time.')
    imu: bool = Field(False, description='Publish sensor_msgs/Imu on /imu (one message per env, '
                      'frame `env<i>/imu`) from the model\'s gyro/accelerometer sensors.')
    lidar: bool = Field(False, description='Publish a Velodyne-style sensor_msgs/PointCloud2 on '
                        '/points (one message per env, frame `env<i>/lidar`) by ray casting.')
    lidar_channels: int = Field(16, ge=1, le=128, description='Lidar rings (vertical beams).')
    lidar_horizontal_samples: int = Field(
        360, ge=1, le=4096, description='Lidar rays per ring over 360 degrees.')
    lidar_range_m: float = Field(20.0, gt=0.0, description='Lidar maximum range.')
    sensor_envs: int = Field(
        0, ge=0, description='Publish /imu and /points for the first K envs only (0 = all).')
    camera: bool = Field(False, description='Publish sensor_msgs/Image (needs EGL/OSMesa; off '
                         'with a log line where rendering is unavailable).')


class ImuNoiseSection(Section):
    """IMU noise, Kalibr model: white noise density + bias random walk, per axis."""

    enabled: bool = Field(True, description='Inject IMU noise.')
    gyro_noise_density: float = Field(
        0.005, ge=0.0, description='Gyro white noise [rad/s/sqrt(Hz)] (Kalibr example IMU).')
    gyro_random_walk: float = Field(
        4e-6, ge=0.0, description='Gyro bias random walk [rad/s^2/sqrt(Hz)].')
    accel_noise_density: float = Field(
        0.01, ge=0.0, description='Accelerometer white noise [m/s^2/sqrt(Hz)].')
    accel_random_walk: float = Field(
        2e-4, ge=0.0, description='Accelerometer bias random walk [m/s^3/sqrt(Hz)].')


def _check_range(value: list) -> list:
    """Validate a ``[lo, hi]`` range: non-negative and ordered."""
    if value[0] < 0 or value[1] < value[0]:
        raise ValueError(f'must be [lo, hi] with 0 <= lo <= hi, got {value}')
    return value


class EncoderNoiseSection(Section):
    """Joint encoder noise and a constant per-episode offset."""

    enabled: bool = Field(True, description='Inject encoder noise and offsets.')
    position_noise: float = Field(0.01, ge=0.0, description='Position noise std [rad].')
    velocity_noise: float = Field(0.15, ge=0.0, description='Velocity noise std [rad/s].')
    position_offset: float = Field(
        0.005, ge=0.0, description='Per-episode offset, uniform in +-value [rad].')


class ActuatorSection(Section):
    """Actuator/bus delay with jitter and PD gain scaling."""

    _ranges = field_validator('delay_steps', 'kp_scale', 'kd_scale')(_check_range)

    enabled: bool = Field(True, description='Inject actuator delay and gain scaling.')
    delay_steps: list[int] = Field(
        default_factory=lambda: [0, 1], min_length=2, max_length=2,
        description='Per-episode command delay, uniform integer in [lo, hi] control steps.')
    jitter_prob: float = Field(
        0.0, ge=0.0, le=1.0, description='Chance a command is late by 1..jitter_steps more.')
    jitter_steps: int = Field(1, ge=0, le=16, description='Largest extra delay from jitter.')
    kp_scale: list[float] = Field(
        default_factory=lambda: [0.9, 1.1], min_length=2, max_length=2,
        description='Per-episode scale of position-servo stiffness kp.')
    kd_scale: list[float] = Field(
        default_factory=lambda: [0.9, 1.1], min_length=2, max_length=2,
        description='Per-episode scale of position-servo damping kv.')


class NetworkSection(Section):
    """Packet loss and delay between robot and controller."""

    _ranges = field_validator('observation_delay_steps')(_check_range)

    enabled: bool = Field(True, description='Inject packet loss / observation delay.')
    action_drop_prob: float = Field(
        0.0, ge=0.0, le=1.0, description='Chance a command packet is lost (last one held).')
    observation_drop_prob: float = Field(
        0.0, ge=0.0, le=1.0, description='Chance a state packet is lost (last one held).')
    observation_delay_steps: list[int] = Field(
        default_factory=lambda: [0, 2], min_length=2, max_length=2,
        description='Per-episode observation delay, uniform integer in [lo, hi] steps.')


class DynamicsSection(Section):
    """Dynamics randomisation per episode, and pushes."""

    _ranges = field_validator('mass_scale', 'friction_scale', 'damping_scale')(_check_range)

    enabled: bool = Field(True, description='Randomise dynamics and push.')
    mass_scale: list[float] = Field(
        default_factory=lambda: [0.9, 1.1], min_length=2, max_length=2,
        description='Per-body mass (and inertia) scale.')
    friction_scale: list[float] = Field(
        default_factory=lambda: [0.5, 1.25], min_length=2, max_length=2,
        description='Scale of every geom\'s sliding friction.')
    damping_scale: list[float] = Field(
        default_factory=lambda: [0.9, 1.1], min_length=2, max_length=2,
        description='Scale of joint damping.')
    push_interval_s: float = Field(
        15.0, ge=0.0, description='Push every N seconds of an episode (0 = never).')
    push_velocity: float = Field(
        1.0, ge=0.0, description='Largest push: base xy velocity [m/s] (fixed base: joint '
        'velocity [rad/s]).')


class CameraBlurSection(Section):
    """Camera motion blur along the image-plane motion implied by the IMU angular rate."""

    enabled: bool = Field(True, description='Blur camera images (when a camera is on).')
    exposure_s: float = Field(0.01, ge=0.0, le=1.0, description='Exposure time [s].')


class DisturbancesSection(Section):
    """Sim-to-real disturbance injection in the bridge (master switch + one block per term)."""

    enabled: bool = Field(False, description='Master switch; off keeps the bridge noise-free.')
    imu: ImuNoiseSection = Field(default_factory=ImuNoiseSection)
    encoder: EncoderNoiseSection = Field(default_factory=EncoderNoiseSection)
    actuator: ActuatorSection = Field(default_factory=ActuatorSection)
    network: NetworkSection = Field(default_factory=NetworkSection)
    dynamics: DynamicsSection = Field(default_factory=DynamicsSection)
    camera: CameraBlurSection = Field(default_factory=CameraBlurSection)


class SafetySection(Section):
    """Safety gate settings."""

    joint_limits_file: str = Field(
        '', description='ros2_control joint_limits YAML; empty = the task\'s own limits '
        '(config/robots/<robot>_joint_limits.yaml or derived from the model).')
    allow_unlimited_joints: bool = Field(
        False, description='Accept joints without any limit (otherwise a start-up error).')
    max_delta: float = Field(
        0.0, ge=0.0, description='Per-step command change clamp (0 = off).')
    fallback: Literal['hold', 'zero'] = Field(
        'hold', description='Command sent for a rejected (NaN/Inf) action row.')
    diagnostics_period_s: float = Field(1.0, gt=0.0, description='Period of /diagnostics.')
    rate_hz: float = Field(
        1000.0, gt=0.0, le=20000.0, description='Rate of the real-time safety loop.')
    watchdog_timeout_s: float = Field(
        0.02, gt=0.0, description='Fallback when no fresh action arrives within this time.')
    jitter_allowance: float = Field(
        0.25, ge=0.0, le=1.0, description='Robot: the change limits are per control step of '
        'time; an action may come this share of a step early without losing slew when an '
        'earlier one was late (at most 1 + this many steps of motion in a burst).')
    watchdog_fallback: Literal['hold', 'zero', 'estop'] = Field(
        'hold', description='Watchdog output: hold, zero (velocity/effort) or estop '
        '(latches until the ~/reset_estop service is called).')
    rt_priority: int = Field(
        80, ge=0, le=99, description='SCHED_FIFO priority of the loop thread (0 = do not ask).')
    cpu_affinity: list[int] = Field(
        default_factory=list, description='CPUs the loop thread is pinned to ([] = any).')
    mlockall: bool = Field(True, description='Lock the process memory (mlockall) at start.')
    busy_wait_us: float = Field(
        0.0, ge=0.0, description='Busy-wait this long before each deadline (< one period).')
    gil_switch_us: float = Field(
        0.0, ge=0.0, le=5000.0, description='A legged robot\'s motor-rate loop, a thread of '
        'the node\'s process: the process\'s GIL switch interval (us), how long a Python '
        'thread busy with callbacks keeps the interpreter once the loop has woken. Lower '
        'trades the gate\'s action latency for the loop\'s period (0: CPython\'s 5000).')
    workspace_box: list[float] = Field(
        default_factory=list, description='[xmin, ymin, zmin, xmax, ymax, zmax] in m for the '
        'look-ahead ([] = off; needs workspace_model_file).')
    workspace_model_file: str = Field(
        '', description='MJCF model for the look-ahead forward kinematics.')
    lookahead_s: float = Field(
        0.1, ge=0.0, description='Look-ahead horizon (ceil(lookahead_s / dt) control steps).')
    lookahead_model: Literal['velocity', 'acceleration'] = Field(
        'velocity', description='Look-ahead extrapolation: constant velocity or acceleration.')
    lookahead_joint_limits: bool = Field(
        False, description='Look ahead for joint position limits too without a workspace box '
        '(with a box they are always checked).')
    rt_mode: Literal['auto', 'process', 'thread', 'inline'] = Field(
        'auto', description='Where the gate and its loop run: `process`: the loop in its '
        'own process (own GIL); `thread`: a thread of the safety node; `inline`: each '
        'action gated on the thread that delivers it, the loop thread runs the watchdog '
        '(lowest latency); `auto`: inline (lock-step simulation and robots).')
    envelope_margin_rad: float = Field(
        0.1, ge=0.0, description='Robot: margin added on each side of the joint range the '
        'policy saw in training (the model carries it) before the gate narrows the driver\'s '
        'position limits to it.')
    max_tracking_error_rad: float = Field(
        0.15, gt=0.0, description='Robot: a command may lead the measured joint position by '
        'at most this much (below the trajectory controller\'s path tolerance, about 0.2 '
        'rad on a UR); it is pulled back to it.')
    tracking_hold_cycles: int = Field(
        25, ge=0, description='Robot: a row pulled back by the tracking bound this many '
        'commands in a row is held until the robot catches up (0 = never hold).')
    max_tool_speed_mps: float = Field(
        1.0, ge=0.0, description='Robot: tool speed limit (m/s) by forward kinematics of the '
        'profile\'s model; the joint step is scaled down to meet it (0 = off; UR\'s own '
        'default limit is 1.5).')
    pid_kp: list[float] = Field(
        default_factory=list, description='PID compensation P gain per joint (1 or J values; '
        'all pid_k* empty = off).')
    pid_ki: list[float] = Field(default_factory=list, description='PID I gain per joint.')
    pid_kd: list[float] = Field(default_factory=list, description='PID D gain per joint.')
    pid_i_max: list[float] = Field(
        default_factory=list, description='PID integral clamp per joint ([] = none).')

    @field_validator('pid_kp', 'pid_ki', 'pid_kd', 'pid_i_max')
    @classmethod
    def _gains(cls, v):
        if any(not math.isfinite(g) or g < 0 for g in v):
            raise ValueError(f'must be finite gains >= 0, got {v}')
        return v

    @field_validator('cpu_affinity')
    @classmethod
    def _cpus(cls, v):
        if any(c < 0 for c in v) or len(set(v)) != len(v):
            raise ValueError(f'must be distinct CPU numbers >= 0, got {v}')
        return v

    @field_validator('busy_wait_us')
    @classmethod
    def _busy(cls, v, info):
        rate = info.data.get('rate_hz')
        if rate and v >= 1e6 / rate:
            raise ValueError(f'must be shorter than one period ({1e6 / rate:g} us), got {v}')
        return v

    @field_validator('workspace_box')
    @classmethod
    def _box(cls, v):
        if v and (len(v) != 6 or not all(a < b for a, b in zip(v[:3], v[3:]))):
            raise ValueError(f'must be [] or [xmin, ymin, zmin, xmax, ymax, zmax] with '
                             f'min < max, got {v}')
        return v


def bev_cells(bev_range: float, pillar_size: float) -> int:
    """Return the cells along one side of the square BEV grid (as the perception node)."""
    return int(round(2.0 * bev_range / pillar_size))


class PerceptionSection(Section):
    """Extra sensors in the policy observation (joint states and task state always)."""

    pointcloud: bool = Field(
        False, description='Lidar point cloud (bridge ray casting) -> pillar/BEV features.')
    imu: bool = Field(False, description='IMU gyro + accelerometer (6 values per env).')
    bev_feature_dim: int = Field(32, ge=1, le=4096, description='Cloud features per env.')
    voxel_size: float = Field(0.1, gt=0.0, description='Voxel-grid down-sampling edge (m).')
    image: bool = Field(False, description='Camera image (bridge EGL rendering, 64x48 RGB) '
                        '-> CNN features; slow on a CPU renderer (about 75 ms per frame).')
    image_feature_dim: int = Field(32, ge=1, le=4096, description='Image features per env.')
    bev_output: Literal['features', 'height_map'] = Field(
        'features', description='What the cloud adds to the observation: `features` (the '
        'perception node\'s pillar encoder, bev_feature_dim per env) or `height_map` (the '
        'BEV grid itself, [occupancy, max height] per pillar; the policy learns a CNN on it).')
    bev_range: float = Field(10.0, gt=0.0, le=200.0,
                             description='Half-width of the square BEV grid (m).')
    pillar_size: float = Field(0.5, gt=0.0, description='Pillar edge of the BEV grid (m).')

    @model_validator(mode='after')
    def _grid_size(self):
        n = bev_cells(self.bev_range, self.pillar_size)
        if n < 1 or (self.bev_output == 'height_map' and 2 * n * n > 65536):
            raise ValueError(f'perception.bev_range {self.bev_range} / pillar_size '
                             f'{self.pillar_size} gives a {n} x {n} grid; the height map takes '
                             '1 to 181 cells per side (2 * H * W <= 65536 observation columns)')
        return self


class HealthSection(Section):
    """When a node's ``/diagnostics`` status turns WARN or ERROR (docs/operations.md)."""

    period_s: float = Field(
        1.0, gt=0.0, description='Period of every node\'s /diagnostics status (the safety '
        'node keeps safety.diagnostics_period_s); shares are taken over one period.')
    clamp_share_warn: float = Field(
        0.2, ge=0.0, le=1.0, description='WARN when more than this share of the period\'s '
        'action rows was clamped by the safety gate.')
    reject_share_warn: float = Field(
        0.0, ge=0.0, le=1.0, description='WARN when more than this share of the action rows '
        'was rejected (NaN/Inf, bad shape; 0 = any).')
    fallback_share_warn: float = Field(
        0.05, ge=0.0, le=1.0, description='WARN when more than this share of the safety '
        'outputs were watchdog fallbacks (no fresh action in time).')
    deadline_miss_share_warn: float = Field(
        0.01, ge=0.0, le=1.0, description='WARN when more than this share of the safety '
        'loop\'s cycles missed their deadline.')
    drop_share_warn: float = Field(
        0.01, ge=0.0, le=1.0, description='WARN when more than this share of a node\'s '
        'messages was dropped (transport skips and errors, invalid input).')
    stale_share_warn: float = Field(
        0.05, ge=0.0, le=1.0, description='WARN when more than this share of a node\'s '
        'input was stale (old commands, old joint states, unmatched stamps).')
    peer_timeout_s: float = Field(
        30.0, gt=0.0, description='A peer node of the graph not on the graph yet is a WARN '
        'for this long after start, then an ERROR; one that has left it is an ERROR at once.')


class LoggingSection(Section):
    """Run directory outputs."""

    tensorboard: bool = Field(True, description='Write TensorBoard event files.')
    progress: bool = Field(True, description='Show a live progress display.')
    checkpoint_every: int = Field(20, gt=0, description='Checkpoint every K PPO updates.')


# --------------------------------------------------------------------------
# ppo_unilab.yaml
# --------------------------------------------------------------------------
class RolloutSection(Section):
    """Rollout collection."""

    num_envs: int = Field(64, gt=0, le=65536, description='Parallel environments.')
    rollout_length: int = Field(32, gt=0, description='Steps per env per PPO update (T).')
    chunk_length: int = Field(
        8, gt=0, description='Steps per rollout chunk sent from policy to trainer.')


class AdvantageSection(Section):
    """Generalised advantage estimation."""

    gamma: float = Field(0.99, gt=0.0, le=1.0, description='Discount factor.')
    gae_lambda: float = Field(0.95, ge=0.0, le=1.0, description='GAE lambda.')


class PolicyUpdateSection(Section):
    """PPO update."""

    batch_size: int = Field(512, gt=0, description=(
        'Minibatch size (transitions, over all ranks: each of K ranks takes 1/K).'))
    epochs: int = Field(5, gt=0, description='Passes over each rollout.')
    lr: float = Field(1e-3, gt=0.0, lt=1.0, description='Initial learning rate.')
    clip_param: float = Field(0.2, gt=0.0, lt=1.0, description='PPO ratio clip.')
    clipped_value_loss: bool = Field(
        True, description='Clip the value loss as rsl_rl does (+-clip_param in reward units; '
        'off in the gymnasium preset; charts/value_clip_fraction).')
    value_loss_coef: float = Field(1.0, ge=0.0, description='Value loss weight.')
    entropy_coef: float = Field(0.0, ge=0.0, description='Entropy bonus weight.')
    max_grad_norm: float = Field(1.0, gt=0.0, description='Global gradient-norm clip.')
    schedule: Literal['adaptive', 'fixed'] = Field(
        'adaptive', description='Learning-rate schedule (adaptive: from a KL target).')
    desired_kl: float = Field(0.01, gt=0.0, description='KL target of the adaptive schedule.')


class ModelSection(Section):
    """Actor-critic network."""

    hidden_sizes: list[int] = Field(
        default_factory=lambda: [128, 128], min_length=1, description='MLP widths.')
    activation: Literal['elu', 'relu', 'tanh', 'gelu'] = Field(
        'elu', description='Activation of the hidden layers.')
    init_noise_std: float = Field(0.5, gt=0.0, description='Initial action std.')
    action_history: int = Field(
        0, ge=0, le=16,
        description='The policy\'s last N actions appended to its observation, newest first '
                    '(at an episode start the held command: joint positions for position '
                    'control, else zeros): in-flight commands become part of the state, '
                    'which makes a policy robust to actuation delay. 0 = off.')
    action_mode: Literal['task', 'absolute', 'relative', 'offset'] = Field(
        'task', description='What the network\'s output means (docs/actions.md): '
        'absolute: the command itself (joint targets, efforts); relative: joint position '
        'targets around the measured joint positions, command = q + action_scale * action '
        '(position-controlled joints only); offset: targets around a fixed pose, command = '
        'action_offset + action_scale * action (legged_gym\'s default pose); task: the '
        'task\'s own choice.')
    action_scale: list[float] = Field(
        default_factory=list,
        description='relative: per-joint scale (rad per unit action), or one value for every '
                    'joint; [] = the task\'s (arm6_reach: 2 x the slew limit '
                    'max_velocity * control period).')
    action_offset: list[float] = Field(
        default_factory=list,
        description='offset: the pose (one value per joint) actions are around; [] = the '
                    'task\'s (quad_walk: its standing crouch).')
    action_clip: float = Field(
        -1.0, description='relative / offset: every action is clipped to +-this before the '
                          'map (a relative command then leads the measured joint by at most '
                          'action_clip * action_scale); 0 = no clip; -1 = the task\'s '
                          '(ur5e_reach: 1.5, arm6_reach: none).')
    grid_input: list[int] = Field(
        default_factory=list,
        description='[offset, channels, height, width] of a BEV grid inside the observation: '
                    'actor and critic learn a small CNN on it (set by the graph when '
                    '`perception.bev_output` is `height_map`; [] = MLP only).')
    grid_features: int = Field(32, ge=1, le=1024,
                               description='Features the grid CNN gives the MLP.')
    critic_only: list[int] = Field(
        default_factory=list,
        description='[offset, size] of observation columns only the critic reads '
                    '(privileged simulator state; set by the graph from the task\'s '
                    '`critic_only_extras`; [] = actor and critic read everything).')

    @field_validator('action_scale')
    @classmethod
    def _action_scale(cls, v):
        if any(not (math.isfinite(x) and x > 0.0) for x in v):
            raise ValueError(f'model.action_scale must be finite and > 0, got {v}')
        return v

    @field_validator('action_clip')
    @classmethod
    def _action_clip(cls, v):
        if not (v == -1.0 or (math.isfinite(v) and v >= 0.0)):
            raise ValueError(f'model.action_clip must be >= 0 (0: no clip) or -1 (the task\'s), '
                             f'got {v}')
        return v

    @field_validator('action_offset')
    @classmethod
    def _action_offset(cls, v):
        if any(not math.isfinite(x) for x in v):
            raise ValueError(f'model.action_offset must be finite, got {v}')
        return v

    @field_validator('critic_only')
    @classmethod
    def _critic_only(cls, v):
        if v and (len(v) != 2 or v[0] < 0 or v[1] < 1):
            raise ValueError(f'model.critic_only must be [] or [offset, size] with offset >= 0 '
                             f'and size >= 1, got {v}')
        return v

    @field_validator('grid_input')
    @classmethod
    def _grid_input(cls, v):
        if v and (len(v) != 4 or v[0] < 0 or min(v[1:]) < 1):
            raise ValueError('model.grid_input must be [] or [offset, channels, height, width] '
                             f'with offset >= 0 and sizes >= 1, got {v}')
        return v


class NormalizationSection(Section):
    """Observation normalisation and reward scaling."""

    observations: bool = Field(True, description='Running mean/std observation normaliser.')
    clip: float = Field(5.0, gt=0.0, description='Clip of normalised observations.')
    rewards: bool = Field(False, description=(
        'Divide rewards by the running std of the discounted return (SB3 VecNormalize).'))
    reward_clip: float = Field(10.0, gt=0.0, description='Clip of scaled rewards.')


class StressSection(Section):
    """Thresholds of ``unilab bench stress`` (docs/operations.md); exceeding any exits 1."""

    gpu_latency_ms: float = Field(
        5.0, gt=0.0, description='Largest policy inference p99 on a GPU (not measured on a '
        'CPU).')
    scheduling_latency_us: float = Field(
        10.0, gt=0.0, description='Largest wake-up latency of the 1 kHz cyclictest-style probe.')
    packet_loss: float = Field(
        0.0001, ge=0.0, le=1.0, description='Largest share of tensor messages lost on the '
        'reliable paths (the nodes\' transport counters).')
    latency_p99_ms: float = Field(
        10.0, gt=0.0, description='Largest p99 of joint-state stamp -> command arrival over '
        'all robots.')
    rss_growth_mb_per_min: float = Field(
        5.0, gt=0.0, description='Largest resident-memory slope of any process (a leak).')
    deadline_miss_share: float = Field(
        0.001, ge=0.0, le=1.0, description='Largest share of safety-loop cycles past their '
        'deadline, over all robots.')
    joint_state_rate_share: float = Field(
        0.95, ge=0.0, le=1.0, description='Smallest share of the nominal joint-state rate '
        '(best effort) a robot\'s safety node received.')


SECTIONS: dict[str, type[Section]] = {
    'run': RunSection, 'gpu': GpuSection, 'bridge': BridgeSection,
    'disturbances': DisturbancesSection,
    'safety': SafetySection, 'logging': LoggingSection, 'perception': PerceptionSection,
    'rollout': RolloutSection, 'advantage': AdvantageSection,
    'policy_update': PolicyUpdateSection, 'model': ModelSection,
    'normalization': NormalizationSection,
}


class RunConfig(Section):
    """The whole resolved configuration of one run."""

    run: RunSection = Field(default_factory=RunSection)
    gpu: GpuSection = Field(default_factory=GpuSection)
    transport: TransportSection = Field(default_factory=TransportSection)
    bridge: BridgeSection = Field(default_factory=BridgeSection)
    disturbances: DisturbancesSection = Field(default_factory=DisturbancesSection)
    safety: SafetySection = Field(default_factory=SafetySection)
    logging: LoggingSection = Field(default_factory=LoggingSection)
    perception: PerceptionSection = Field(default_factory=PerceptionSection)
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    advantage: AdvantageSection = Field(default_factory=AdvantageSection)
    policy_update: PolicyUpdateSection = Field(default_factory=PolicyUpdateSection)
    model: ModelSection = Field(default_factory=ModelSection)
    normalization: NormalizationSection = Field(default_factory=NormalizationSection)
    health: HealthSection = Field(default_factory=HealthSection)
    stress: StressSection = Field(default_factory=StressSection)

    def to_dict(self) -> dict[str, Any]:
        """Return plain data (for YAML dumps and node parameters)."""
        return self.model_dump(mode='python')


#: Entry-point group through which a feature package adds its own section to the run
#: configuration (``NAME = module:SectionClass`` in its setup.py), found at run time as
#: pluginlib finds plugins: the ground floor names no feature. The module is light (pydantic).
SECTION_ENTRY_POINTS = 'unilab.config_sections'


@functools.cache
def feature_sections() -> dict[str, type[Section]]:
    """Return the installed features' config sections (name -> model), sorted by name."""
    from importlib.metadata import entry_points
    found = {}
    for ep in sorted(entry_points(group=SECTION_ENTRY_POINTS), key=lambda e: e.name):
        model = ep.load()
        is_section = isinstance(model, type) and issubclass(model, Section)
        if ep.name in RunConfig.model_fields or not is_section:
            raise TypeError(f'config section entry point `{ep.name} = {ep.value}`: a '
                            'feature section must be a Section and not reuse a core name')
        found[ep.name] = model
    return found


@functools.cache
def run_config_model() -> type[RunConfig]:
    """Return RunConfig with the installed features' sections (``FullRunConfig``)."""
    fields = {name: (model, Field(default_factory=model))
              for name, model in feature_sections().items()}
    full = create_model('FullRunConfig', __base__=RunConfig, __module__=__name__, **fields)
    full.__doc__ = RunConfig.__doc__
    return full


def __getattr__(name: str):
    """Resolve ``FullRunConfig`` (pickled configs name it) once features are known."""
    if name == 'FullRunConfig':
        return run_config_model()
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')


def all_sections() -> dict[str, type[Section]]:
    """Return every top-level section: the core's, then the installed features'."""
    return {**SECTIONS, **feature_sections()}


def format_errors(err: ValidationError, source: str) -> str:
    lines = []
    for e in err.errors():
        key = '.'.join(str(p) for p in e['loc'])
        if e['type'] == 'extra_forbidden':
            msg = 'unknown key'
        else:
            msg = e['msg']
        lines.append(f'{source}: key `{key}`: {msg}')
    return '\n'.join(lines)


def _deep_merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _deep_merge(out[k], v)
        else:
            out[k] = v
    return out


class _UniqueKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (YAML keeps the last)."""

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.setdefault(key, key_node.start_mark.line + 1)
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if first != key_node.start_mark.line + 1:
                raise yaml.constructor.ConstructorError(
                    None, None, f'key `{key}` appears twice (lines {first} and '
                    f'{key_node.start_mark.line + 1}); the first would be ignored',
                    key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def read_yaml(path: str | pathlib.Path) -> dict:
    """Read a YAML mapping; errors name the file (and a key given twice)."""
    path = pathlib.Path(path)
    if not path.is_file():
        raise ConfigError(f'{path}: config file not found')
    try:
        data = yaml.load(path.read_text(), Loader=_UniqueKeyLoader) or {}  # noqa: S506
    except yaml.YAMLError as exc:
        raise ConfigError(yaml_error(path, exc)) from None
    except (UnicodeDecodeError, OSError, RecursionError) as exc:  # binary, unreadable, too deep
        raise ConfigError(f'{path}: not a readable YAML text file '
                          f'({type(exc).__name__}: {exc})') from None
    if not isinstance(data, dict):
        raise ConfigError(f'{path}: top level must be a mapping of sections')
    return data


def load_run_config(files: list[str | pathlib.Path] = (),
                    overrides: dict[str, Any] | None = None) -> RunConfig:
    """
    Merge YAML files (in order) and dotted overrides into a validated RunConfig.

    ``overrides`` maps dotted keys (``'rollout.num_envs'``) to values; they
    come from command-line flags and are validated like file keys.
    """
    model = run_config_model()
    merged: dict = {}
    cfg = model()
    for f in files:
        merged = _deep_merge(merged, read_yaml(f))
        try:
            cfg = model.model_validate(merged)
        except ValidationError as exc:
            raise ConfigError(format_errors(exc, str(f))) from None
    if overrides:
        for key, value in overrides.items():
            section, _, field = key.partition('.')
            merged.setdefault(section, {})
            if not isinstance(merged[section], dict):
                merged[section] = {}
            merged[section][field] = value
        try:
            cfg = model.model_validate(merged)
        except ValidationError as exc:
            raise ConfigError(format_errors(exc, 'command line')) from None
    return cfg


def dump_config(cfg: RunConfig, path: str | pathlib.Path) -> None:
    """Write the resolved config as YAML (atomic)."""
    atomic_write_text(path, yaml.safe_dump(cfg.to_dict(), sort_keys=False))


def describe_keys() -> list[tuple[str, str, Any]]:
    """List (dotted key, description, default) for documentation and `unilab config`."""
    rows = []
    todo = list(all_sections().items())
    while todo:
        name, model = todo.pop(0)
        for fname, field in model.model_fields.items():
            sub = nested_section(field)
            if sub is not None:
                todo.append((f'{name}.{fname}', sub))  # nested block
                continue
            default = field.default_factory() if field.default_factory else field.default
            rows.append((f'{name}.{fname}', field.description or '', default))
    return rows
