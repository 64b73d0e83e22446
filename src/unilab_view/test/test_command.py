# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab view``'s options become the view node's command line."""

import argparse

import pytest
from unilab_core import topics
from unilab_view.command import add_command, view_argv


def argv_of(*args):
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers())
    argv = view_argv(parser.parse_args(['view', *args]))
    return {argv[i]: argv[i + 1] for i in range(3, len(argv) - 1) if argv[i].startswith('--')}


def test_a_robot_by_default_and_the_training_graph_with_training():
    plain = argv_of()
    assert plain['--joint-states'] == 'joint_states'
    assert plain['--description'] == 'robot_description'
    assert plain['--env'] == '0'
    training = argv_of('--training', '--env', '3')
    # Every env's joints at a screen's rate, not the per-step topic (the bridge's view_out).
    assert training['--joint-states'] == topics.SIM_VIEW_JOINT_STATES
    assert training['--description'] == topics.SIM_ROBOT_DESCRIPTION
    assert training['--env'] == '3'
    # A topic given wins over the preset.
    assert argv_of('--training', '--joint-states', '/js')['--joint-states'] == '/js'
    # Env 0's goal and command come from the bridge; for another env none is drawn.
    env0 = argv_of('--training')
    assert (env0['--goal'], env0['--command']) == (topics.SIM_GOAL_POSE, topics.SIM_COMMAND)
    assert '--goal' not in training and '--goal' not in plain


def test_mcap_into_a_new_file_only(tmp_path):
    out = tmp_path / 'view.mcap'
    assert argv_of('--mcap', str(out))['--mcap'] == str(out.resolve())
    assert '--mcap' not in argv_of()
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers())
    with_tensors = view_argv(parser.parse_args(['view', '--mcap', str(out), '--mcap-tensors']))
    assert '--mcap-tensors' in with_tensors
    out.write_bytes(b'')
    with pytest.raises(ValueError, match='exists already'):
        argv_of('--mcap', str(out))
    with pytest.raises(ValueError, match='no such directory'):
        argv_of('--mcap', str(tmp_path / 'missing' / 'view.mcap'))
    with pytest.raises(ValueError, match='name the file'):
        argv_of('--mcap-tensors')


def test_the_page_listens_on_loopback_unless_host_says_otherwise():
    assert argv_of()['--host'] == '127.0.0.1'
    assert argv_of('--host', '0.0.0.0')['--host'] == '0.0.0.0'
    with pytest.raises(ValueError, match='^--host not-an-address: not an IP address'):
        argv_of('--host', 'not-an-address')


def test_a_bad_host_is_one_line_naming_the_option_and_exit_2(capsys):
    parser = argparse.ArgumentParser()
    add_command(parser.add_subparsers())
    args = parser.parse_args(['view', '--host', '300.1.2.3'])
    assert args.func(args) == 2
    out, err = capsys.readouterr()
    assert out == ''
    assert err.startswith('unilab: view: --host 300.1.2.3: not an IP address')
    assert err.count('\n') == 1 and 'Traceback' not in err
