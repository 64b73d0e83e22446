# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The perception node's parameters beyond the joint path: typed sections, validated at start.

Each section is declared as ROS parameters ``<section>.<field>`` with these
defaults (``unilab_core.ros.params.declare_params``), so a node parameter
YAML sets e.g. ``pointcloud: {voxel_size: 0.2}``; a bad value stops the node
with an error naming ``perception: parameter `pointcloud.voxel_size```.
Every extra sensor is off by default: the default graph's observation stays
``[q, qd, extras]``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator
from unilab_core import topics
from unilab_core.config import Section
from unilab_core.health import HealthParams
from unilab_core.robot_profile import TaskInputsSection

#: Point-cloud stages, applied in the order given in ``pointcloud.stages``.
STAGES = ('deskew', 'roi', 'voxel', 'statistical_outlier', 'radius_outlier')


class SensorsSection(Section):
    """Which sensors feed the observation (joint states and task state always do)."""

    pointcloud: bool = Field(False, description='Subscribe to sensor_msgs/PointCloud2 and add '
                             'pillar features [N, bev.feature_dim] to the observation.')
    imu: bool = Field(False, description='Subscribe to sensor_msgs/Imu and add angular '
                      'velocity + linear acceleration [N, 6], interpolated to the step stamp.')
    image: bool = Field(False, description='Subscribe to sensor_msgs/Image and add CNN '
                        'features [N, image.feature_dim] (one image per env and step).')


class PointCloudSection(Section):
    """Point-cloud ingest and CPU stages."""

    topic: str = Field(topics.POINTS, description='PointCloud2 topic (frame_id `env<i>/...` '
                       'names the env; without a prefix the cloud is env 0).')
    nonfinite: Literal['filter', 'drop'] = Field(
        'filter', description='NaN/Inf points: remove them, or drop the whole message.')
    stages: list[str] = Field(
        default_factory=lambda: ['roi', 'voxel', 'statistical_outlier'],
        description=f'Stages in order, from {list(STAGES)}.')
    roi_min: list[float] = Field(default_factory=lambda: [-10.0, -10.0, -3.0],
                                 description='ROI box lower corner (m, sensor frame).')
    roi_max: list[float] = Field(default_factory=lambda: [10.0, 10.0, 3.0],
                                 description='ROI box upper corner (m).')
    voxel_size: float = Field(0.1, gt=0.0, description='Voxel edge (m) for down-sampling.')
    sor_k: int = Field(20, ge=2, le=256, description='Statistical outlier removal: neighbours.')
    sor_std_ratio: float = Field(2.0, gt=0.0, description='Statistical outlier removal: '
                                 'keep mean k-NN distance < mean + ratio * std.')
    radius: float = Field(0.5, gt=0.0, description='Radius outlier removal: radius (m).')
    radius_min_neighbors: int = Field(2, ge=1, description='Radius outlier removal: '
                                      'other points needed within the radius.')

    @field_validator('stages')
    @classmethod
    def _known_stages(cls, v):
        unknown = [s for s in v if s not in STAGES]
        if unknown:
            raise ValueError(f'unknown stage(s) {unknown}; known: {list(STAGES)}')
        return v

    @model_validator(mode='after')
    def _roi_box(self):
        if len(self.roi_min) != 3 or len(self.roi_max) != 3:
            raise ValueError('pointcloud.roi_min and pointcloud.roi_max need 3 values')
        if any(lo >= hi for lo, hi in zip(self.roi_min, self.roi_max)):
            raise ValueError(f'pointcloud.roi_min {self.roi_min} must be below '
                             f'pointcloud.roi_max {self.roi_max} on every axis')
        return self


class BevSection(Section):
    """Pillar encoder grid and widths."""

    x_range: list[float] = Field(default_factory=lambda: [-10.0, 10.0],
                                 description='BEV grid x range (m).')
    y_range: list[float] = Field(default_factory=lambda: [-10.0, 10.0],
                                 description='BEV grid y range (m).')
    pillar_size: float = Field(0.5, gt=0.0, description='Pillar edge (m).')
    channels: int = Field(16, ge=1, le=512, description='Pillar feature channels.')
    feature_dim: int = Field(32, ge=1, le=4096, description='Cloud features per env '
                             '(bev.output `features`).')
    output: Literal['features', 'height_map'] = Field(
        'features', description='`features`: the pillar encoder\'s [N, feature_dim]; '
        '`height_map`: the grid itself, [N, 2 * H * W] laid out [occupancy, max z] x H x W '
        '(the policy learns on it).')

    @model_validator(mode='after')
    def _ranges(self):
        for name in ('x_range', 'y_range'):
            r = getattr(self, name)
            if len(r) != 2 or r[0] >= r[1]:
                raise ValueError(f'bev.{name} must be [low, high] with low < high, got {r}')
            if (r[1] - r[0]) / self.pillar_size > 2048:
                raise ValueError(f'bev.{name} / bev.pillar_size gives more than 2048 cells')
        return self


class SyncSection(Section):
    """Time alignment of the extra sensors to the control step's stamp."""

    slop_s: float = Field(0.05, ge=0.0, description='Largest stamp difference matched.')
    policy: Literal['reorder', 'drop'] = Field(
        'reorder', description='Out-of-order messages: re-order within window_s, or drop.')
    window_s: float = Field(0.2, ge=0.0, description='Re-ordering window.')
    max_latency_s: float = Field(0.0, ge=0.0, description='Drop messages older than this on '
                                 'arrival (0 = off; in simulation stamps are sim time).')
    substitute_rejected: bool = Field(
        False, description='When a step\'s own sensor message was rejected as invalid, serve '
        'the step from the nearest valid message within slop_s (counted as `substituted`). '
        'Off: the step waits for a valid message of its own (a re-sent state brings one) '
        'and is counted as `withheld`.')


class ImuSection(Section):
    """IMU ingest."""

    topic: str = Field(topics.IMU, description='Imu topic (frame_id `env<i>/...` names the env).')


class ImageSection(Section):
    """Image ingest, CPU stages (undistortion, ROI crop) and the CNN encoder."""

    topic: str = Field(topics.IMAGE, description='Image topic (frame_id `env<i>/...` names '
                       'the env).')
    channels: int = Field(3, ge=1, le=4, description='Channels the encoder takes; an image '
                          'with another channel count is dropped as invalid.')
    width: int = Field(64, ge=1, le=8192, description='Expected image width (px); others '
                       'are dropped as invalid.')
    height: int = Field(48, ge=1, le=8192, description='Expected image height (px).')
    roi: list[int] = Field(default_factory=list, description='Crop [x, y, width, height] '
                           'after undistortion; empty = the whole image.')
    camera_k: list[float] = Field(default_factory=list, description='Camera matrix (9 values, '
                                  'row-major, as CameraInfo.k); empty = no undistortion.')
    camera_d: list[float] = Field(default_factory=list, description='plumb_bob distortion '
                                  '[k1, k2, p1, p2, k3] (as CameraInfo.d).')
    feature_dim: int = Field(32, ge=1, le=4096, description='Image features per env.')

    @model_validator(mode='after')
    def _geometry(self):
        if self.roi:
            if len(self.roi) != 4:
                raise ValueError(f'image.roi must be [x, y, width, height], got {self.roi}')
            x, y, w, h = self.roi
            if x < 0 or y < 0 or w <= 0 or h <= 0 or x + w > self.width or y + h > self.height:
                raise ValueError(f'image.roi {self.roi} leaves the {self.width}x{self.height} '
                                 'image')
        if self.camera_k and len(self.camera_k) != 9:
            raise ValueError(f'image.camera_k needs 9 values, got {len(self.camera_k)}')
        if len(self.camera_d) > 5:
            raise ValueError(f'image.camera_d takes at most 5 values, got {len(self.camera_d)}')
        if self.camera_d and not self.camera_k:
            raise ValueError('image.camera_d is set but image.camera_k is empty')
        return self


class EncoderSection(Section):
    """Torch side of the observation."""

    device: Literal['auto', 'cpu', 'cuda'] = Field(
        'auto', description='Device of the encoders (the one CPU/GPU switch).')
    seed: int = Field(0, ge=0, description='Seed of the encoder weights.')


class PerceptionNodeParams(Section):
    """Parameters of the perception node: the joint path plus the sections above."""

    num_envs: int = Field(1, ge=1, description='Envs (or robots) in one observation batch.')
    joint_names: list[str] = Field(
        default_factory=list, min_length=1,
        description='Joints of the observation, in the policy\'s order (JointState names: '
        '`env<i>/<joint>`, or the plain names for one robot).')
    uses_joint_state: bool = Field(
        True, description='The observation starts with [q, qd] of these joints.')
    extras_dim: int = Field(0, ge=0, description='Task extras per env (task_state `extras`).')
    obs_dim: int = Field(0, ge=0, description='Expected observation width (0 = not checked).')
    source: Literal['task_state', 'robot'] = Field(
        'task_state', description='task_state: extras from the simulator\'s task state '
        '(training, replay); robot: extras from standard messages (task_inputs) and one '
        'observation per control period of the joint states (deployment).')
    control_rate_hz: float = Field(
        0.0, ge=0.0, description='robot: observations per second, by joint-state stamps '
        '(0 = one per joint state).')
    rehearse_lead_ms: float = Field(
        0.0, ge=0.0, le=100.0, description='robot: run the composed chain\'s work (these task '
        'inputs, the policy\'s network, a shadow of the gate) on the last control step\'s '
        'input this long before '
        'the next is due, results thrown away, so the real pass runs warm '
        '(unilab_core.rehearsal; 0 = off; the deploy graph sets run.deploy_rehearse_lead_ms).')
    model_file: str = Field('', description='robot: MJCF model for forward kinematics '
                            '(reach task inputs).')
    task_inputs: TaskInputsSection = Field(default_factory=TaskInputsSection)
    goal_workspace: list[float] = Field(
        default_factory=list, description='robot: [xmin, ymin, zmin, xmax, ymax, zmax] (m, in '
        'task_inputs.goal_frame) goals must lie in (the trained task\'s workspace; [] = not '
        'checked).')
    sensors: SensorsSection = Field(default_factory=SensorsSection)
    pointcloud: PointCloudSection = Field(default_factory=PointCloudSection)
    bev: BevSection = Field(default_factory=BevSection)
    sync: SyncSection = Field(default_factory=SyncSection)
    imu: ImuSection = Field(default_factory=ImuSection)
    image: ImageSection = Field(default_factory=ImageSection)
    encoder: EncoderSection = Field(default_factory=EncoderSection)
    health: HealthParams = Field(default_factory=HealthParams)


SECTIONS = {'sensors': SensorsSection, 'pointcloud': PointCloudSection, 'bev': BevSection,
            'sync': SyncSection, 'imu': ImuSection, 'image': ImageSection,
            'encoder': EncoderSection}
