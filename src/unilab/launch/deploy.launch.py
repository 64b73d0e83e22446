# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``ros2 launch unilab deploy.launch.py``: a trained policy on a ROS 2 robot, behind the gate.

The real launch file is unilab_bringup's deploy.launch.py, included here so that the suite's own
package name starts it; ``ros2 launch unilab deploy.launch.py --show-args`` lists its
arguments, which pass through unchanged.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource

REAL = ('unilab_bringup', 'deploy.launch.py')


def generate_launch_description():
    """Return unilab_bringup's deploy.launch.py."""
    real = os.path.join(get_package_share_directory(REAL[0]), 'launch', REAL[1])
    return LaunchDescription([IncludeLaunchDescription(PythonLaunchDescriptionSource(real))])
