# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Setuptools entry for the unilab_bench ROS 2 package."""

import os

from setuptools import find_packages, setup

PACKAGE = 'unilab_bench'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    package_data={PACKAGE: ['c/*.c']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        (os.path.join('share', PACKAGE), ['package.xml']),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=False,
    maintainer='UniLab maintainers',
    maintainer_email='maintainers@unilab.dev',
    description='UniLab benchmarks (unilab bench NAME).',
    license='Apache-2.0',
    entry_points={
        # The `bench` subcommand of the `unilab` CLI, found through this entry point:
        # the CLI package itself never imports the benchmarks.
        'unilab.commands': [
            'bench = unilab_bench.command:add_command',
        ],
    },
)
