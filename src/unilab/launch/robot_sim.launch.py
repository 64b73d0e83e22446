# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``ros2 launch unilab robot_sim.launch.py``: the robot double on ros2_control's topics.

The real launch file is unilab_bringup's robot_sim.launch.py, included here so that the suite's own
package name starts it; ``ros2 launch unilab robot_sim.launch.py --show-args`` lists its
arguments, which pass through unchanged.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource

REAL = ('unilab_bringup', 'robot_sim.launch.py')


def generate_launch_description():
    """Return unilab_bringup's robot_sim.launch.py."""
    real = os.path.join(get_package_share_directory(REAL[0]), 'launch', REAL[1])
    return LaunchDescription([IncludeLaunchDescription(PythonLaunchDescriptionSource(real))])
