# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Tests for the ROS-free trainer: chunks in, PPO updates, versions, logs and checkpoints."""

import csv
import math

import numpy as np
import pytest
import torch
from unilab_core.config import AdvantageSection, PolicyUpdateSection
from unilab_policy.models import ActorCritic, PolicyBundle
from unilab_policy.ppo import PPO, PPOParams
from unilab_policy.trainer import BadChunkError, StaleChunkError, Trainer

OBS, ACT, T, N, K = 3, 2, 4, 2, 2
CPU = torch.device('cpu')

PPO_COLUMNS = list(PPO.METRICS)
CHART_COLUMNS = ['charts/env_steps', 'charts/fps', 'charts/update_s', 'charts/mean_return',
                 'charts/episodes', 'charts/wall_s']


def _trainer(run_dir, seed=0, total_steps=1000, checkpoint_every=20):
    torch.manual_seed(seed)
    bundle = PolicyBundle(ActorCritic(OBS, ACT, hidden_sizes=(8,), init_noise_std=0.5))
    params = PPOParams(PolicyUpdateSection(epochs=2, lr=1e-3, schedule='fixed'),
                       AdvantageSection(), num_mini_batches=2)
    return Trainer(bundle, params, T, N, CPU, run_dir, total_steps, checkpoint_every,
                   tensorboard=False)


def _chunk(trainer, rng, episode_return=None, obs_offset=3.0):
    """Return a K-step chunk acted by the trainer's current policy on random observations."""
    raw = (rng.standard_normal((K + 1, N, OBS)) + obs_offset).astype(np.float32)
    bundle = trainer.bundle
    with torch.no_grad():
        out = bundle.actor_critic.act(bundle.normalize(torch.from_numpy(raw[:K]).flatten(0, 1)))

    def kn(x, *extra):
        return x.numpy().reshape(K, N, *extra).astype(np.float32)

    ep_ret = np.full((K, N), np.nan, np.float32) if episode_return is None else \
        np.asarray(episode_return, np.float32)
    return {
        'obs': raw[:K], 'actions': kn(out.action, ACT), 'log_prob': kn(out.log_prob),
        'values': kn(out.value), 'mu': kn(out.mean, ACT), 'sigma': kn(out.std, ACT),
        'rewards': rng.standard_normal((K, N)).astype(np.float32),
        'terminated': np.zeros((K, N), np.float32), 'truncated': np.zeros((K, N), np.float32),
        'episode_return': ep_ret, 'episode_length': np.zeros((K, N), np.float32),
        'next_obs': raw[K],
    }


def _rollout(trainer, rng, returns=(None, None)):
    """Feed T / K chunks of the current version; return add_chunk's results."""
    assert len(returns) == T // K
    return [trainer.add_chunk(_chunk(trainer, rng, r), trainer.version) for r in returns]


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def test_update_after_t_steps(tmp_path, rng):
    tr = _trainer(tmp_path)
    before = [p.detach().clone() for p in tr.bundle.actor_critic.parameters()]
    w0 = tr.weights()
    assert tr.version == 0 and tr.updates == 0 and tr.env_steps == 0
    assert not tr.add_chunk(_chunk(tr, rng), 0)
    assert tr.version == 0 and tr.storage.step == K
    assert tr.add_chunk(_chunk(tr, rng), 0)
    assert tr.version == 1
    assert tr.updates == 1
    assert tr.env_steps == T * N
    assert tr.storage.step == 0
    after = list(tr.bundle.actor_critic.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after))
    w1 = tr.weights()
    assert w1.dtype == np.float32 and w1.shape == w0.shape
    assert not np.array_equal(w0, w1)
    # Second rollout with the new version.
    assert _rollout(tr, rng) == [False, True]
    assert tr.version == 2 and tr.env_steps == 2 * T * N
    tr.close()


def test_metrics_csv_rows(tmp_path, rng):
    tr = _trainer(tmp_path)
    _rollout(tr, rng)
    _rollout(tr, rng)
    tr.close()
    with open(tmp_path / 'metrics.csv', newline='') as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2
    assert list(rows[0]) == ['update', 'env_steps'] + PPO_COLUMNS + CHART_COLUMNS + [
        'policy/weights_version', 'policy/action_std', 'policy/rejected_updates',
        'policy/failed_updates', 'episodes/length_mean']
    assert [int(r['update']) for r in rows] == [1, 2]
    assert [int(r['env_steps']) for r in rows] == [T * N, 2 * T * N]
    assert float(rows[1]['charts/env_steps']) == 2 * T * N
    assert math.isnan(float(rows[0]['charts/mean_return']))  # no episode ended
    for name in PPO_COLUMNS:
        if name != 'charts/explained_variance':
            assert math.isfinite(float(rows[0][name])), name
    assert not (tmp_path / 'tensorboard').exists()


def test_rows_carry_the_ended_episodes_length_and_the_graphs_columns(tmp_path, rng):
    tr = _trainer(tmp_path)
    tr.extra_metrics = lambda: {'safety/clamp_share': 0.98}
    ended = np.full((K, N), np.nan, np.float32)
    ended[1] = [-1.0, -2.0]  # both envs end an episode at the chunk's second step
    lengths = np.zeros((K, N), np.float32)
    lengths[1] = [10, 30]
    chunk = _chunk(tr, rng, ended)
    chunk['episode_length'] = lengths
    tr.add_chunk(chunk, tr.version)
    tr.add_chunk(_chunk(tr, rng), tr.version)
    _rollout(tr, rng)  # no episode ends in the second rollout
    tr.close()
    with open(tmp_path / 'metrics.csv', newline='') as f:
        rows = list(csv.DictReader(f))
    assert float(rows[0]['episodes/length_mean']) == 20.0
    assert math.isnan(float(rows[1]['episodes/length_mean']))
    assert [float(r['safety/clamp_share']) for r in rows] == [0.98, 0.98]


def test_stale_chunk_raises_and_is_counted(tmp_path, rng):
    tr = _trainer(tmp_path)
    with pytest.raises(StaleChunkError, match='version 1'):
        tr.add_chunk(_chunk(tr, rng), 1)  # from the future
    assert tr.stale_chunks == 1
    assert tr.storage.step == 0
    _rollout(tr, rng)
    assert tr.version == 1
    tr.add_chunk(_chunk(tr, rng), 1)
    with pytest.raises(StaleChunkError):
        tr.add_chunk(_chunk(tr, rng), 0)  # late chunk of the previous version
    assert tr.stale_chunks == 2
    assert tr.storage.step == K  # the stale chunk stored nothing
    assert tr.summary()['stale_chunks'] == 2
    tr.close()


def test_normalizer_merged_only_after_update(tmp_path, rng, monkeypatch):
    tr = _trainer(tmp_path)
    norm = tr.bundle.obs_normalizer
    seen = []
    real_update = tr.ppo.update

    def update(storage):
        seen.append((int(norm.count), norm.mean.clone()))
        return real_update(storage)

    monkeypatch.setattr(tr.ppo, 'update', update)

    c1, c2 = _chunk(tr, rng), _chunk(tr, rng)
    assert int(norm.count) == 0
    tr.add_chunk(c1, 0)
    assert int(norm.count) == 0
    tr.add_chunk(c2, 0)
    # The update saw version-0 statistics; the rollout was merged afterwards.
    assert seen[0][0] == 0
    assert torch.equal(seen[0][1], torch.zeros(OBS))
    assert int(norm.count) == T * N
    raw = np.concatenate([c1['obs'], c2['obs']]).reshape(-1, OBS)
    np.testing.assert_allclose(norm.mean.numpy(), raw.mean(0), rtol=1e-5)
    np.testing.assert_allclose(norm.var.numpy(), raw.var(0), rtol=1e-4)
    # The stored observations were normalised with the statistics the policy used (v0:
    # mean 0, var 1), not with the merged ones.
    expected = torch.from_numpy(raw.reshape(T, N, OBS)).div(math.sqrt(1 + norm.eps))
    assert torch.allclose(tr.storage.obs, expected.clamp(-norm.clip, norm.clip))

    # Second rollout: stored with version-1 statistics, merged only after update 2.
    stats_v1 = (norm.mean.clone(), norm.var.clone())
    c3 = _chunk(tr, rng)
    tr.add_chunk(c3, 1)
    assert int(norm.count) == T * N
    assert torch.equal(norm.mean, stats_v1[0]) and torch.equal(norm.var, stats_v1[1])
    want = (torch.from_numpy(c3['obs']) - stats_v1[0]) / torch.sqrt(stats_v1[1] + norm.eps)
    assert torch.allclose(tr.storage.obs[:K], want.clamp(-norm.clip, norm.clip))
    tr.add_chunk(_chunk(tr, rng), 1)
    assert seen[1][0] == T * N
    assert int(norm.count) == 2 * T * N
    tr.close()


def test_checkpoint_every_update(tmp_path, rng):
    tr = _trainer(tmp_path, checkpoint_every=1)
    _rollout(tr, rng)
    ckpt = tmp_path / 'checkpoints'
    assert (ckpt / 'model_000001.pt').is_file()
    assert (ckpt / 'latest.pt').is_file()
    assert tr.last_checkpoint == str(ckpt / 'model_000001.pt')
    _rollout(tr, rng)
    tr.close()
    assert sorted(p.name for p in ckpt.iterdir()) == ['latest.pt', 'model_000001.pt',
                                                      'model_000002.pt']
    assert not list(tmp_path.rglob('*.tmp'))


def test_a_checkpoint_that_cannot_be_written_stops_the_run_naming_the_file(tmp_path, rng):
    from unilab_policy.trainer import TrainingFailedError
    tr = _trainer(tmp_path, checkpoint_every=1)
    (tmp_path / 'checkpoints').write_text('a file where the directory goes')
    with pytest.raises(TrainingFailedError, match=r'could not write checkpoint .*model_000001'):
        _rollout(tr, rng)
    tr.close()


def test_a_stop_signal_inside_a_checkpoint_write_comes_after_the_file(tmp_path, rng,
                                                                      monkeypatch):
    # torch's zip writer calls back into Python per record; a Ctrl-C raised inside one of
    # those calls became a RuntimeError ("unexpected pos"), taken for a failed write.
    import signal
    from unilab_core import stop
    monkeypatch.setattr(stop, 'STOP_SIGNALS', [])
    monkeypatch.setattr(stop, '_DEFER', {'depth': 0, 'pending': False})
    save = torch.save

    def save_interrupted(obj, f, *args, **kwargs):
        signal.raise_signal(signal.SIGINT)  # the handler runs inside the write
        save(obj, f, *args, **kwargs)
    monkeypatch.setattr(torch, 'save', save_interrupted)
    previous = signal.signal(signal.SIGINT, lambda *_: stop.raise_stop())
    try:
        tr = _trainer(tmp_path, checkpoint_every=1)
        with pytest.raises(KeyboardInterrupt):
            _rollout(tr, rng)
    finally:
        signal.signal(signal.SIGINT, previous)
    # Both files whole (their digests check out), the interrupt raised after them.
    from unilab_policy.checkpoint import load_checkpoint
    for name in ('model_000001.pt', 'latest.pt'):
        assert load_checkpoint(tmp_path / 'checkpoints' / name)['updates'] == 1
    assert not list(tmp_path.rglob('*.tmp'))
    tr.close()


def test_no_checkpoint_before_every_unless_done(tmp_path, rng):
    tr = _trainer(tmp_path, checkpoint_every=20, total_steps=2 * T * N)
    _rollout(tr, rng)
    assert not tr.done
    assert not (tmp_path / 'checkpoints').exists()
    _rollout(tr, rng)
    assert tr.done
    # The budget is used up: a final checkpoint is written regardless of checkpoint_every.
    assert (tmp_path / 'checkpoints' / 'model_000002.pt').is_file()
    tr.close()


def test_load_restores_state(tmp_path, rng):
    run = tmp_path / 'run'
    tr = _trainer(run, checkpoint_every=1)
    _rollout(tr, rng, returns=([[np.nan, 1.0], [np.nan, np.nan]], None))
    tr.close()
    state = {k: v.clone() for k, v in tr.bundle.state_dict().items()}
    assert int(state['obs_normalizer.count']) == T * N

    fresh = _trainer(tmp_path / 'resumed', seed=123)
    assert any(not torch.equal(state[k], v) for k, v in fresh.bundle.state_dict().items())
    fresh.load(run)
    assert fresh.version == 1
    assert fresh.updates == 1
    assert fresh.env_steps == T * N
    assert fresh.episode_returns == [1.0]
    assert fresh.last_checkpoint == str(run / 'checkpoints' / 'latest.pt')
    loaded = fresh.bundle.state_dict()
    assert set(loaded) == set(state)
    for k, v in state.items():
        assert torch.equal(loaded[k], v), k
    np.testing.assert_array_equal(fresh.weights(), tr.weights())
    assert fresh.ppo.learning_rate == tr.ppo.learning_rate
    assert fresh.wall_offset > 0  # training time before the resume is kept
    # Training continues with the restored version.
    with pytest.raises(StaleChunkError):
        fresh.add_chunk(_chunk(fresh, rng), 0)
    assert _rollout(fresh, rng) == [False, True]
    assert fresh.version == 2 and fresh.env_steps == 2 * T * N
    fresh.close()


def test_summary_figures(tmp_path, rng):
    nan = np.nan
    tr = _trainer(tmp_path, total_steps=2 * T * N)
    assert tr.summary()['return_first'] is None
    # Finished episodes are read in (step, env) order: 1, 2 | 3, 5 | 7.
    _rollout(tr, rng, returns=([[nan, 1.0], [2.0, nan]], [[nan, nan], [3.0, 5.0]]))
    assert tr.episode_returns == [1.0, 2.0, 3.0, 5.0]
    with open(tmp_path / 'metrics.csv', newline='') as f:
        row = next(csv.DictReader(f))
    assert float(row['charts/mean_return']) == pytest.approx(4.0)  # last N=2: (3 + 5) / 2
    assert float(row['charts/episodes']) == 4
    _rollout(tr, rng, returns=(None, [[7.0, nan], [nan, nan]]))
    assert tr.done
    s = tr.summary()
    tr.close()
    # Window = min(N, episodes // 2) = 2 episodes.
    assert s['return_first'] == pytest.approx((1.0 + 2.0) / 2)
    assert s['return_last'] == pytest.approx((5.0 + 7.0) / 2)
    assert s['episodes'] == 5
    assert s['steps'] == 2 * T * N
    assert s['updates'] == 2
    assert s['weights_version'] == 2
    assert s['stale_chunks'] == 0
    assert s['checkpoint'] == str(tmp_path / 'checkpoints' / 'model_000002.pt')
    assert s['wall_s'] >= 0 and s['fps'] > 0


def test_summary_window_of_one(tmp_path, rng):
    nan = np.nan
    tr = _trainer(tmp_path)
    _rollout(tr, rng, returns=([[nan, nan], [nan, 4.0]], [[6.0, nan], [nan, nan]]))
    s = tr.summary()
    tr.close()
    # Two episodes: window max(1, min(2, 1)) = 1.
    assert s['return_first'] == 4.0
    assert s['return_last'] == 6.0


@pytest.mark.parametrize('field,bad,why', [
    ('obs', lambda c: c['obs'][:, :, :2], 'shape'),
    ('actions', lambda c: c['actions'].astype(np.float64), 'dtype float64'),
    ('rewards', lambda c: np.where(np.eye(K, N, dtype=bool), np.nan, c['rewards']).astype(
        np.float32), 'NaN or Inf'),
    ('next_obs', lambda c: c['next_obs'][:1], 'shape'),
])
def test_bad_chunks_are_rejected_before_storage(tmp_path, rng, field, bad, why):
    tr = _trainer(tmp_path)
    chunk = _chunk(tr, rng)
    chunk[field] = bad(chunk)
    with pytest.raises(BadChunkError, match=f'`{field}`.*{why}'):
        tr.add_chunk(chunk, tr.version)
    assert tr.bad_chunks == 1 and tr.storage.step == 0
    # A good chunk is still accepted afterwards.
    assert not tr.add_chunk(_chunk(tr, rng), tr.version)
    assert tr.storage.step == K


def test_missing_field_is_rejected(tmp_path, rng):
    tr = _trainer(tmp_path)
    chunk = _chunk(tr, rng)
    del chunk['sigma']
    with pytest.raises(BadChunkError, match='sigma'):
        tr.add_chunk(chunk, tr.version)


def test_nan_update_is_rejected_and_last_good_weights_kept(tmp_path, rng):
    tr = _trainer(tmp_path)
    good = tr.weights().copy()
    real_update = tr.ppo.update

    def poisoned(storage):
        metrics = real_update(storage)
        with torch.no_grad():
            next(tr.bundle.actor_critic.parameters()).fill_(float('nan'))
        metrics['losses/value'] = float('nan')
        return metrics

    tr.ppo.update = poisoned
    assert _rollout(tr, rng) == [False, True]
    assert tr.rejected_updates == 1 and tr.last_update_rejected
    assert np.array_equal(tr.weights(), good)  # nothing non-finite can be published
    assert tr.version == 1  # collection goes on with the old weights under the next version
    tr.ppo.update = real_update
    _rollout(tr, rng)
    assert tr.rejected_updates == 1 and not tr.last_update_rejected
    assert np.all(np.isfinite(tr.weights())) and not np.array_equal(tr.weights(), good)
    assert tr.summary()['rejected_updates'] == 1


def test_a_failed_update_is_skipped_counted_and_collection_goes_on(tmp_path, rng):
    # An exception inside the update (CUDA out of memory, say) must neither stall the
    # graph (the policy waits for version v + 1) nor leave a half-filled rollout.
    tr = _trainer(tmp_path)
    good = tr.weights().copy()
    real_update = tr.ppo.update

    def out_of_memory(storage):
        real_update(storage)  # weights change, then the failure: they must roll back
        raise RuntimeError('CUDA out of memory (injected)')

    tr.ppo.update = out_of_memory
    assert _rollout(tr, rng) == [False, True]
    assert tr.failed_updates == 1 and 'out of memory' in tr.last_update_failed
    assert tr.version == 1 and tr.storage.step == 0  # new version, empty storage
    assert np.array_equal(tr.weights(), good)
    tr.ppo.update = real_update
    assert _rollout(tr, rng) == [False, True]  # the next rollout trains normally
    assert tr.failed_updates == 1 and not tr.last_update_failed and tr.version == 2
    assert tr.summary()['failed_updates'] == 1
    tr.close()
    with open(tmp_path / 'metrics.csv', newline='') as f:
        rows = list(csv.DictReader(f))
    assert [r['policy/failed_updates'] for r in rows] == ['1.0', '1.0']
    assert math.isnan(float(rows[0]['losses/value'])) and rows[1]['losses/value'] != 'nan'


def test_updates_failing_again_and_again_stop_the_run(tmp_path, rng):
    from unilab_policy.trainer import MAX_CONSECUTIVE_FAILURES, TrainingFailedError
    tr = _trainer(tmp_path)

    def broken(storage):
        raise RuntimeError('CUDA error: an illegal memory access (injected)')

    tr.ppo.update = broken
    for _ in range(MAX_CONSECUTIVE_FAILURES - 1):
        _rollout(tr, rng)
    with pytest.raises(TrainingFailedError, match='illegal memory access'):
        _rollout(tr, rng)
    assert tr.failed_updates == MAX_CONSECUTIVE_FAILURES
