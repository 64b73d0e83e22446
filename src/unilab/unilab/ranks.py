# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
r"""
``unilab train --nproc-per-node K``: start the data-parallel ranks with ``torchrun``.

The command is the same as running ``torchrun`` by hand::

    torchrun --standalone --nproc-per-node K -m unilab.cli train --direct --run-dir DIR ...

and, over several hosts (c10d rendezvous on ``MASTER_ADDR:MASTER_PORT``)::

    torchrun --nnodes M --nproc-per-node K --rdzv-backend c10d \\
        --rdzv-endpoint HOST:29400 --rdzv-id unilab -m unilab.cli train --direct --run-dir DIR

Each rank is one process running ``unilab.cli train`` with ``RANK`` and
``WORLD_SIZE`` set; ``unilab_policy.distributed`` does the rest.
"""

from __future__ import annotations

import os
import sys

from unilab_core.config import ConfigError

#: The options that start ranks; they are not passed on to the ranks.
LAUNCH_OPTIONS = ('--nproc-per-node', '--nnodes', '--node-rank', '--master-addr',
                  '--master-port')


def strip_options(argv: list[str], names: tuple[str, ...]) -> list[str]:
    """Return ``argv`` without the options ``names`` and their values (``--x V`` or ``--x=V``)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split('=', 1)[0]
        if name in names:
            skip = '=' not in arg
            continue
        out.append(arg)
    return out


def torchrun_command(train_argv: list[str], nproc_per_node: int, nnodes: int = 1,
                     node_rank: int | None = None, master_addr: str = '',
                     master_port: int = 29400) -> list[str]:
    """
    Return the ``torchrun`` command line that starts ``unilab.cli train`` once per rank.

    One host: ``--standalone`` (a free local port). Several hosts: c10d rendezvous at
    ``master_addr:master_port``, the same command on every host (``--node-rank`` only
    when given; c10d assigns ranks itself otherwise).
    """
    if nproc_per_node < 1 or nnodes < 1:
        raise ConfigError(f'--nproc-per-node {nproc_per_node} and --nnodes {nnodes} must '
                          'be >= 1')
    cmd = [sys.executable, '-m', 'torch.distributed.run']
    if nnodes == 1:
        cmd += ['--standalone']
    else:
        if not master_addr:
            raise ConfigError(f'--nnodes {nnodes} needs --master-addr HOST (the host of '
                              'the c10d rendezvous, reachable from every node)')
        cmd += ['--nnodes', str(nnodes), '--rdzv-backend', 'c10d',
                '--rdzv-endpoint', f'{master_addr}:{master_port}', '--rdzv-id', 'unilab']
        if node_rank is not None:
            cmd += ['--node-rank', str(node_rank)]
    return cmd + ['--nproc-per-node', str(nproc_per_node), '-m', 'unilab.cli', 'train',
                  *train_argv]


def rank_ros_domain() -> int:
    """Give this rank's graphs their own ROS domain: ``ROS_DOMAIN_ID + LOCAL_RANK``."""
    from unilab_policy import distributed
    base = int(os.environ.get('ROS_DOMAIN_ID', '0') or 0)
    try:
        domain = distributed.rank_domain(base, int(os.environ.get('LOCAL_RANK', '0') or 0))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    os.environ['ROS_DOMAIN_ID'] = str(domain)
    return domain
