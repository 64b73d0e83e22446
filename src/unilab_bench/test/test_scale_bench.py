# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``bench scale``: the all-reduce timing, the serialised chunk and the model, at tiny sizes."""

import pytest
from unilab_bench import scale

#: constants of the shape bench_scale measures (figures of one run on the 2-core machine)
CONSTANTS = {
    'envs_per_rank': 64, 'rollout_length': 32, 'epochs': 5, 'minibatch': 512,
    'mparams': 0.04, 'update_s': 0.4, 'collect_fps_core': 4000.0,
    'allreduce_latency_ms': 0.5, 'allreduce_ms_per_mparam': 8.0,
    'rollout_bytes_per_env_step': 195.0, 'serialise_mb_per_s': 500.0,
}


def test_ring_allreduce_matches_the_two_rank_fit_and_grows_with_ranks():
    assert scale.ring_allreduce_ms(1, 0.5, 8.0, 1.0) == 0.0
    assert scale.ring_allreduce_ms(2, 0.5, 8.0, 1.0) == pytest.approx(0.5 + 8.0)
    t8, t64 = (scale.ring_allreduce_ms(k, 0.5, 8.0, 1.0) for k in (8, 64))
    assert t8 == pytest.approx(7 * 0.5 + 2 * 7 / 8 * 8.0) and t64 > t8
    assert scale.fit_line([1.0, 2.0, 3.0], [3.0, 5.0, 7.0]) == pytest.approx((1.0, 2.0))


def test_model_rows_say_what_bounds_each_rank_count():
    rows = scale.model(CONSTANTS)
    assert [r['ranks'] for r in rows[:-1]] == list(scale.MODEL_RANKS)
    one, two, _, many = rows[:-1]
    assert one['t_allreduce_s'] == 0.0 and one['efficiency'] == 1.0
    # more ranks: more throughput, less of it per rank, all-reduce the growing term
    assert one['env_steps_per_s'] < two['env_steps_per_s'] < many['env_steps_per_s']
    assert many['efficiency'] < two['efficiency'] < 1.0
    assert many['bound_by'] == 'all-reduce'
    assert many['env_steps_per_s_nccl_assumed'] > many['env_steps_per_s']
    robots = rows[-1]
    assert robots['envs'] == 1000 and robots['bound_by'] == 'trainer step'
    assert robots['rollout_mb_per_s'] == pytest.approx(1000 * 50 * 195 / 1e6, rel=1e-3)
    # a slow link makes DDS the bound
    slow = scale.model(CONSTANTS, assumed={'link_mb_per_s': 0.5})
    assert slow[-1]['bound_by'] == 'DDS bandwidth' and slow[-2]['bound_by'] == 'DDS bandwidth'


def test_allreduce_times_and_serialised_chunk_at_tiny_sizes():
    times = scale.allreduce_times((1e-6, 0.001), reps=3)
    assert set(times) == {1e-6, 0.001} and all(t > 0 for t in times.values())
    chunk = scale.rollout_chunk(num_envs=2, chunk=3, width=5, act=2)
    wire, rate = scale.serialise_rate(chunk, reps=2)
    payload = sum(t.nbytes for t in chunk.values())
    assert wire > payload and rate > 0
