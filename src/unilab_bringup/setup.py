# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Setuptools entry for the unilab_bringup ROS 2 package."""

from glob import glob
import os

from setuptools import find_packages, setup

PACKAGE = 'unilab_bringup'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        (os.path.join('share', PACKAGE), ['package.xml']),
        (os.path.join('share', PACKAGE, 'launch'), glob('launch/*.py')),
        (os.path.join('share', PACKAGE, 'config'), glob('config/*.yaml') + glob('config/*.xml')),
        (os.path.join('share', PACKAGE, 'config', 'robots'), glob('config/robots/*.yaml')),
        (os.path.join('share', PACKAGE, 'config', 'tasks'), glob('config/tasks/*.yaml')),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=True,
    maintainer='UniLab maintainers',
    maintainer_email='maintainers@unilab.dev',
    description='UniLab bringup: graphs, launch files, configuration, deploy and the loops.',
    license='Apache-2.0',
)
