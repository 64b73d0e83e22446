# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench learn``: the expert baseline through the gate, curves, and tracking figures."""

import argparse
import math
import pathlib

import numpy as np
import pytest
from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()


def _cfg():
    from unilab_bringup.paths import default_config_files
    from unilab_core.config import load_run_config
    return load_run_config(list(default_config_files()))


def test_the_ik_expert_reaches_every_target_through_the_gate(tmp_path):
    from unilab_bringup.evaluation import evaluate_policy
    from unilab_bench.learn import ExpertActor
    expert = evaluate_policy(_cfg(), None, 'arm6_reach', str(tmp_path), None, 8, 5, 1,
                             actor=ExpertActor(8, 6))
    zero = evaluate_policy(_cfg(), None, 'arm6_reach', str(tmp_path), None, 8, 5, 1)
    assert expert['episodes'] == zero['episodes'] == 8
    assert expert['success'] == 1.0 and zero['success'] == 0.0
    assert expert['return'] > zero['return'] + 50.0
    # The expert's 0.3 rad steps are above the slew limit: the gate clamps some rows.
    assert 0.0 < expert['clamp_share'] < 1.0
    # Tool speed per control step: both move the tool (the zero action's targets follow
    # the measured joints, so the arm sags under gravity), never faster than six joints at
    # the arm's 3.14 rad/s could move a tool 0.85 m out.
    for run in (expert, zero):
        assert 0.1 < run['tool_speed_p99_mps'] < 3.14 * 0.85 * 6
        assert run['tool_speed_p50_mps'] <= run['tool_speed_p99_mps']


def test_evaluation_pauses_after_every_step_when_asked(tmp_path):
    # The adapter's simulation test yields to the robot's control loop there.
    from unilab_bringup.evaluation import evaluate_policy
    calls = []
    plain = evaluate_policy(_cfg(), None, 'arm6_reach', str(tmp_path), None, 2, 5, 1)
    paced = evaluate_policy(_cfg(), None, 'arm6_reach', str(tmp_path), None, 2, 5, 1,
                            pause=lambda: calls.append(1))
    assert paced == plain
    from unilab_bridge.tasks import make_task
    with make_task('arm6_reach', 1) as task:
        assert len(calls) == task.max_episode_steps  # one episode per env, in lockstep


def test_quad_evaluation_reports_tracking_and_survival(tmp_path):
    from unilab_bringup.evaluation import evaluate_policy
    res = evaluate_policy(_cfg(), None, 'quad_walk', str(tmp_path), None, 4, 0, 1,
                          task_options={'command_velocity': (0.5, 0.5),
                                        'command_yaw': (0.0, 0.0),
                                        'max_episode_steps': 50})
    # The zero command stands still (or falls): the forward error is about 0.5 m/s.
    assert res['vx_error'] == pytest.approx(0.5, abs=0.2)
    assert 0.0 <= res['survival'] <= 1.0 and res['yaw_error'] >= 0.0


def test_curves_and_summaries_read_the_metrics_file(tmp_path):
    from unilab_bench.learn_runs import last_finite, mean_std, read_curve
    (tmp_path / 'metrics.csv').write_text(
        'charts/env_steps,charts/wall_s,charts/mean_return,episodes/success_rate,'
        'safety/clamp_share,charts/learning_rate\n'
        '100,1.0,nan,,0.9,1e-05\n200,2.0,5.0,0.5,0.5,1.5e-05\n300,3.0,7.0,nan,0.1,1e-05\n')
    c = read_curve(tmp_path)
    assert c['env_steps'] == [100.0, 200.0, 300.0]
    assert np.isnan(c['return'][0]) and c['return'][2] == 7.0
    assert last_finite(c['success'], 1.0) == 0.5   # the empty and NaN cells are skipped
    assert last_finite(c['clamp_share'], 0.3) == 0.1
    assert mean_std([1.0, 3.0, None]) == {'mean': 2.0, 'std': 1.0}
    # The share of updates whose adaptive learning rate sat at the schedule's floor (1e-5).
    from unilab_bench.learn_quad import lr_at_floor_share
    assert lr_at_floor_share(c['learning_rate']) == pytest.approx(2 / 3, abs=1e-4)
    assert lr_at_floor_share([math.nan]) is None


def test_an_unknown_subset_is_refused_by_name():
    from unilab_bench.learn import bench_learn
    from unilab_core.config import ConfigError
    args = argparse.Namespace(subset='cartpole', seeds='0', steps=None, png=None,
                              no_sb3=True, run_root=None)
    with pytest.raises(ConfigError, match='--subset cartpole: expected arm6, ranks or one of'):
        bench_learn(args)


@pytest.mark.parametrize('seeds', [',', 'a,b'])
def test_seeds_that_are_not_integers_are_refused_by_name(seeds):
    from unilab_bench.learn import bench_learn
    from unilab_core.config import ConfigError
    args = argparse.Namespace(subset='arm6', seeds=seeds, steps=None, png=None,
                              no_sb3=True, run_root=None)
    with pytest.raises(ConfigError, match='bench learn --seeds'):
        bench_learn(args)


def test_sb3_runs_on_the_chosen_seeds_and_odd_ones_are_refused_by_name():
    from unilab_bench.learn import _sb3_seeds
    from unilab_core.config import ConfigError

    def ns(**kw):
        return argparse.Namespace(**{'no_sb3': False, 'sb3_seeds': None, **kw})
    assert _sb3_seeds(ns(), [0, 1, 2]) == [0, 1, 2]
    assert _sb3_seeds(ns(sb3_seeds='0'), [0, 1, 2]) == [0]
    assert _sb3_seeds(ns(no_sb3=True, sb3_seeds='0'), [0, 1, 2]) == []
    for odd in ('5', 'a', ','):
        with pytest.raises(ConfigError, match='--sb3-seeds'):
            _sb3_seeds(ns(sb3_seeds=odd), [0, 1, 2])
    # Only the gymnasium subsets have SB3 beside them: elsewhere it is refused, not ignored.
    from unilab_bench.learn import bench_learn
    with pytest.raises(ConfigError, match='--sb3-seeds: SB3 runs beside the gymnasium'):
        bench_learn(argparse.Namespace(subset='quad12', seeds='0', sb3_seeds='0', steps=None,
                                       png=None, no_sb3=False, run_root=None))


def test_a_gymnasium_run_is_scored_both_ways_and_a_finished_run_is_not_trained_again(
        tmp_path, monkeypatch):
    import unilab_bench.learn
    from unilab_bench.learn import bench_learn
    monkeypatch.setattr(unilab_bench.learn, 'GYM_EVAL_EPISODES', 2)  # suite time
    args = argparse.Namespace(subset='hopper', seeds='0', steps=1024, png=None, no_sb3=True,
                              run_root=str(tmp_path))
    first = bench_learn(args)
    seed = first['per_seed'][0]
    # Training episodes (stochastic, CleanRL's protocol) and deterministic evaluation
    # episodes (rl-zoo's protocol), each against the published figure of its protocol.
    assert seed['unilab_eval_return'] is not None and seed['unilab_eval_return_std'] >= 0.0
    assert first['eval_episodes'] == 2
    zoo, clean = first['vs_published']['rl_zoo'], first['vs_published']['cleanrl']
    assert zoo['ours'] == first['unilab_eval_return']['mean']
    assert clean['ours'] == first['unilab_return']['mean']
    assert zoo['ratio'] == round(zoo['ours'] / zoo['published'], 3)
    summary = tmp_path / 'Hopper-v5_s0' / 'summary.json'
    stamp = summary.stat().st_mtime_ns
    again = bench_learn(args)  # the same run root: scored again, not trained again
    assert summary.stat().st_mtime_ns == stamp
    assert again['per_seed'][0]['unilab_return'] == seed['unilab_return']
    # Deterministic: the same policy on the same evaluation episodes scores the same.
    assert again['per_seed'][0]['unilab_eval_return'] == seed['unilab_eval_return']


def test_sb3_is_scored_deterministically_with_its_normalisation_frozen():
    pytest.importorskip('stable_baselines3', reason='stable-baselines3 not installed '
                        '(requirements-bench.txt)')
    from unilab_bench.train import sb3_zoo
    out = sb3_zoo('Hopper-v5', 512, 0, eval_episodes=2, eval_seed=1)
    assert out['return'] is not None and np.isfinite(out['eval_return'])
    assert out['eval_return_std'] >= 0.0


def test_sb3_gets_the_zoo_settings_of_its_task():
    from torch import nn
    from unilab_bench.train import sb3_zoo_settings
    params, policy = sb3_zoo_settings('Walker2d-v5')
    assert params['learning_rate'] == 5.05041e-05 and params['n_epochs'] == 20
    assert policy['activation_fn'] is nn.GELU
    assert policy['net_arch'] == {'pi': [256], 'vf': [256]}
    params, policy = sb3_zoo_settings('HalfCheetah-v5')
    assert params['gamma'] == 0.98 and policy['activation_fn'] is nn.ReLU
    # No entry (Ant-v5): the zoo's MuJoCo defaults, i.e. SB3's own with normalisation.
    assert sb3_zoo_settings('Ant-v5') == ({}, {})


@pytest.mark.parametrize('task, name', [('HalfCheetah-v5', 'halfcheetah'),
                                        ('Walker2d-v5', 'walker2d')])
def test_the_zoo_experiment_files_are_the_settings_sb3_gets(task, name):
    """docs/bench/<task>_zoo_settings.yaml gives our PPO what SB3 gets from ZOO_PPO."""
    import math
    import pathlib
    from unilab_bringup.paths import default_config_files
    from unilab_bench.train import ZOO_POLICY, ZOO_PPO
    from unilab_core.config import load_run_config
    path = (pathlib.Path(__file__).resolve().parents[3] / 'docs' / 'bench'
            / f'{name}_zoo_settings.yaml')
    cfg = load_run_config(list(default_config_files()) + [path])
    zoo, net = ZOO_PPO[task], ZOO_POLICY[task]
    u = cfg.policy_update
    assert (cfg.rollout.num_envs, cfg.rollout.rollout_length) == (1, zoo['n_steps'])
    assert (cfg.advantage.gamma, cfg.advantage.gae_lambda) == (zoo['gamma'], zoo['gae_lambda'])
    assert (u.batch_size, u.epochs, u.lr, u.schedule) == (
        zoo['batch_size'], zoo['n_epochs'], zoo['learning_rate'], 'fixed')
    assert (u.clip_param, u.value_loss_coef, u.entropy_coef, u.max_grad_norm) == (
        zoo['clip_range'], zoo['vf_coef'], zoo['ent_coef'], zoo['max_grad_norm'])
    assert not u.clipped_value_loss  # SB3's clip_range_vf None
    assert cfg.model.hidden_sizes == net['net'] and cfg.model.activation == net['activation']
    assert math.isclose(math.log(cfg.model.init_noise_std), net['log_std_init'], abs_tol=1e-3)
    assert cfg.normalization.observations and cfg.normalization.rewards  # normalize: true


def test_evaluation_counts_the_first_episode_of_each_env_once(tmp_path):
    from unilab_bringup.evaluation import evaluate_policy
    # The zero action lets the hopper fall within a few dozen steps: each env would run
    # many short episodes in the evaluation's time budget; only its first one counts.
    cfg = _cfg().model_copy(update={'run': _cfg().run.model_copy(update={'task': 'Hopper-v5'})})
    res = evaluate_policy(cfg, None, 'Hopper-v5', str(tmp_path), None, 3, 0, 1)
    assert res['episodes'] == 3 and res['return'] < 500.0  # three falls, counted once each


def test_a_quadruped_run_reports_tracking_per_command_and_is_not_trained_again(
        tmp_path, monkeypatch):
    import unilab_bench.learn_quad as lq
    from unilab_bench.learn import bench_learn
    monkeypatch.setattr(lq, 'QUAD_EVAL_ENVS', 2)  # suite time: 2 envs x 50 steps
    monkeypatch.setattr(lq, 'QUAD_EPISODE_STEPS', 50)
    args = argparse.Namespace(subset='quad12', seeds='0', steps=2048, png=None,
                              no_sb3=True, run_root=str(tmp_path))
    first = bench_learn(args)
    seed = first['per_seed'][0]
    assert first['task'] == 'quad12_walk' and set(lq.QUAD_COMMANDS) <= set(seed)
    # One update barely moves it: asked for 0.5 m/s, it is about 0.5 m/s off.
    assert seed['vx0.5']['vx_error'] == pytest.approx(0.5, abs=0.25)
    assert seed['yaw0.5']['yaw_error'] == pytest.approx(0.5, abs=0.25)
    assert 0.0 <= seed['random']['survival'] <= 1.0
    assert first['mean']['vx0.5']['vx_error']['mean'] == pytest.approx(
        seed['vx0.5']['vx_error'], abs=1e-3)
    assert first['forward_met_every_seed'] is False
    summary = tmp_path / 'quad12_walk_s0' / 'summary.json'
    stamp = summary.stat().st_mtime_ns
    again = bench_learn(args)
    assert summary.stat().st_mtime_ns == stamp
    assert again['per_seed'][0]['vx0.5'] == seed['vx0.5']  # deterministic evaluation


def test_rsl_rl_peer_trains_both_on_one_budget_and_scores_them_alike(tmp_path):
    # A tiny budget: two rsl_rl iterations (64 envs x 32 steps) and one update of ours.
    from unilab_bench.learn import _score
    from unilab_bench.learn_peer import rsl_peer
    res = rsl_peer('arm6', [0], 4096, tmp_path, _score, 'rsl_rl_our_settings')
    seed = res['per_seed'][0]
    assert seed['rsl_rl']['env_steps'] == 4096 and seed['unilab']['env_steps'] >= 4096
    # rsl_rl's checkpoint was imported into a run directory of ours and scored from it.
    assert seed['rsl_rl']['run_dir'].endswith('imported')
    for who in ('unilab', 'rsl_rl'):
        assert -100.0 < seed[who]['eval_return'] < 100.0
        assert 0.0 <= seed[who]['eval_success'] <= 1.0
        assert res[who]['eval_return']['mean'] == seed[who]['eval_return']
    assert res['rsl_rl_minus_unilab_return'] == pytest.approx(
        seed['rsl_rl']['eval_return'] - seed['unilab']['eval_return'], abs=1e-3)
    assert res['rsl_rl_cfg']['num_steps_per_env'] == 32


def test_an_unknown_peer_subset_is_refused(tmp_path):
    from unilab_bench.learn import bench_learn
    from unilab_core.config import ConfigError
    args = argparse.Namespace(subset='hopper', peer='rsl_rl', seeds='0', steps=1,
                              run_root=str(tmp_path), png=None)
    with pytest.raises(ConfigError, match='--peer rsl_rl --subset hopper'):
        bench_learn(args)


def test_the_go2_is_scored_per_command_beside_rsl_rl_and_finished_runs_are_reused(
        tmp_path, monkeypatch):
    # One update each (128 envs x 24 steps); 2 envs x 80 steps per command (suite time).
    import unilab_bench.learn_quad as lq
    from unilab_bench.learn import _score
    from unilab_bench.learn_peer import rsl_peer
    monkeypatch.setattr(lq, 'GO2_EVAL_ENVS', 2)
    monkeypatch.setattr(lq, 'GO2_EPISODE_STEPS', 80)  # errors count after the first 1 s
    res = rsl_peer('go2', [0], 3072, tmp_path, _score, 'rsl_rl')
    seed = res['per_seed'][0]
    for who in ('unilab', 'rsl_rl'):
        for name in lq.GO2_COMMANDS:
            figures = seed[who][f'eval_{name}']
            assert set(lq.GO2_KEYS) <= set(figures)
            assert 0.0 <= figures['survival'] <= 1.0
        # An untrained policy asked for 0.5 m/s is far from it; standing records a drift.
        assert seed[who]['eval_vx0.5']['vx_error'] > 0.2
        assert seed[who]['eval_stand']['drift'] is not None
    # rsl_rl's network saw the last command too (go2_walk's action history) and imports so.
    imported = pathlib.Path(seed['rsl_rl']['run_dir'])
    assert 'action_history: 1' in (imported.parent / 'import_spec.yaml').read_text()
    ckpts = {who: pathlib.Path(seed[who]['run_dir']) for who in ('unilab', 'rsl_rl')}
    stamps = {who: (p.parent if who == 'rsl_rl' else p) / 'summary.json'
              for who, p in ckpts.items()}
    before = {who: s.stat().st_mtime_ns for who, s in stamps.items()}
    again = rsl_peer('go2', [0], 3072, tmp_path, _score, 'rsl_rl')
    assert {who: s.stat().st_mtime_ns for who, s in stamps.items()} == before
    assert again['per_seed'][0]['unilab']['reused'] and again['per_seed'][0]['rsl_rl']['reused']
    assert again['per_seed'][0]['unilab']['eval_vx0.5'] == seed['unilab']['eval_vx0.5']
    met = lq.go2_targets_met({n: seed['unilab'][f'eval_{n}'] for n in lq.GO2_COMMANDS})
    assert set(met) == set(lq.GO2_TARGETS) and met['vx_error'] is False
