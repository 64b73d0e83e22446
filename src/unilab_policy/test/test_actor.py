# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The policy's step protocol without ROS: versions, the on-policy hold, history, chunks."""

import numpy as np
import pytest
import torch
from unilab_core.config import ModelSection, NormalizationSection
from unilab_policy.actor import ObservationError, PolicyActor, StepIn
from unilab_policy.networks import build_bundle
from unilab_policy.weights import flatten_state

N, OBS, ACT, T, K = 3, 4, 2, 4, 2


def _actor(mode='on_policy', history=0, fill='zero', seed=0, **kw):
    bundle = build_bundle(OBS, ACT, ModelSection(hidden_sizes=[8], action_history=history),
                          NormalizationSection(), seed=seed)
    return PolicyActor(bundle, N, ACT, mode=mode, rollout_length=T, chunk_length=K,
                       action_history=history, history_fill=fill, **kw)


def _step(seq, obs=None, start=None):
    obs = np.full((N, OBS), float(seq), np.float32) if obs is None else obs
    done = np.zeros(N, np.float32) if start is None else np.asarray(start, np.float32)
    return StepIn(seq, obs, reward=np.full(N, 0.5, np.float32), terminated=done,
                  truncated=np.zeros(N, np.float32),
                  episode_return=np.full(N, np.nan, np.float32),
                  episode_length=np.zeros(N, np.float32))


def test_no_action_before_weights_then_the_held_observation_is_answered():
    actor = _actor()
    assert actor.step(_step(0)).action is None and actor.pending.seq == 0
    out = actor.set_version(0).action
    assert out is not None and out.seq == 0 and out.version == 0
    assert out.action.shape == (N, ACT) and out.action.dtype == np.float32


def test_on_policy_acts_rollout_length_steps_per_version_then_holds():
    actor = _actor()
    actor.set_version(0)
    chunks, actions = [], []
    seq = 0
    while True:
        r = actor.step(_step(seq))
        if r.chunk is not None:
            chunks.append(r.chunk)
        if r.action is None:
            break
        actions.append(r.action)
        seq += 1
    # T actions of version 0, sent as T / K chunks of K steps, then the T+1-th step waits.
    assert len(actions) == T and {a.version for a in actions} == {0}
    assert [c.first_seq for c in chunks] == [0, K] and {c.version for c in chunks} == {0}
    assert actor.pending.seq == T
    c = chunks[-1].tensors
    assert c['obs'].shape == (K, N, OBS) and c['actions'].shape == (K, N, ACT)
    np.testing.assert_array_equal(c['next_obs'], np.full((N, OBS), float(T)))
    np.testing.assert_array_equal(c['rewards'], 0.5)
    # The next version answers the held step, and a new rollout starts.
    r = actor.set_version(1)
    assert r.action.seq == T and r.action.version == 1 and r.chunk is None


def test_a_resent_step_gets_the_same_action_and_no_new_sample():
    actor = _actor()
    actor.set_version(0)
    first = actor.step(_step(0)).action
    rng = torch.get_rng_state()
    again = actor.step(_step(0))
    assert again.duplicate and again.action is first
    assert torch.equal(rng, torch.get_rng_state())  # nothing sampled
    assert actor.counters['duplicates'] == 1 and actor.counters['steps'] == 1
    assert actor.step(_step(-1)).action is None  # older than the last: ignored


def test_bad_observations_change_nothing():
    actor = _actor()
    actor.set_version(0)
    with pytest.raises(ObservationError, match='shape'):
        actor.step(_step(0, obs=np.zeros((N, OBS + 1), np.float32)))
    bad = np.zeros((N, OBS), np.float32)
    bad[1, 2] = np.nan
    with pytest.raises(ObservationError, match='NaN'):
        actor.step(_step(0, obs=bad))
    assert actor.counters['steps'] == 0 and actor.last_seq == -1


def test_weights_swap_only_to_newer_versions_and_drop_old_open_steps():
    actor = _actor()
    trained = build_bundle(OBS, ACT, ModelSection(hidden_sizes=[8]), NormalizationSection(),
                           seed=5)
    flat = flatten_state(trained)[0].numpy()
    actor.load_weights(flat, 0)
    actor.step(_step(0))
    assert actor.chunk.has_open_step()
    actor.load_weights(flat * 0.0, 0)  # the same version again: ignored
    assert torch.equal(flatten_state(actor.bundle)[0], torch.from_numpy(flat))
    actor.load_weights(flat, 3)  # a resumed trainer's version: old steps are not sent as v3
    assert actor.version == 3 and not actor.chunk.has_open_step()
    with pytest.raises(ValueError):
        actor.load_weights(flat[:-1], 4)


def test_deploy_mode_is_deterministic_and_sends_no_chunks():
    actor = _actor(mode='deploy')
    actor.set_version(0)
    assert actor.chunk is None
    outs = [actor.step(_step(s, obs=np.ones((N, OBS), np.float32))) for s in range(T + 3)]
    assert all(o.action is not None and o.chunk is None for o in outs)  # never waits
    first = outs[0].action.action
    for o in outs[1:]:
        np.testing.assert_array_equal(o.action.action, first)
    with torch.no_grad():
        mean = actor.bundle(torch.ones(N, OBS))
    np.testing.assert_allclose(first, mean.numpy(), atol=1e-6)
    # The actor only: no critic, no log-density on the control path (an exported
    # model's outputs are the same: zeros, nothing trains on them).
    assert not outs[0].action.value.any() and not outs[0].action.log_prob.any()
    sampled = actor.inference.act(np.ones((N, OBS), np.float32), deterministic=False)
    np.testing.assert_allclose(sampled.mean.numpy(), mean.numpy(), atol=1e-6)
    assert sampled.value.abs().sum() > 0  # training's path still runs the critic


def test_history_starts_with_the_held_joint_positions_at_every_episode_start():
    actor = _actor(history=2, fill='joint_position', action_low=[-1, -1],
                   action_high=[1, 1], mode='deploy')
    actor.set_version(0)
    obs0 = np.random.default_rng(0).uniform(-2, 2, (N, OBS)).astype(np.float32)
    actor.step(_step(0, obs=obs0))
    held = np.clip(obs0[:, :ACT], -1, 1)  # the first ACT columns are the joint positions
    np.testing.assert_allclose(actor.history.buf[:, 1], held)  # pushed once, older = held
    sent = actor.last_out.action
    np.testing.assert_allclose(actor.history.buf[:, 0], np.clip(sent, -1, 1))
    # Env 1 starts a new episode: its history restarts from its joint positions.
    obs1 = obs0 + 0.25
    actor.step(_step(1, obs=obs1, start=[0, 1, 0]))
    np.testing.assert_allclose(actor.history.buf[1, 1], np.clip(obs1[1, :ACT], -1, 1))
    np.testing.assert_allclose(actor.history.buf[0, 1], np.clip(sent[0], -1, 1))


def test_chunks_tile_the_rollout():
    bundle = build_bundle(OBS, ACT, ModelSection(hidden_sizes=[8]), NormalizationSection())
    with pytest.raises(ValueError, match='multiple'):
        PolicyActor(bundle, N, ACT, rollout_length=6, chunk_length=4)
    # A chunk longer than the rollout is cut to it.
    assert PolicyActor(bundle, N, ACT, rollout_length=4, chunk_length=8).chunk_length == 4


def test_a_rehearsal_runs_the_network_and_changes_nothing_the_next_step_computes():
    """Deploy mode: rehearse() acts on the last input, history and counters untouched."""
    a, b = _actor(mode='deploy', history=1), _actor(mode='deploy', history=1)
    for actor in (a, b):
        actor.set_version(0)
        assert not actor.rehearse()  # nothing acted on yet
        actor.step(_step(0))
    calls = []
    forward = a.inference.act
    a.inference.act = lambda *args, **kw: calls.append(kw) or forward(*args, **kw)
    before, rng = dict(a.counters), torch.get_rng_state()
    assert a.rehearse() and calls == [{'deterministic': True}]
    assert a.counters == before and a.last_seq == 0
    assert torch.equal(rng, torch.get_rng_state())  # no random number drawn
    out_a, out_b = a.step(_step(1)).action, b.step(_step(1)).action
    np.testing.assert_array_equal(out_a.action, out_b.action)


def test_no_rehearsal_where_the_actor_samples():
    """Training and adaptation draw random actions: a rehearsal would shift the stream."""
    actor = _actor(mode='on_policy')
    actor.set_version(0)
    actor.step(_step(0))
    assert not actor.rehearse()
