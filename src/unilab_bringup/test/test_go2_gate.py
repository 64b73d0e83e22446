# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""go2_walk's PD targets through the training gate: the target's limits, not the joint's."""

import numpy as np
from unilab_bridge.tasks.go2_walk import HOME
from unilab_bringup.direct import make_gate
from unilab_bringup.paths import training_config

#: unitree_rl_gym's Go2 kp and the maker's torque limits: the PD saturates this far from
#: the joint (rad), per joint in the model's order (hip, thigh, calf per leg).
SPAN = np.tile([23.7 / 20, 23.7 / 20, 45.43 / 20], 4)


def test_a_target_may_step_as_far_as_the_pd_s_saturation_span_and_no_further(tmp_path):
    gate = make_gate(training_config([], {'run.task': 'go2_walk'}), tmp_path)
    home = np.tile(HOME, (2, 1))
    assert gate.filter(home, state_position=home).clamped_mask.sum() == 0
    # A trained policy's calf targets jump 0.5 rad in one 20 ms step (the calf's velocity
    # limit would allow 0.31): that passes; a step beyond the span is cut to the span.
    step = home.copy()
    step[0, 2] += 0.5
    step[1] += 1.5 * SPAN
    out = gate.filter(step, state_position=home)
    assert out.command[0, 2] == HOME[2] + 0.5
    assert not out.clamped_mask[0] and out.clamped_mask[1]
    np.testing.assert_allclose(out.command[1], np.minimum(HOME + SPAN, gate.limits.pos_hi))
