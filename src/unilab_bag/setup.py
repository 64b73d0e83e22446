# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Setuptools entry for the unilab_bag ROS 2 package."""

import os

from setuptools import find_packages, setup

PACKAGE = 'unilab_bag'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        (os.path.join('share', PACKAGE), ['package.xml']),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=True,
    maintainer='UniLab maintainers',
    maintainer_email='maintainers@unilab.dev',
    description='UniLab bag recording, replay, inspection and datasets.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'recorder_node = unilab_bag.entry_points:recorder_node',
        ],
    },
)
