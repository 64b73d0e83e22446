# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Torch encoders and the observation assembler."""

import numpy as np
import pytest
import torch
from unilab_perception.assembler import ObservationAssembler
from unilab_perception.encoders import (
    BevGrid, ImageEncoder, JointHistoryEncoder, pillar_height_map, pillar_index, PillarEncoder,
    resolve_device, scatter_max)
from unilab_perception.joint_obs import build_observation

DEVICES = ['cpu', pytest.param('cuda', marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason='no CUDA device'))]
GRID = BevGrid((0.0, 2.0), (0.0, 1.0), 0.5)  # H = 2, W = 4


def test_pillar_index_hand_computed():
    xyz = torch.tensor([[0.1, 0.1, 0], [1.9, 0.9, 0], [2.5, 0.1, 0], [0.6, 0.6, 0]])
    idx, keep = pillar_index(xyz, torch.tensor([0, 0, 0, 1]), GRID)
    # b * H * W + iy * W + ix: (0,0)->0, (ix 3, iy 1)->7, out of range, env 1 (1,1)->8+5.
    assert keep.tolist() == [True, True, False, True]
    assert idx.tolist() == [0, 7, 13]


def test_scatter_max_hand_computed():
    v = torch.tensor([[1.0, 5.0], [3.0, 2.0], [4.0, 4.0]])
    out = scatter_max(v, torch.tensor([0, 0, 2]), 3)
    assert out.tolist() == [[3.0, 5.0], [0.0, 0.0], [4.0, 4.0]]


@pytest.mark.parametrize('device', DEVICES)
def test_pillar_height_map_hand_computed(device):
    # GRID: x 0..2, y 0..1, 0.5 m pillars -> H = 2 rows (y), W = 4 columns (x).
    pts = torch.tensor([[0.1, 0.1, -1.0, 9.0], [0.2, 0.3, 0.5, 9.0],   # env 0, (iy 0, ix 0)
                        [1.9, 0.9, -0.25, 9.0],                        # env 0, (1, 3)
                        [2.5, 0.1, 4.0, 9.0],                          # outside the grid
                        [0.6, 0.6, -2.0, 9.0]], device=device)         # env 1, (1, 1)
    grid = pillar_height_map(pts, torch.tensor([0, 0, 0, 0, 1], device=device), 2, GRID)
    assert grid.shape == (2, 2, 2, 4)
    occ0 = [[1, 0, 0, 0], [0, 0, 0, 1]]
    top0 = [[0.5, 0, 0, 0], [0, 0, 0, -0.25]]
    assert grid[0, 0].tolist() == occ0 and grid[0, 1].tolist() == top0
    assert grid[1, 0].tolist() == [[0, 0, 0, 0], [0, 1, 0, 0]]
    assert grid[1, 1].tolist() == [[0, 0, 0, 0], [0, -2.0, 0, 0]]


@pytest.mark.parametrize('device', DEVICES)
def test_pillar_encoder_batch_and_order_invariant(device):
    torch.manual_seed(0)
    enc = PillarEncoder(BevGrid((-2.0, 2.0), (-2.0, 2.0), 0.5), 4, 8, 6).to(device).eval()
    rng = np.random.default_rng(0)
    a = torch.tensor(rng.uniform(-2, 2, (50, 4)), dtype=torch.float32, device=device)
    b = torch.tensor(rng.uniform(-2, 2, (30, 4)), dtype=torch.float32, device=device)
    with torch.inference_mode():
        alone = enc(a, torch.zeros(50, dtype=torch.long, device=device), 1)
        both = enc(torch.cat([a, b]), torch.cat([torch.zeros(50), torch.ones(30)]).long().to(
            device), 2)
        perm = torch.randperm(50, device=device)
        shuffled = enc(a[perm], torch.zeros(50, dtype=torch.long, device=device), 1)
        bev = enc.bev(a, torch.zeros(50, dtype=torch.long, device=device), 1)
    assert both.shape == (2, 6)
    torch.testing.assert_close(both[0], alone[0])
    torch.testing.assert_close(shuffled, alone)
    assert not torch.equal(both[0], both[1])
    # Empty pillars stay zero in the BEV image; occupied ones hold the max feature.
    occupied = set(pillar_index(a[:, :3], torch.zeros(50, dtype=torch.long,
                                                      device=device), enc.grid)[0].tolist())
    nonzero = set(torch.nonzero(bev[0].abs().sum(0).flatten()).flatten().tolist())
    assert nonzero <= occupied


def test_image_and_joint_history_encoders():
    assert ImageEncoder(3, 10)(torch.rand(2, 3, 32, 40)).shape == (2, 10)
    for kind in ('conv1d', 'gru'):
        assert JointHistoryEncoder(12, 5, 7, kind)(torch.rand(3, 5, 12)).shape == (3, 7)
    with pytest.raises(ValueError, match='kind'):
        JointHistoryEncoder(12, 5, 7, 'lstm')


def test_resolve_device():
    assert resolve_device('cpu').type == 'cpu'
    assert resolve_device('auto').type == ('cuda' if torch.cuda.is_available() else 'cpu')


def test_assembler_default_layout_matches_build_observation():
    q = np.arange(6, dtype=np.float32).reshape(2, 3)
    extras = np.ones((2, 2), np.float32)
    asm = ObservationAssembler(2, {'q': 3, 'qd': 3, 'extras': 2})
    out = asm({'q': q, 'qd': -q, 'extras': extras})
    np.testing.assert_array_equal(out, build_observation(q, -q, extras, True))
    assert asm.layout == {'q': (0, 3), 'qd': (3, 6), 'extras': (6, 8)}
    with pytest.raises(ValueError, match='extras'):
        asm({'q': q, 'qd': q, 'extras': np.ones((2, 3))})
    with pytest.raises(ValueError, match='missing'):
        asm({'q': q})
