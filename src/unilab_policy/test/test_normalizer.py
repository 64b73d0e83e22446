# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for ``EmpiricalNormalization``."""

import torch

from unilab_policy.normalizer import EmpiricalNormalization


def test_batched_update_matches_full_statistics(device):
    torch.manual_seed(0)
    data = torch.randn(1000, 3, dtype=torch.float64, device=device) * torch.tensor(
        [1.0, 5.0, 0.1], dtype=torch.float64, device=device) + 7.0
    norm = EmpiricalNormalization(3).to(device)
    for chunk in data.split([1, 9, 90, 400, 500]):
        norm.update(chunk.float())
    assert int(norm.count) == 1000
    torch.testing.assert_close(norm.mean.double(), data.mean(0), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(norm.var.double(), data.var(0, unbiased=False), rtol=1e-4,
                               atol=1e-6)


def test_hand_computed_and_clip():
    norm = EmpiricalNormalization(1, eps=0.0, clip=5.0)
    norm.update(torch.tensor([[1.0], [3.0]]))
    norm.update(torch.tensor([[5.0], [7.0]]))
    # Data {1, 3, 5, 7}: mean 4, population variance 5.
    assert norm.mean.item() == 4.0
    assert abs(norm.var.item() - 5.0) < 1e-6
    y = norm(torch.tensor([[4.0 + 5.0 ** 0.5], [1000.0], [-1000.0]]))
    torch.testing.assert_close(y, torch.tensor([[1.0], [5.0], [-5.0]]))


def test_frozen_and_until_and_state_dict():
    norm = EmpiricalNormalization(2, until=10)
    norm.update(torch.ones(10, 2))
    norm.update(torch.zeros(10, 2))  # ignored: reached `until`
    assert int(norm.count) == 10
    norm2 = EmpiricalNormalization(2)
    norm2.freeze()
    norm2.update(torch.ones(4, 2))
    assert int(norm2.count) == 0
    norm2.load_state_dict(norm.state_dict())
    torch.testing.assert_close(norm2.mean, torch.ones(2))
