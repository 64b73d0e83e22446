# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Exact boxes from geoms and the camera, checked by hand; one small render where EGL works."""

import math

import mujoco
import numpy as np
import pytest
from unilab_datafactory.scene import ground_truth_boxes, project_points

# A 0.2 m cube 2 m in front of a camera looking along -z (MuJoCo's convention).
MJCF = """
<mujoco>
  <worldbody>
    <camera name="cam" pos="0 0 2" xyaxes="1 0 0 0 1 0" fovy="90"/>
    <body name="cube" pos="{x} 0 0"><geom type="box" size="0.1 0.1 0.1"/></body>
  </worldbody>
</mujoco>
"""


def _boxes(x):
    model = mujoco.MjModel.from_xml_string(MJCF.format(x=x))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    groups = [np.array([0])]  # the cube's only geom
    return ground_truth_boxes(model, data, 0, (100, 100), groups)


def test_projection_by_hand():
    # fovy 90 on 100 rows: f = 50 / tan(45 deg) = 50 px.
    uv, depth = project_points([[0.5, 0.25, 0.0]], np.array([0, 0, 2.0]), np.eye(3), 90,
                               (100, 100))
    assert depth[0] == pytest.approx(2.0)
    assert uv[0] == pytest.approx([50 + 50 * 0.5 / 2, 50 - 50 * 0.25 / 2])


def test_cube_box_by_hand():
    boxes, present = _boxes(0.0)
    # Nearest face at depth 1.9: half width 0.1 -> 50 * 0.1 / 1.9 px around the centre.
    half = 50 * 0.1 / 1.9
    want = [50 - half, 50 - half, 50 + half, 50 + half]
    assert present[0] and boxes[0] == pytest.approx(want, abs=1e-4)


def test_out_of_view_is_absent():
    boxes, present = _boxes(10.0)  # far to the right of the image
    assert not present[0] and boxes[0].tolist() == [0, 0, 0, 0]
    boxes, present = _boxes(math.tan(math.radians(45)) * 1.9)  # half out: clipped at 100
    assert present[0] and boxes[0][2] == pytest.approx(100.0)


def test_render_has_boxes_where_egl_works():
    from unilab_datafactory.scene import ArmScene, CLASSES
    try:
        scene = ArmScene(size=(48, 64), variant='real', seed=0)
    except Exception as exc:  # noqa: B902 - any EGL / driver failure
        pytest.skip(f'offscreen rendering unavailable here: {exc}')
    try:
        frame = scene.sample()
    finally:
        scene.close()
    assert frame['image'].shape == (48, 64, 3) and frame['image'].dtype == np.uint8
    assert frame['boxes'].shape == (len(CLASSES), 4)
    b = frame['boxes'][frame['present']]
    assert len(b) > 0 and (b[:, 2] > b[:, 0]).all() and (b[:, 2] <= 64).all()
