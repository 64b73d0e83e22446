# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The width and layout of the perception node's observation for a configuration (no ROS)."""

from __future__ import annotations

from unilab_core.config import bev_cells, PerceptionSection

#: Values the IMU adds per env: angular velocity and linear acceleration.
IMU_WIDTH = 6


def observation_layout(per: PerceptionSection, task_obs_dim: int) -> tuple[int, list[int]]:
    """
    Return ``(obs_dim, grid_input)`` of the observation for the ``perception`` section.

    Layout (the node's assembler): ``[q, qd, extras]``, imu (6), cloud, image.
    ``grid_input`` is ``[offset, 2, H, W]`` when the cloud part is the BEV
    height map (``perception.bev_output: height_map``), else ``[]``.
    """
    cloud, grid_input = 0, []
    if per.pointcloud:
        if per.bev_output == 'height_map':
            n = bev_cells(per.bev_range, per.pillar_size)
            cloud = 2 * n * n
            grid_input = [task_obs_dim + IMU_WIDTH * per.imu, 2, n, n]
        else:
            cloud = per.bev_feature_dim
    obs_dim = task_obs_dim + IMU_WIDTH * per.imu + cloud + per.image_feature_dim * per.image
    return obs_dim, grid_input
