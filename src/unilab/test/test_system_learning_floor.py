# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The default configuration still learns: a short default arm run reaches its floor.

The default arm run once lost 15 points of return (77.07 -> 61.84 at seed 0)
without a single failing test: an inline control chain let the gate see a
step's action before that step's task state, so most episode starts were not
applied (234 -> 29) and nothing counted it. This run is the default
``bin/unilab train`` (arm6_reach, 64 envs, seed 0, the shipped configuration)
cut to 3 updates' worth of 64k steps, through the real composed graph.
Behaviour only: no time is measured.

What catches that regression is the gate's episode-start counters: the broken
code applied 3 of 30 starts (3 * 64 < 1,920 finished episodes), the fixed code
30 or 31 on every run below. The return is not a separating signal at
this budget. It was calibrated once at 27.2 (fixed) against 16.5 (broken),
seed 0, and the floor set at 22; but the composed run's float path differs
per CPU and per code path, and a different float path is a different
trajectory: seed 0 gave return_last 27.24 here (twice, bit-identical) and
20.79 in another checkout's runs of this test (the floor of 22 failed
there). The same configuration over seeds, composed, on a loaded 2-core VM
(2026-12-06; each seed in its own ROS domain)::

    bin/unilab train --seed S --steps 196608 --no-progress --run-dir DIR

gave:

====  ===========  ============  ==============
seed  return_last  return_first  last - first
====  ===========  ============  ==============
0     27.24        -41.39        68.63
1     24.56        -43.50        68.07
2     24.23        -42.42        66.65
3      8.75        -44.35        53.10
4     25.52        -42.96        68.48
5     14.78        -42.76        57.54
6     25.44        -38.29        63.73
7     21.31        -41.30        62.61
====  ===========  ============  ==============

Two of eight seeds end below the broken code's 16.5 with every start
applied, so no return floor separates the two. The floors below only say
that the run learned: return_last >= 0 (lowest measured 8.75, a margin of
8.7; the zero action scores about -44) and a gain over the first episodes of
at least 40 (lowest measured 53.1, a margin of 13).
"""

import json

from conftest import cli
import pytest

STEPS = 196_608
NUM_ENVS = 64          # the default configuration's
RETURN_FLOOR = 0.0     # lowest of seeds 0-7: 8.75 (seed 3); the zero action about -44
GAIN_FLOOR = 40.0      # lowest return_last - return_first of seeds 0-7: 53.1 (seed 3)


@pytest.mark.system
def test_default_arm_run_reaches_its_learning_floor(tmp_path):
    run_dir = tmp_path / 'run'
    cli('train', '--seed', 0, '--steps', STEPS, '--no-progress', '--run-dir', run_dir,
        timeout=900, check=True)
    summary = json.loads((run_dir / 'summary.json').read_text())
    safety = summary['safety']
    assert summary['steps'] == STEPS
    # Every step's episode starts reached the gate before its action was gated ...
    assert safety['episode_starts_missing'] == 0
    assert safety['episode_starts_unverified'] == 0
    # ... and each step on which episodes ended applied them (arm6_reach episodes of the
    # 64 envs end together, so at least one applied start per 64 finished episodes).
    # The regression this test was written for fails here: 3 applied for 1,920 episodes.
    assert safety['episode_starts_applied'] * NUM_ENVS >= summary['episodes'] > 0
    # The run learned (not a separating signal for that regression: see the docstring).
    assert summary['return_last'] >= RETURN_FLOOR, summary['return_last']
    gain = summary['return_last'] - summary['return_first']
    assert gain >= GAIN_FLOOR, (summary['return_first'], summary['return_last'])
