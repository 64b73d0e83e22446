# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Setuptools entry for the unilab_bridge ROS 2 package."""

import os

from setuptools import find_packages, setup

PACKAGE = 'unilab_bridge'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    package_data={PACKAGE: ['assets/*.xml']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        (os.path.join('share', PACKAGE), ['package.xml']),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=True,
    maintainer='UniLab maintainers',
    maintainer_email='maintainers@unilab.dev',
    description='UniLab batched MuJoCo bridge.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'bridge_node = unilab_bridge.entry_points:bridge_node',
            'legged_double_node = unilab_bridge.entry_points:legged_double_node',
            'robot_double_node = unilab_bridge.entry_points:robot_double_node',
            'scenario_node = unilab_bridge.entry_points:scenario_node',
        ],
    },
)
