# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""import-policy refuses, by name and with exit 2, every policy that does not fit the task."""

import pytest
from unilab.cli import main
from unilab_bringup.deploy import describe_model, prepare_deploy
from unilab_bringup.prepare import task_info
from unilab_core.config import ConfigError
import yaml

ARM6 = task_info('arm6_reach')[0]
JOINTS = list(ARM6.joint_names)


def _spec(tmp_path, **changes):
    spec = {'observation': [{'name': 'joint_position', 'size': 6},
                            {'name': 'joint_velocity', 'size': 6},
                            {'name': 'extras', 'size': ARM6.extras_dim}],
            'joint_names': JOINTS, 'action_mode': 'relative', 'activation': 'elu'}
    spec.update(changes)
    path = tmp_path / 'spec.yaml'
    path.write_text(yaml.safe_dump(spec))
    return str(path)


def _import(rsl_run, tmp_path, *extra):
    return main(['import-policy', 'rsl_rl', str(rsl_run['checkpoint']),
                 '--run-dir', str(tmp_path / 'rd'), *extra])


def test_the_task_s_own_spec_imports(rsl_run, tmp_path):
    assert _import(rsl_run, tmp_path, '--task', 'arm6_reach', '--spec', _spec(tmp_path)) == 0
    assert (tmp_path / 'rd' / 'checkpoints' / 'latest.pt').is_file()


@pytest.mark.parametrize('changes, named', [
    # Isaac Lab's articulation order instead of ours: refused, naming the swapped joints.
    ({'joint_names': [JOINTS[1], JOINTS[0], *JOINTS[2:]]},
     [f'0: {JOINTS[1]} (task: {JOINTS[0]})', f'1: {JOINTS[0]} (task: {JOINTS[1]})']),
    ({'joint_names': [*JOINTS[:5], 'wrist_9']}, [f"lacks ['{JOINTS[5]}']", "'wrist_9'"]),
    ({'observation': [{'name': 'joint_position', 'size': 6},
                      {'name': 'joint_velocity', 'size': 6},
                      {'name': 'extras', 'size': ARM6.extras_dim + 3}]},
     [f'add up to {ARM6.obs_dim + 3}', f'extras ({ARM6.extras_dim + 3})']),
    ({'observation': [{'name': 'joint_velocity', 'size': 6},
                      {'name': 'joint_position', 'size': 6},
                      {'name': 'extras', 'size': ARM6.extras_dim}]},
     ['term 0: the spec has joint_velocity (6), task arm6_reach has joint_position (6)']),
    ({'task': 'quad_walk'}, ['the spec is for `quad_walk`']),
    ({'activation': 'swish'}, ["activation 'swish'"]),
    ({'joint_range': {'low': [-1.0] * 5, 'high': [1.0] * 6}},
     ['joint_range: 5 low and 6 high values, the task has 6 joints']),
    ({'joint_range': {'low': [-1.0] * 6, 'high': [1.0, 1.0, -2.0, 1.0, 1.0, 1.0]}},
     ['joint_range: low > high at joint [2]']),
    ({'joint_range': [-1.0, 1.0]}, ['joint_range must be {low: [...], high: [...]}']),
    # A policy trained without the last command, imported as if it had seen it.
    ({'action_history': 1}, [f'gives {ARM6.obs_dim + 6}', 'action_history 6']),
    ({'action_history': -1}, ['action_history must be an integer >= 0, got -1']),
    # A policy whose actor read every column, imported as if 4 were the critic's only.
    ({'critic_only': [15, 4]}, [f'takes {ARM6.obs_dim} observation values',
                                '4 of them the critic']),
    ({'critic_only': [20, 4]}, [f'beyond the {ARM6.obs_dim} observation values']),
    ({'critic_only': [20]}, ['critic_only must be [offset, size]']),
])
def test_a_mismatched_spec_exits_2_naming_it(rsl_run, tmp_path, capsys, changes, named):
    assert _import(rsl_run, tmp_path, '--task', 'arm6_reach',
                   '--spec', _spec(tmp_path, **changes)) == 2
    err = capsys.readouterr().err
    for text in named:
        assert text in err, err
    assert 'Traceback' not in err
    assert not (tmp_path / 'rd').exists()  # nothing written


def test_a_joint_range_in_the_spec_becomes_the_trained_envelope_deploy_uses(rsl_run, tmp_path):
    low = [-0.5 - 0.1 * k for k in range(6)]
    high = [0.5 + 0.1 * k for k in range(6)]
    spec = _spec(tmp_path, joint_range={'low': low, 'high': high})
    assert _import(rsl_run, tmp_path, '--task', 'arm6_reach', '--spec', spec) == 0
    model = describe_model(tmp_path / 'rd')
    assert model.envelope['joint_low'] == low and model.envelope['joint_high'] == high
    assert model.envelope['workspace'] == list(ARM6.workspace)
    # The deploy narrows the gate to it, and --require-envelope takes it.
    ranged = prepare_deploy(str(tmp_path / 'rd'), 'arm6', run_dir=str(tmp_path / 'd1'),
                            require_envelope=True)
    margin = ranged.cfg.safety.envelope_margin_rad
    gate = ranged.graph.parameters['safety']
    assert ranged.warnings == []
    assert gate.envelope_low == pytest.approx([v - margin for v in low])
    assert gate.envelope_high == pytest.approx([v + margin for v in high])
    # Without one, the import carries none: deploy warns, --require-envelope refuses it.
    assert _import(rsl_run, tmp_path / 'plain', '--task', 'arm6_reach') == 0
    assert describe_model(tmp_path / 'plain' / 'rd').envelope is None
    plain = prepare_deploy(str(tmp_path / 'plain' / 'rd'), 'arm6',
                           run_dir=str(tmp_path / 'd2'))
    assert any('carries no trained joint range' in w for w in plain.warnings)
    with pytest.raises(ConfigError, match='--require-envelope refuses it'):
        prepare_deploy(str(tmp_path / 'plain' / 'rd'), 'arm6', run_dir=str(tmp_path / 'd3'),
                       require_envelope=True)


def test_a_policy_for_another_task_exits_2(rsl_run, tmp_path, capsys):
    assert _import(rsl_run, tmp_path, '--task', 'quad_walk') == 2
    err = capsys.readouterr().err
    assert 'the network gives 6 actions, task quad_walk commands 8 joints' in err, err


def test_a_file_that_is_not_an_rsl_rl_policy_exits_2(tmp_path, capsys):
    bad = tmp_path / 'model_1.pt'
    bad.write_bytes(b'not a checkpoint')
    assert main(['import-policy', 'rsl_rl', str(bad), '--task', 'arm6_reach']) == 2
    assert 'not a readable torch file' in capsys.readouterr().err


class _Custom:
    """An object a pickle may carry beside the weights (loading it can run code)."""


def test_a_checkpoint_holding_objects_is_refused_unless_trusted(rsl_run, tmp_path, capsys):
    import torch
    state = torch.load(rsl_run['checkpoint'], map_location='cpu', weights_only=True)
    state['infos'] = {'env': _Custom()}
    path = tmp_path / 'model_odd.pt'
    torch.save(state, path)
    args = ['import-policy', 'rsl_rl', str(path), '--task', 'arm6_reach',
            '--spec', _spec(tmp_path), '--run-dir', str(tmp_path / 'rd')]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert '--trust-pickle' in err and 'Traceback' not in err
    assert not (tmp_path / 'rd').exists()
    assert main([*args, '--trust-pickle']) == 0
    assert (tmp_path / 'rd' / 'checkpoints' / 'latest.pt').is_file()
