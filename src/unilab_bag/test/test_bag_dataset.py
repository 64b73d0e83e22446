# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The offline dataset builder against a hand-made bag of two rollout chunks."""

import numpy as np
import pytest
from unilab_bag.dataset import build_dataset, HistorySpec
from unilab_bag.info import bag_info, format_info
from unilab_bag.storage import BagError
from unilab_bag.testing import TB, tensor_batch_bytes, write_bag

K, N = 2, 2


def _chunk(seq, obs, next_obs, term, trunc, rewards, ep_ret):
    obs = np.asarray(obs, np.float32).reshape(K, N, 1)
    return tensor_batch_bytes('rollout', seq, {
        'obs': obs, 'actions': obs * 10, 'rewards': np.asarray(rewards, np.float32),
        'terminated': np.asarray(term, np.float32), 'truncated': np.asarray(trunc, np.float32),
        'episode_return': np.asarray(ep_ret, np.float32),
        'episode_length': np.full((K, N), 7, np.float32),
        'next_obs': np.asarray(next_obs, np.float32).reshape(N, 1)}, version=3)


def _bag(tmp_path):
    nan = float('nan')
    # env 0 obs 1, 2 | 3, 4 (-> 5); env 1 obs 11, 12 | 13, 14 (-> 15)
    # chunk 0, step 1: env 1 truncated (return 9); chunk 1, step 0: env 0 terminated (return 4)
    c0 = _chunk(0, [[1, 11], [2, 12]], [3, 13], [[0, 0], [0, 0]], [[0, 0], [0, 1]],
                [[0.1, 0.2], [0.3, 0.4]], [[nan, nan], [nan, 9]])
    c1 = _chunk(2, [[3, 13], [4, 14]], [5, 15], [[1, 0], [0, 0]], [[0, 0], [0, 0]],
                [[0.5, 0.6], [0.7, 0.8]], [[4, nan], [nan, nan]])
    return write_bag(tmp_path / 'bag', [  # c1 twice: kept once
        ('/unilab/rollout', TB, 1, c0), ('/unilab/rollout', TB, 2, c1),
        ('/unilab/rollout', TB, 3, c1)])


def test_rollout_transitions_by_hand(tmp_path):
    d = build_dataset([_bag(tmp_path)])
    a = d.arrays
    assert len(d) == 8
    np.testing.assert_array_equal(a['obs'][:, 0], [1, 11, 2, 12, 3, 13, 4, 14])
    np.testing.assert_array_equal(a['actions'][:, 0], [10, 110, 20, 120, 30, 130, 40, 140])
    np.testing.assert_allclose(a['rewards'], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    # next obs is the next step's obs (chunk's next_obs after its last step); after an
    # episode end (env 1 truncated at obs 12, env 0 terminated at obs 3) it is the obs itself.
    np.testing.assert_array_equal(a['next_obs'][:, 0], [2, 12, 3, 12, 3, 14, 5, 15])
    np.testing.assert_array_equal(a['terminated'], [0, 0, 0, 0, 1, 0, 0, 0])
    np.testing.assert_array_equal(a['truncated'], [0, 0, 0, 1, 0, 0, 0, 0])
    assert sorted(d.episode_returns) == [4.0, 9.0]
    assert d.stats()['behaviour_return'] == pytest.approx(6.5)


def test_info_counts_and_episodes(tmp_path):
    info = bag_info(_bag(tmp_path))
    assert info['topics'] == {'/unilab/rollout': {'type': TB, 'count': 3}}
    assert info['episodes']['count'] == 2
    assert info['episodes']['return_mean'] == pytest.approx(6.5)


def test_info_reports_the_steps_a_recording_holds_and_the_ones_missing(tmp_path):
    # Actions of steps 3-9 without 6 (a recorder that joined late and lost one message).
    steps = [3, 4, 5, 7, 8, 9]
    bag = write_bag(tmp_path / 'bag', [
        ('/unilab/action', TB, 10 + s, tensor_batch_bytes('action', s, {'action': [[0.0]]}))
        for s in steps])
    info = bag_info(bag)
    assert info['topics']['/unilab/action']['seq'] == {'first': 3, 'last': 9, 'steps': 6,
                                                       'missing': 1}
    assert '(steps 3-9, 1 missing)' in format_info(info)


def test_bag_without_rollout_topic_is_a_clear_error(tmp_path):
    bag = write_bag(tmp_path / 'bag', [('/unilab/action', TB, 1,
                                        tensor_batch_bytes('action', 0, {'action': [[0.0]]}))])
    with pytest.raises(BagError, match='no `/unilab/rollout` topic'):
        build_dataset([bag])


def _sensor_bag(tmp_path, skip_action=None):
    """Task states 0..5 and actions 0..4 of 2 envs (no joint states); env 0 ends at step 2."""
    msgs = []
    for s in range(6):
        term = [1.0, 0.0] if s == 3 else [0.0, 0.0]  # the outcome of step 2, read at step 3
        msgs.append(('/unilab/task_state', TB, 10 * s, tensor_batch_bytes('task_state', s, {
            'extras': [[float(s)], [10.0 + s]], 'reward': [0.5, 0.5], 'terminated': term,
            'truncated': [0.0, 0.0]}, stamp_ns=10**9 * s)))
        if s < 5 and s != skip_action:
            msgs.append(('/unilab/action', TB, 10 * s + 1, tensor_batch_bytes(
                'action', s, {'action': [[float(s)], [-0.6 * s]]})))
    return write_bag(tmp_path / 'sbag', msgs)


def test_sensors_source_rebuilds_the_action_history_by_hand(tmp_path):
    spec = HistorySpec(2, low=(-1.0,), high=(1.0,))
    d = build_dataset([_sensor_bag(tmp_path)], 'sensors', [], False, spec)
    # Steps 0 and 1: fewer than 2 actions seen and no episode start -> left out (4 rows).
    assert d.history_unknown == 4 and d.stats()['history_unknown'] == 4
    # Rows of steps 2, 3, 4 for env 0 and 1: [extras, a_{t-1}, a_{t-2}], clipped to +-1.
    np.testing.assert_allclose(d.arrays['obs'], [
        [2, 1, 0], [12, -0.6, 0],          # step 2
        [3, 0, 0], [13, -1, -0.6],         # step 3: env 0 starts over (zeros)
        [4, 1, 0], [14, -1, -1]], atol=1e-6)  # step 4: a_3 = 3 clipped to 1
    np.testing.assert_allclose(d.arrays['actions'][:, 0], [2, -1.2, 3, -1.8, 4, -2.4],
                               atol=1e-6)  # the recorded actions themselves are not clipped
    # next obs: the next step's input; env 0's step 2 ended its episode -> the obs itself.
    np.testing.assert_allclose(d.arrays['next_obs'], [
        [2, 1, 0], [13, -1, -0.6], [4, 1, 0], [14, -1, -1], [5, 1, 1], [15, -1, -1]],
        atol=1e-6)
    np.testing.assert_array_equal(d.arrays['terminated'], [1, 0, 0, 0, 0, 0])


def test_sensors_history_after_a_missing_action_is_unknown_again(tmp_path):
    d = build_dataset([_sensor_bag(tmp_path, skip_action=3)], 'sensors', [], False,
                      HistorySpec(2))
    # Step 3 has no action (no transition); step 4's history lacks a_3 -> left out too.
    assert len(d) == 2 and d.history_unknown == 4 + 2
    np.testing.assert_allclose(d.arrays['obs'][:, 0], [2, 12])
    # Without a history the same bag gives every complete step.
    assert len(build_dataset([_sensor_bag(tmp_path / 'b')], 'sensors', [], False)) == 10
