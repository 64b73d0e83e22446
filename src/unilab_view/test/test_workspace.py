# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The trained workspace box from a run's checkpoint, and its geometry in the scene."""

import pytest
from unilab_policy.checkpoint import save_checkpoint
from unilab_policy.envelope import KEY
from unilab_view.workspace import box_geometry, model_workspace

BOX = [0.25, -0.4, 0.1, 0.65, 0.4, 0.5]  # arm6_reach-like: x, y, z min then max (m)


def test_box_geometry_is_centre_and_size():
    centre, dims = box_geometry(BOX)
    assert centre == pytest.approx((0.45, 0.0, 0.3))
    assert dims == pytest.approx((0.4, 0.8, 0.4))


def test_a_run_gives_the_workspace_its_checkpoint_carries(tmp_path):
    run = tmp_path / 'run'
    (run / 'checkpoints').mkdir(parents=True)
    assert model_workspace(run) is None  # no checkpoint yet
    save_checkpoint(run / 'checkpoints' / 'latest.pt',
                    {KEY: {'samples': 0, 'workspace': BOX, 'workspace_frame': 'base_link'}})
    assert model_workspace(run) == (tuple(BOX), 'base_link')
    assert model_workspace(run / 'checkpoints' / 'latest.pt') == (tuple(BOX), 'base_link')
    save_checkpoint(run / 'checkpoints' / 'latest.pt',
                    {KEY: {'samples': 0, 'workspace': [], 'workspace_frame': ''}})
    assert model_workspace(run) is None  # a task without a workspace
    with pytest.raises(ValueError, match='not found'):
        model_workspace(tmp_path / 'nothing')
