# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: the ``device`` parametrisation (CUDA cases skip without a GPU)."""

import pytest
import torch
from unilab_core.testing import isolate_ros_domain

# Before any rclpy.init: a private ROS domain, so a training run left going (domain 0)
# or another package's tests cannot see this process's topics.
isolate_ros_domain()

from unilab_core.pytest_fixtures import fresh_context  # noqa: E402,F401,I100

# The test tensors are tiny; intra-op threads only add contention on shared CI machines
# (a 32x32 MLP backward went from ~3 ms to ~100 ms with 2 threads under load).
torch.set_num_threads(1)

DEVICES = [
    'cpu',
    pytest.param('cuda', marks=pytest.mark.skipif(not torch.cuda.is_available(),
                                                  reason='no CUDA')),
]


@pytest.fixture(params=DEVICES)
def device(request):
    """Yield each available torch device."""
    return torch.device(request.param)
