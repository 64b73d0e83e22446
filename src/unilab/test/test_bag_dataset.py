# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The offline dataset builder against a hand-made bag of two rollout chunks."""

from bag_helpers import TB, tensor_batch_bytes, write_bag
import numpy as np
import pytest
from unilab.bag.dataset import build_dataset
from unilab.bag.info import bag_info
from unilab.bag.storage import BagError

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


def test_bag_without_rollout_topic_is_a_clear_error(tmp_path):
    bag = write_bag(tmp_path / 'bag', [('/unilab/action', TB, 1,
                                        tensor_batch_bytes('action', 0, {'action': [[0.0]]}))])
    with pytest.raises(BagError, match='no `/unilab/rollout` topic'):
        build_dataset([bag])
