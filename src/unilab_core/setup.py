# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Setuptools entry for the unilab_core ROS 2 package."""

import os

from setuptools import Extension, find_packages, setup

PACKAGE = 'unilab_core'

setup(
    name=PACKAGE,
    version='0.1.0',
    packages=find_packages(exclude=['test']),
    # A C11 full memory fence for the shared-memory ring (transport/ring_layout.py), as a
    # top-level module: the package's source directory on sys.path cannot shadow it.
    ext_modules=[Extension('unilab_fence', ['csrc/unilab_fence.c'],
                           extra_compile_args=['-std=c11', '-O2'])],
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + PACKAGE]),
        (os.path.join('share', PACKAGE), ['package.xml']),
    ],
    install_requires=['setuptools'],
    extras_require={'test': ['pytest']},
    zip_safe=False,
    maintainer='UniLab maintainers',
    maintainer_email='maintainers@unilab.dev',
    description='ROS-free shared code of UniLab.',
    license='Apache-2.0',
    entry_points={
        'console_scripts': [
        ],
    },
)
