# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The latency probe's bookkeeping: warm-up, one sample per cycle, misses, late commands."""

import pytest
from unilab_bridge.latency_probe import CycleLatency
from unilab_bridge.params import RobotDoubleParams

MS = 1_000_000


def test_cycles_start_after_the_first_command_and_the_warmup():
    probe = CycleLatency(cycles=3, warmup=1)
    probe.sent(0)
    probe.arrived(5 * MS)            # the controller's first command: it has started
    probe.sent(20 * MS)              # warm-up cycle
    probe.arrived(22 * MS)
    probe.sent(40 * MS)              # cycle 0
    probe.arrived(41 * MS)
    probe.arrived(42 * MS)           # a second command in the same cycle: counted, not timed
    probe.sent(60 * MS)              # cycle 1: no command (a miss) ...
    probe.sent(80 * MS)              # cycle 2: ... whose late command lands here, first
    probe.arrived(83 * MS)
    assert not probe.done
    probe.sent(100 * MS)             # closes cycle 2
    assert probe.done
    probe.arrived(101 * MS)          # after the end: ignored
    s = probe.summary()
    assert s['cycles'] == 3 and s['deadline_misses'] == 1 and s['extra_commands'] == 1
    assert s['latency_ms'] == [1.0, 3.0]


def test_probe_needs_at_least_one_cycle_a_file_and_one_robot():
    with pytest.raises(ValueError):
        CycleLatency(0)
    with pytest.raises(ValueError, match='latency_probe_file'):
        RobotDoubleParams(profile='x.yaml', latency_probe_cycles=5)
    with pytest.raises(ValueError, match='one robot'):
        RobotDoubleParams(profile='x.yaml', latency_probe_cycles=5, latency_probe_file='f',
                          robots=2)
