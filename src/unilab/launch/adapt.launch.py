# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``ros2 launch unilab adapt.launch.py``: deploy and adapt online behind the fuse.

The real launch file is unilab_adapt's adapt.launch.py, included here so that the suite's own
package name starts it; ``ros2 launch unilab adapt.launch.py --show-args`` lists its
arguments, which pass through unchanged.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource

REAL = ('unilab_adapt', 'adapt.launch.py')


def generate_launch_description():
    """Return unilab_adapt's adapt.launch.py."""
    real = os.path.join(get_package_share_directory(REAL[0]), 'launch', REAL[1])
    return LaunchDescription([IncludeLaunchDescription(PythonLaunchDescriptionSource(real))])
