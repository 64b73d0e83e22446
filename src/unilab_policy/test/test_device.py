# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for ``resolve_device``."""

import pytest
import torch

from unilab_policy.device import resolve_device


def test_auto_and_cpu():
    expected = 'cuda' if torch.cuda.is_available() else 'cpu'
    assert resolve_device().type == expected
    assert resolve_device('auto').type == expected
    assert resolve_device('cpu') == torch.device('cpu')
    assert resolve_device(' CPU ') == torch.device('cpu')


@pytest.mark.skipif(torch.cuda.is_available(), reason='needs a machine without CUDA')
def test_cuda_without_cuda_is_clear_error():
    with pytest.raises(ValueError, match='CUDA is not available'):
        resolve_device('cuda')
    with pytest.raises(ValueError, match='CUDA is not available'):
        resolve_device('cuda:0')


def test_unknown_name():
    with pytest.raises(ValueError, match='unknown device'):
        resolve_device('tpu-ish')
