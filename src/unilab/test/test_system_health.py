# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A short simulated run seen from outside: every node reports its health, on one clock.

The training graph runs on the simulated time the bridge publishes on its clock
(``use_sim_time``, ``/clock`` remapped to ``/unilab/sim/clock``): the stamps of its
joint states, the action tensor topic and
/diagnostics must all be simulated times, close to each other, never the wall
clock.
"""

import json
import os
import pathlib
import signal
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
NODES = {'/bridge', '/perception', '/policy', '/trainer', '/safety'}
#: One second of simulated time, in ns.
SECOND = 1_000_000_000
#: arm6_reach's control period, in ns.
DT_NS = 20_000_000


@pytest.mark.system
def test_every_node_reports_health_on_the_simulated_clock(tmp_path, tiny_config):
    train = subprocess.Popen(
        [sys.executable, '-m', 'unilab.cli', 'train', '--steps', '2000000', '--num-envs', '8',
         '--run-dir', str(tmp_path / 'run'), '--config', str(tiny_config), '--no-progress'],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=dict(os.environ))
    try:
        obs = subprocess.run([sys.executable, str(HERE / 'clock_observer.py'), '90'],
                             capture_output=True, text=True, timeout=150)
    finally:
        train.send_signal(signal.SIGINT)
        out, _ = train.communicate(timeout=60)
    got = json.loads(obs.stdout.strip().splitlines()[-1])
    diags = got['diagnostics']
    # One status per node, for the simulated robots, with the transport's counters.
    assert {d['name'] for d in diags} == NODES, out
    assert {d['hardware_id'] for d in diags} == {'sim/arm6_reach'}
    for d in diags:
        assert {'transport_received', 'transport_dropped'} <= set(d['keys']), d['name']
        if d['name'] in ('/policy', '/trainer'):
            assert 'gpu' in d['keys'] or 'gpu.temperature_c' in d['keys']
    clock = got['clock']
    assert clock and got['joint_states'] and got['action']
    # Simulated time: the bridge's stamps are its steps x dt, starting at 0, and every
    # other stamp lies within the simulated times seen (wall time would be ~1.8e18 ns).
    lo, hi = min(clock), max(clock)
    assert hi < 3600 * SECOND
    for topic in ('joint_states', 'action'):
        assert all(lo - SECOND <= s <= hi + SECOND for s in got[topic]), topic
    # Every stamp is a whole number of control periods (arm6_reach: 20 ms): the
    # nodes' clocks are the bridge's /clock, not their own.
    for stamps in (clock, got['joint_states'], got['action'], [d['stamp'] for d in diags]):
        assert all(s % DT_NS == 0 for s in stamps)
    assert all(d['stamp'] <= hi + SECOND for d in diags)
