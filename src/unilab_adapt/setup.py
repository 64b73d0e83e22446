# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Setuptools entry for the unilab_adapt ROS 2 package."""

from glob import glob
import os

from setuptools import find_packages, setup

PACKAGE = 'unilab_adapt'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        (os.path.join('share', PACKAGE), ['package.xml']),
        (os.path.join('share', PACKAGE, 'launch'), glob('launch/*.py')),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=True,
    maintainer='UniLab maintainers',
    maintainer_email='maintainers@unilab.dev',
    description='UniLab online adaptation: fine-tuning a deployed policy behind a fuse.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
            'adapter_node = unilab_adapt.entry_points:adapter_node',
        ],
        # The `adapt:` section of the run configuration (unilab_core.config.feature_sections).
        'unilab.config_sections': ['adapt = unilab_adapt.params:AdaptSection'],
    },
)
