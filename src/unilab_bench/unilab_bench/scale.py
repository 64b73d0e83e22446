# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench scale``: the single-rank pieces measured here, and the modelled scaling.

Measured on this machine: env-steps/s of the direct loop (``unilab train
--direct``) with 1 and 2 data-parallel ranks (gloo, CPU), the PPO update time
per batch, the time of a gloo all-reduce for several parameter counts (2
processes; fitted as ``latency + ms per million parameters``), and the cost
of serialising a rollout chunk (what a graph split across hosts sends over
DDS). From these, ``model()`` computes what 1, 2, 8 and 64 ranks (and 1,000
simulated robots streaming to one trainer) would reach, and which term
saturates. The formula and its assumptions are in docs/scaling.md.
"""

from __future__ import annotations

import csv
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

from unilab_bringup.paths import default_config_files
from unilab_core.config import load_run_config
from unilab_core.ros.tensor_msg import make_batch
from unilab_policy.history import policy_input_dim

#: all-reduce sizes measured, in million float32 parameters; the first (one value) gives the
#: latency, the others the slope
ALLREDUCE_MPARAMS = (1e-6, 0.01, 0.1, 0.5, 1.0, 2.0, 4.0)
#: rank counts of the modelled table
MODEL_RANKS = (1, 2, 8, 64)
#: collectives per PPO minibatch with several ranks: the gradient all-reduce and the KL mean
#: (unilab_policy.ppo); the normaliser's all-gather and the keep/rollback vote once per update
COLLECTIVES_PER_MINIBATCH = 2
#: assumptions of the model (not measured here; docs/scaling.md says why these values)
ASSUMED = {
    'cores_per_rank': 8,          # CPU cores that step one rank's MuJoCo envs on a GPU host
    'link_mb_per_s': 1250.0,      # 10 GbE between hosts, MB/s
    'robot_control_hz': 50.0,     # control rate of a simulated robot streaming in real time
    'robots': 1000,
    # NCCL between GPUs (not measurable here): per ring step latency and ms per million
    # float32 parameters at ~20 GB/s (PCIe / a 200 Gb/s link); NVLink is faster still
    'nccl_latency_ms': 0.03,
    'nccl_ms_per_mparam': 0.2,
}


def _summary_and_updates(run_dir: pathlib.Path) -> tuple[dict, list[float]]:
    summary = json.loads((run_dir / 'summary.json').read_text())
    with open(run_dir / 'metrics.csv') as f:
        updates = [float(r['charts/update_s']) for r in csv.DictReader(f)
                   if r.get('charts/update_s') not in (None, '', 'nan')]
    return summary, updates


def direct_run(ranks: int, num_envs: int, steps_per_rank: int, task: str,
               root: pathlib.Path) -> dict:
    """Train ``steps_per_rank`` x ``ranks`` env steps in the direct loop; return its figures."""
    run_dir = root / f'rank{ranks}'
    cmd = [sys.executable, '-m', 'unilab.cli', 'train', '--direct', '--task', task,
           '--num-envs', str(num_envs), '--steps', str(steps_per_rank * ranks),
           '--run-dir', str(run_dir)]
    if ranks > 1:
        cmd += ['--nproc-per-node', str(ranks)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f'`{" ".join(cmd)}` failed ({done.returncode}):\n'
                           f'{(done.stdout + done.stderr)[-2000:]}')
    summary, updates = _summary_and_updates(run_dir)
    wall = float(summary['wall_s'])
    update_total = sum(updates)
    return {
        'ranks': ranks, 'envs_per_rank': num_envs, 'steps': int(summary['steps']),
        'wall_s': wall, 'process_s': round(time.monotonic() - t0, 1),
        'fps': float(summary['fps']), 'updates': len(updates),
        'update_s': round(statistics.median(updates), 4) if updates else None,
        # what the loop spent outside PPO updates: stepping, inference, gate, chunking
        'collect_fps_per_rank': round(int(summary['steps']) / ranks
                                      / max(wall - update_total, 1e-9), 1),
    }


def _allreduce_worker(rank: int, world: int, init: str, sizes: list[int], reps: int,
                      out: str) -> None:
    import torch
    import torch.distributed as dist
    from unilab_policy import distributed
    torch.set_num_threads(1)
    dist.init_process_group('gloo', init_method=init, rank=rank, world_size=world)
    res = {}
    for n in sizes:
        x = torch.ones(n)
        for _ in range(2):
            dist.all_reduce(x)
        times = []
        for _ in range(reps):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(x)
            times.append((time.perf_counter() - t0) * 1e3)
        res[n] = statistics.median(times)
    if rank == 0:
        pathlib.Path(out).write_text(json.dumps(res))
    distributed.shutdown()


def allreduce_times(mparams=ALLREDUCE_MPARAMS, reps: int = 20, world: int = 2) -> dict:
    """Return ``{million params: median ms}`` of a gloo all-reduce between ``world`` processes."""
    import torch.multiprocessing as mp
    sizes = [max(1, int(m * 1e6)) for m in mparams]
    with tempfile.TemporaryDirectory(prefix='unilab_scale_') as tmp:
        out = os.path.join(tmp, 'allreduce.json')
        init = 'file://' + os.path.join(tmp, 'store')
        mp.spawn(_allreduce_worker, args=(world, init, sizes, reps, out), nprocs=world)
        got = json.loads(pathlib.Path(out).read_text())
    return {m: float(got[str(n)]) for m, n in zip(mparams, sizes)}


def fit_line(xs, ys) -> tuple[float, float]:
    """Return ``(intercept, slope)`` of the least-squares line through the points."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - slope * mx, slope


def rollout_chunk(num_envs: int, chunk: int, width: int, act: int) -> dict:
    """Return the tensors of one rollout chunk as the policy node publishes it."""
    import numpy as np
    return {'obs': np.zeros((chunk, num_envs, width), np.float32),
            'act': np.zeros((chunk, num_envs, 3 * act), np.float32),
            'f': np.zeros((chunk, num_envs, 7), np.float32),
            'next_obs': np.zeros((num_envs, width), np.float32)}


def serialise_rate(tensors: dict, reps: int = 20) -> tuple[int, float]:
    """Return (bytes on the wire, MB/s) of building and serialising this ``TensorBatch``."""
    from rclpy.serialization import serialize_message
    wire = len(serialize_message(make_batch('rollout', 0, tensors)))
    t0 = time.perf_counter()
    for i in range(reps):
        serialize_message(make_batch('rollout', i, tensors))
    per = (time.perf_counter() - t0) / reps
    return wire, wire / per / 1e6


def ring_allreduce_ms(ranks: int, latency_ms: float, ms_per_mparam: float,
                      mparams: float) -> float:
    """
    Return the modelled time of one all-reduce over ``ranks`` (ring algorithm).

    A ring all-reduce takes ``2 (K - 1)`` steps, each paying the latency and
    moving ``1 / K`` of the buffer: ``2 (K-1) a + 2 (K-1) / K * b * P``. With the
    two-rank fit ``t2 = A + B P`` (``A = 2 a``, ``B = b``) this is
    ``(K-1) A + 2 (K-1) / K * B * P``; one rank does no all-reduce.
    """
    if ranks <= 1:
        return 0.0
    return (ranks - 1) * latency_ms + 2.0 * (ranks - 1) / ranks * ms_per_mparam * mparams


def model(c: dict, ranks_list=MODEL_RANKS, assumed: dict | None = None) -> list[dict]:
    """
    Return the modelled table from the measured constants ``c`` (see docs/scaling.md).

    Per rank and PPO iteration (``n`` envs x ``T`` steps):
    ``t_collect = n T / (cores * collect_fps_core)``, ``t_update = update_s``,
    ``t_comm = collectives * t_allreduce(K)``; throughput
    ``K n T / (t_collect + t_update + t_comm)``, the rollout stream
    ``throughput * rollout_bytes_per_env_step`` (what DDS carries when the
    simulators and the trainer are on different hosts). The last row: robots
    stepping in real time, streaming to one trainer.
    """
    a = dict(ASSUMED, **(assumed or {}))
    n, t_len = c['envs_per_rank'], c['rollout_length']
    batch = n * t_len
    collectives = c['epochs'] * max(1, batch // c['minibatch']) * COLLECTIVES_PER_MINIBATCH
    rows = []
    for k in ranks_list:
        t_collect = batch / (a['cores_per_rank'] * c['collect_fps_core'])
        t_update = c['update_s']
        t_comm = collectives * ring_allreduce_ms(
            k, c['allreduce_latency_ms'], c['allreduce_ms_per_mparam'], c['mparams']) / 1e3
        total = t_collect + t_update + t_comm
        fps = k * batch / total
        t_nccl = collectives * ring_allreduce_ms(
            k, a['nccl_latency_ms'], a['nccl_ms_per_mparam'], c['mparams']) / 1e3
        dds = fps * c['rollout_bytes_per_env_step'] / 1e6
        terms = {'collect': t_collect, 'update': t_update, 'all-reduce': t_comm}
        limit = max(terms, key=terms.get)
        if dds > a['link_mb_per_s']:
            limit = 'DDS bandwidth'
        rows.append({'ranks': k, 'envs': k * n, 't_collect_s': round(t_collect, 4),
                     't_update_s': round(t_update, 4), 't_allreduce_s': round(t_comm, 4),
                     'env_steps_per_s': round(fps), 'efficiency': round(
                         fps / (k * batch / (t_collect + t_update)), 3),
                     'rollout_mb_per_s': round(dds, 2), 'bound_by': limit,
                     't_allreduce_nccl_assumed_s': round(t_nccl, 4),
                     'env_steps_per_s_nccl_assumed': round(
                         k * batch / (t_collect + t_update + t_nccl))})
    # Real-time robots streaming chunks to one trainer (a graph split across hosts).
    robots, hz = a['robots'], a['robot_control_hz']
    demand = robots * hz
    trainer_capacity = batch / c['update_s']  # samples a trainer rank updates per second
    dds = demand * c['rollout_bytes_per_env_step'] / 1e6
    serialise_cores = dds / c['serialise_mb_per_s']
    fps = min(demand, trainer_capacity, a['link_mb_per_s'] * 1e6
              / c['rollout_bytes_per_env_step'])
    bound = ('robots (real time)' if fps == demand else
             'trainer step' if fps == trainer_capacity else 'DDS bandwidth')
    rows.append({'ranks': 1, 'envs': robots, 'robots_hz': hz, 'env_steps_per_s': round(fps),
                 'trainer_capacity_steps_per_s': round(trainer_capacity),
                 'rollout_mb_per_s': round(dds, 2),
                 'serialise_cores': round(serialise_cores, 3), 'bound_by': bound})
    return rows


def _plot(c: dict, rows: list[dict], path: str) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    ks = [2 ** i for i in range(7)]
    mod = model(c, ks)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    fps = [r['env_steps_per_s'] for r in mod[:-1]]
    ideal = [k * fps[0] for k in ks]
    ax1.loglog(ks, ideal, '--', color='grey', label='linear (no all-reduce)')
    ax1.loglog(ks, fps, 'o-', label='model, gloo constants measured here')
    ax1.loglog(ks, [r['env_steps_per_s_nccl_assumed'] for r in mod[:-1]], 'x:',
               label='model, NCCL constants assumed')
    ax1.plot([1, 2], [c['fps_1rank'], c['fps_2rank']], 's', color='C3',
             label='measured here (2 cores: 1 core per rank)')
    ax1.set_xlabel('ranks (GPUs)')
    ax1.set_ylabel('env-steps/s')
    ax1.set_title(f"{c['envs_per_rank']} envs/rank, {ASSUMED['cores_per_rank']} cores/rank")
    ax1.legend(fontsize=8)
    ax1.grid(True, which='both', alpha=0.3)
    parts = ('t_collect_s', 't_update_s', 't_allreduce_s')
    bottom = [0.0] * len(ks)
    for part in parts:
        vals = [r[part] for r in mod[:-1]]
        ax2.bar([str(k) for k in ks], vals, bottom=bottom, label=part[2:-2])
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax2.set_xlabel('ranks (GPUs)')
    ax2.set_ylabel('s per PPO iteration')
    ax2.set_title('where an iteration goes')
    ax2.legend(fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def bench_scale(args) -> dict:
    """Measure the pieces, fit the all-reduce, model the scaling (``--png FILE``: draw it)."""
    from unilab_bringup.prepare import describe_training
    from unilab_policy.networks import bundle_from_params
    task = args.task or 'arm6_reach'
    num_envs = args.num_envs or 64
    root = pathlib.Path(tempfile.mkdtemp(prefix='unilab_scale_'))
    cfg = load_run_config(list(default_config_files()), {'run.task': task,
                                                         'rollout.num_envs': num_envs})
    _, _, graph = describe_training(cfg, root / 'describe')
    tp, pol = graph.parameters['trainer'], graph.parameters['policy']
    t_len = cfg.rollout.rollout_length
    steps = args.steps or 10 * num_envs * t_len  # per rank: ten PPO updates
    bundle = bundle_from_params(tp)
    params = sum(p.numel() for p in bundle.parameters() if p.requires_grad)
    one = direct_run(1, num_envs, steps, task, root)
    two = direct_run(2, num_envs, steps, task, root)
    mparams = ALLREDUCE_MPARAMS if getattr(args, 'repeats', 20) >= 5 else (1e-6, 0.01, 0.1)
    ar = allreduce_times(mparams, reps=max(3, min(args.repeats, 50)))
    sizes = sorted(ar)
    latency = ar[sizes[0]]  # one value: the latency of a collective
    _, slope = fit_line(sizes[1:], [ar[m] for m in sizes[1:]])
    width = policy_input_dim(pol.obs_dim, pol.act_dim, pol.model.action_history)
    k = min(pol.rollout.chunk_length, pol.rollout.rollout_length)
    chunk = rollout_chunk(num_envs, k, width, pol.act_dim)
    wire, ser_rate = serialise_rate(chunk)
    c = {
        'task': task, 'envs_per_rank': num_envs, 'rollout_length': t_len,
        'epochs': cfg.policy_update.epochs, 'minibatch': cfg.policy_update.batch_size,
        'params': params, 'mparams': params / 1e6,
        'fps_1rank': one['fps'], 'fps_2rank': two['fps'],
        'update_s': one['update_s'], 'update_s_2rank': two['update_s'],
        'collect_fps_core': one['collect_fps_per_rank'],
        'allreduce_ms': {f'{m:g}': round(v, 4) for m, v in ar.items()},
        'allreduce_latency_ms': round(latency, 4),
        'allreduce_ms_per_mparam': round(slope, 3),
        'rollout_chunk_bytes': wire, 'rollout_chunk_steps': k,
        'rollout_bytes_per_env_step': round(wire / (k * num_envs), 1),
        'serialise_mb_per_s': round(ser_rate, 1),
    }
    rows = model(c)
    plot = getattr(args, 'png', None)
    if plot:
        _plot(c, rows, plot)
    return {'benchmark': 'scale', **c, 'runs': [one, two], 'assumed': ASSUMED,
            'model': rows, 'plot': plot, 'cpu_count': os.cpu_count(),
            'note': 'measured on this machine; 2 ranks on 2 cores share them with the OS and '
                    'other work, so fps_2rank shows the all-reduce and rank overhead, not '
                    'GPU or multi-host scaling (docs/scaling.md)'}
