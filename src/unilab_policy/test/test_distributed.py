# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Data-parallel training with 2 gloo ranks in processes (``unilab_policy.distributed``)."""

import os

import numpy as np
import pytest
import torch
from torch import distributed as dist
from torch import multiprocessing as mp
from torch import nn
from unilab_core.config import AdvantageSection, PolicyUpdateSection
from unilab_policy import distributed
from unilab_policy.models import ActorCritic, PolicyBundle
from unilab_policy.ppo import PPOParams
from unilab_policy.trainer import Trainer

from test_trainer import _chunk, ACT, K, N, OBS, T  # noqa: I100 - the test directory

WORLD = 2
UPDATES = 3


def _join(rank: int, store: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group('gloo', init_method=f'file://{store}', rank=rank,
                            world_size=WORLD)


def _grad_worker(rank: int, store: str, out: str) -> None:
    """Average the gradients of a half batch per rank; save them, and rank 0 the full batch's."""
    _join(rank, store)
    try:
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
        gen = torch.Generator().manual_seed(1)
        x, y = torch.randn(8, 3, generator=gen), torch.randn(8, 2, generator=gen)
        half = slice(4 * rank, 4 * rank + 4)
        nn.functional.mse_loss(model(x[half]), y[half]).backward()
        distributed.all_reduce_gradients(model.parameters())
        result = {'ranked': [p.grad.clone() for p in model.parameters()]}
        model.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        result['full'] = [p.grad.clone() for p in model.parameters()]
        torch.save(result, os.path.join(out, f'grads{rank}.pt'))
    finally:
        distributed.shutdown()


def _trainer_worker(rank: int, store: str, out: str) -> None:
    """Train UPDATES PPO updates on this rank's own data; save the state after each."""
    _join(rank, store)
    try:
        torch.manual_seed(100 + rank)  # different initial weights: the trainer broadcasts
        bundle = PolicyBundle(ActorCritic(OBS, ACT, hidden_sizes=(8,), init_noise_std=0.5))
        params = PPOParams(PolicyUpdateSection(epochs=2, lr=1e-3, schedule='adaptive',
                                               desired_kl=1e-4),
                           AdvantageSection(), num_mini_batches=2)
        tr = Trainer(bundle, params, T, N, torch.device('cpu'), os.path.join(out, 'run'),
                     total_steps=T * N * WORLD * UPDATES, tensorboard=False)
        rng = np.random.default_rng(rank)
        states = [tr.weights().copy()]
        lrs, steps = [], []
        while not tr.done:
            for _ in range(T // K):
                tr.add_chunk(_chunk(tr, rng, obs_offset=3.0 + rank), tr.version)
            states.append(tr.weights().copy())
            lrs.append(tr.ppo.learning_rate)
            steps.append(tr.env_steps)
        norm = {k: v.clone() for k, v in bundle.obs_normalizer.state_dict().items()}
        torch.save({'weights': states, 'lr': lrs, 'steps': steps, 'norm': norm,
                    'checkpoint': tr.last_checkpoint, 'writer': tr.writer},
                   os.path.join(out, f'trainer{rank}.pt'))
        tr.close()
    finally:
        distributed.shutdown()


def _spawn(worker, tmp_path):
    mp.spawn(worker, args=(str(tmp_path / 'store'), str(tmp_path)), nprocs=WORLD, join=True)
    return [torch.load(tmp_path / f'{name}{r}.pt', weights_only=False)
            for name in ('grads', 'trainer') for r in range(WORLD)
            if (tmp_path / f'{name}{r}.pt').is_file()]


@pytest.mark.skipif(not dist.is_available(), reason='torch without torch.distributed')
def test_averaged_gradients_are_the_full_batch_gradient(tmp_path):
    r0, r1 = _spawn(_grad_worker, tmp_path)
    for a, b, full in zip(r0['ranked'], r1['ranked'], r0['full']):
        assert torch.equal(a, b)  # bit for bit on both ranks
        torch.testing.assert_close(a, full, rtol=1e-5, atol=1e-7)


@pytest.mark.skipif(not dist.is_available(), reason='torch without torch.distributed')
def test_two_rank_trainer_keeps_the_weights_identical(tmp_path):
    r0, r1 = _spawn(_trainer_worker, tmp_path)
    assert len(r0['weights']) == UPDATES + 1
    for w0, w1 in zip(r0['weights'], r1['weights']):
        np.testing.assert_array_equal(w0, w1)  # rank 0's at start, then after every update
    assert not np.array_equal(r0['weights'][0], r0['weights'][-1])
    assert r0['lr'] == r1['lr']  # the adaptive schedule saw the averaged KL
    assert r0['steps'] == r1['steps'] == [T * N * WORLD * (u + 1) for u in range(UPDATES)]
    for k in r0['norm']:
        assert torch.equal(r0['norm'][k], r1['norm'][k])
    # The normaliser saw both ranks' observations (offsets 3 and 4): count and mean.
    assert int(r0['norm']['count']) == T * N * WORLD * UPDATES
    assert 3.2 < float(r0['norm']['mean'].mean()) < 3.8
    # One writer: rank 0 wrote the checkpoint, rank 1 names the same file.
    assert r0['writer'] and not r1['writer']
    assert r0['checkpoint'] == r1['checkpoint']
    ckpts = sorted(p.name for p in (tmp_path / 'run' / 'checkpoints').iterdir())
    assert ckpts == ['latest.pt', f'model_{UPDATES:06d}.pt']
    rows = (tmp_path / 'run' / 'metrics.csv').read_text().splitlines()
    assert len(rows) == 1 + UPDATES  # header + one row per update, from rank 0 only


def _shutdown_worker(rank: int, store: str, out: str) -> None:
    """Rank 1 leaves late (after a file-based signal), or at once without meeting (``gone``)."""
    import datetime
    import time
    gone = os.path.exists(os.path.join(out, 'gone'))
    distributed.SHUTDOWN_TIMEOUT = datetime.timedelta(seconds=5)
    _join(rank, store)
    x = torch.ones(4) * (rank + 1)
    dist.all_reduce(x)
    if rank == 1:
        time.sleep(0.5)
        with open(os.path.join(out, 'arrived1'), 'w') as f:
            f.write(str(time.monotonic_ns()))
        distributed.shutdown(synchronise=not gone)
        return
    distributed.shutdown()
    left = time.monotonic_ns()
    torch.save({'sum': x, 'left': left}, os.path.join(out, 'shutdown0.pt'))


@pytest.mark.skipif(not dist.is_available(), reason='torch without torch.distributed')
@pytest.mark.parametrize('gone', [False, True])
def test_shutdown_meets_the_other_ranks_or_leaves_without_a_gone_one(tmp_path, gone):
    if gone:
        (tmp_path / 'gone').touch()
    mp.spawn(_shutdown_worker, args=(str(tmp_path / 'store'), str(tmp_path)), nprocs=WORLD,
             join=True)  # raises if a rank died (a SIGABRT at teardown included)
    r0 = torch.load(tmp_path / 'shutdown0.pt')
    assert torch.equal(r0['sum'], torch.full((4,), 3.0))
    arrived1 = int((tmp_path / 'arrived1').read_text())
    if not gone:  # rank 0 left the group only after rank 1 had reached the barrier
        assert r0['left'] > arrived1


def test_single_process_helpers_are_the_identity():
    assert not distributed.active()
    x = torch.tensor([1.0, 2.0])
    assert distributed.mean_over_ranks(x) is x and distributed.gather_rows(x) is x
    assert distributed.any_rank(True) and not distributed.any_rank(False)
    assert distributed.rank_seed(7) == 7 and distributed.rank_seed(7, 3) == 10
    assert distributed.rank_domain(20, 1) == 21
    with pytest.raises(ValueError, match='outside 0..101'):
        distributed.rank_domain(100, 2)
    assert distributed.backend_for('cpu') == 'gloo' and distributed.backend_for('cuda') == 'nccl'


def test_k_ranks_of_n_envs_take_the_minibatches_of_one_rank_of_k_n_envs():
    """`policy_update.batch_size` is the minibatch over all ranks (rsl_rl: a count per rank)."""
    from unilab_core.config import RolloutSection
    from unilab_policy.networks import ppo_params
    update, adv = PolicyUpdateSection(batch_size=512), AdvantageSection()
    one = ppo_params(update, adv, RolloutSection(num_envs=64, rollout_length=32))
    two = ppo_params(update, adv, RolloutSection(num_envs=32, rollout_length=32), ranks=2)
    assert one.num_mini_batches == two.num_mini_batches == 4
    # Rows per minibatch: 2048 / 4 = 512 on one rank; 1024 / 4 = 256 per rank, 512 together.
    assert 32 * 32 // two.num_mini_batches * 2 == 64 * 32 // one.num_mini_batches == 512
