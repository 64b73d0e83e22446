# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Setuptools entry for the unilab ROS 2 package."""

from glob import glob
import os

from setuptools import find_packages, setup

PACKAGE = 'unilab'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        (os.path.join('share', PACKAGE), ['package.xml']),
        # ros2 launch unilab <name>.launch.py: thin includes of unilab_bringup's / unilab_adapt's.
        (os.path.join('share', PACKAGE, 'launch'), glob('launch/*.launch.py')),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=True,
    maintainer='UniLab maintainers',
    maintainer_email='maintainers@unilab.dev',
    description='UniLab command line, export, play, plot, doctor, offline training.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'unilab = unilab.cli:main',
        ],
        # The `offline:` section of the run configuration (unilab_core.config.feature_sections).
        'unilab.config_sections': ['offline = unilab.offline_config:OfflineSection'],
    },
)
