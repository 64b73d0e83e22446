# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""What a launch does when a node exits (ExitPolicy), without launch itself."""

import json

from unilab_bringup.launch_support import ExitPolicy

NODES = ['bridge', 'perception', 'policy', 'trainer', 'safety']


def test_the_end_node_finishing_stops_the_graph_and_the_rest_stopping_is_no_failure(tmp_path):
    (tmp_path / 'summary.json').write_text('{"steps": 2048}')
    (tmp_path / 'safety_stats.json').write_text('{"clamped": 3}')
    policy = ExitPolicy(NODES, 'trainer', run_dir=str(tmp_path))
    assert policy.exited('trainer', 0) == ('stop', 'trainer finished')
    for name in ('bridge', 'perception', 'policy'):
        assert policy.exited(name, -2)[0] == 'ignore'
    assert json.loads((tmp_path / 'summary.json').read_text()).get('process_mode') is None
    policy.exited('safety', 0)  # the last one: the summary gets the gate's counters
    summary = json.loads((tmp_path / 'summary.json').read_text())
    assert summary == {'steps': 2048, 'safety': {'clamped': 3}, 'process_mode': 'launch'}


def test_a_failed_end_node_fails_even_while_stopping():
    policy = ExitPolicy(NODES, 'trainer')
    assert policy.exited('trainer', -9) == ('fail', 'trainer exited with -9')
    policy = ExitPolicy(NODES, 'trainer')
    policy.shutting_down()  # Ctrl-C: the others stopping is the stop itself ...
    assert policy.exited('bridge', -2)[0] == 'ignore'
    assert policy.exited('trainer', 1)[0] == 'fail'  # ... the trainer failing is not


def test_any_other_node_ending_first_fails_the_graph_naming_it():
    policy = ExitPolicy(NODES, 'trainer')
    action, reason = policy.exited('bridge', -9)
    assert action == 'fail' and reason.startswith('bridge exited with -9 before trainer')
    assert policy.exited('policy', -2)[0] == 'ignore'  # stopping now


def test_without_an_end_node_any_exit_fails_but_an_optional_node_may_end():
    policy = ExitPolicy(['perception', 'policy', 'safety', 'recorder', 'adapter'],
                        optional=('recorder', 'adapter'))
    assert policy.exited('adapter', 1)[0] == 'ignore'
    action, reason = policy.exited('safety', 0)
    assert action == 'fail' and reason == 'safety exited with 0: stopping the graph'
