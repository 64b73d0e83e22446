# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Data-parallel training on ``torch.distributed`` (rsl_rl's multi-GPU mode), free of ROS.

One rank per process, launched by ``torchrun`` (which sets ``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``). Each
rank collects its own rollouts; the trainer keeps the ranks' weights identical:

* the parameters and buffers of rank 0 are broadcast at start and after a resume,
* the gradients are averaged (all-reduce, sum / world size) before every
  optimiser step, in one flat buffer (rsl_rl ``PPO.reduce_parameters``),
* the approximate KL that drives the adaptive learning rate is averaged,
* the observation normaliser is updated with every rank's raw observations,
* whether an update is kept or rolled back is decided by all ranks together.

Every function here is a no-op (or the identity) unless the default process
group is initialised with more than one rank (``active()``), so a
single-process run is bit-identical to one without this module.
"""

from __future__ import annotations

import datetime
import logging
import os
from typing import Iterable

import torch
from torch import distributed as dist
from torch import nn

_LOG = logging.getLogger(__name__)

#: ROS 2 domain ids that are safe on Linux (102-232 meet the ephemeral port range).
MAX_DOMAIN_ID = 101

#: How long a collective waits for a rank that stopped before it fails.
TIMEOUT = datetime.timedelta(minutes=5)
#: How long a rank leaving the group waits at the final barrier for the others.
SHUTDOWN_TIMEOUT = datetime.timedelta(seconds=60)


def launched() -> bool:
    """Return True when this process was started as one of several ranks (``WORLD_SIZE`` > 1)."""
    return int(os.environ.get('WORLD_SIZE', '1') or 1) > 1


def active() -> bool:
    """Return True when a process group with more than one rank is initialised."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank() -> int:
    """Return the rank of this process (0 without a process group)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return int(os.environ.get('RANK', '0') or 0)


def world_size() -> int:
    """Return the number of ranks (1 without a process group)."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size()
    return int(os.environ.get('WORLD_SIZE', '1') or 1)


def is_writer() -> bool:
    """Return True on the rank that writes checkpoints, metrics and summaries (rank 0)."""
    return rank() == 0


def backend_for(device: torch.device | str) -> str:
    """Return the collective backend for ``device``: NCCL for CUDA, gloo otherwise."""
    return 'nccl' if torch.device(device).type == 'cuda' else 'gloo'


def init_from_env(device: torch.device | str) -> bool:
    """
    Join the process group ``torchrun`` describes in the environment; return ``active()``.

    Does nothing outside ``torchrun`` (``WORLD_SIZE`` unset or 1) or when a
    group exists already. On CUDA each rank takes the GPU ``LOCAL_RANK``.
    """
    if not launched() or (dist.is_available() and dist.is_initialized()):
        return active()
    if not dist.is_available():
        raise RuntimeError('torch was built without torch.distributed; cannot run several ranks')
    device = torch.device(device)
    if device.type == 'cuda':
        torch.cuda.set_device(int(os.environ.get('LOCAL_RANK', '0') or 0))
    dist.init_process_group(backend_for(device), timeout=TIMEOUT)
    return active()


def shutdown(synchronise: bool = True) -> None:
    """
    Leave the process group, if this process joined one.

    With ``synchronise`` (a rank that finished its work) the ranks first meet at
    a barrier (gloo: for at most ``SHUTDOWN_TIMEOUT``; NCCL's barrier has no time-out
    of its own: the group's ``TIMEOUT``): a rank that tore the group down
    while another still had a collective in flight made gloo's threads in the
    other abort the process (SIGABRT, "terminate called without an active
    exception"). A rank leaving on an error passes ``False`` and leaves at
    once: the others may never reach the barrier. A barrier that fails or times
    out is logged and the group is left anyway.
    """
    if not (dist.is_available() and dist.is_initialized()):
        return
    if synchronise and dist.get_world_size() > 1:
        try:
            if dist.get_backend() == 'gloo':
                dist.monitored_barrier(timeout=SHUTDOWN_TIMEOUT)
            else:
                dist.barrier()
        except RuntimeError as exc:  # a rank gone or late: leave without it
            _LOG.warning('rank %d: the ranks did not meet before leaving the group: %s',
                         dist.get_rank(), exc)
    dist.destroy_process_group()


def rank_device(device: torch.device | str) -> torch.device:
    """Return ``device`` with the CUDA index of this rank (``LOCAL_RANK``); others as they are."""
    device = torch.device(device)
    if device.type == 'cuda' and launched():
        return torch.device('cuda', int(os.environ.get('LOCAL_RANK', '0') or 0))
    return device


def rank_seed(seed: int, of_rank: int | None = None) -> int:
    """Return the seed of a rank: ``seed + rank`` (rank 0 keeps the configured seed)."""
    return int(seed) + (rank() if of_rank is None else int(of_rank))


def rank_domain(base: int, of_rank: int | None = None) -> int:
    """
    Return the ROS domain of a rank's graph: ``base + rank``, so no two graphs share one.

    ``ValueError`` when it leaves the domains that are safe on Linux (0..101).
    """
    domain = int(base) + (rank() if of_rank is None else int(of_rank))
    if not 0 <= domain <= MAX_DOMAIN_ID:
        raise ValueError(f'rank domain {domain} (ROS_DOMAIN_ID {base} + rank) is outside '
                         f'0..{MAX_DOMAIN_ID}; lower ROS_DOMAIN_ID or the number of ranks')
    return domain


def broadcast_module(module: nn.Module, src: int = 0) -> None:
    """Copy the parameters and buffers of rank ``src`` into ``module`` on every rank."""
    if not active():
        return
    with torch.no_grad():
        for tensor in module.state_dict().values():
            dist.broadcast(tensor, src)


def all_reduce_gradients(parameters: Iterable[nn.Parameter]) -> None:
    """
    Average the gradients over the ranks in place (one flat all-reduce).

    Every rank must hold a gradient for the same parameters (PPO's loss reaches
    all of actor and critic). With equal-sized minibatches and a loss that is a
    mean, the result is the gradient of the loss over the ranks' batches together.
    """
    if not active():
        return
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    flat /= dist.get_world_size()
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[offset:offset + n].view_as(g))
        offset += n


def mean_over_ranks(value: torch.Tensor) -> torch.Tensor:
    """Return the mean of ``value`` over the ranks (``value`` itself with one rank)."""
    if not active():
        return value
    out = value.detach().clone()
    dist.all_reduce(out, op=dist.ReduceOp.SUM)
    return out / dist.get_world_size()


def any_rank(flag: bool, device: torch.device | str = 'cpu') -> bool:
    """Return True on every rank when ``flag`` is True on any rank (``flag`` with one rank)."""
    if not active():
        return bool(flag)
    t = torch.tensor([1.0 if flag else 0.0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item() > 0.0)


def gather_rows(x: torch.Tensor) -> torch.Tensor:
    """Return every rank's ``x`` (equal shapes) concatenated along dim 0, in rank order."""
    if not active():
        return x
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x.contiguous())
    return torch.cat(parts, 0)
