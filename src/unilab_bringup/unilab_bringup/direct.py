# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The training loop without ROS: same task, actor, safety gate, chunking and trainer.

This is the baseline the graph's overhead is measured against (``unilab
bench train``): the nodes' parameters come from the same graph description
(``unilab_bringup.graphs.training_graph``), their ROS-free cores are built by the same
factories, and ``unilab_bringup.sim_loop.SimLoop`` steps them in one Python loop.
Policy and trainer share one bundle, so a new version is ready at once.

Started by ``torchrun`` (``unilab train --direct --nproc-per-node K``), each
process is one data-parallel rank (``unilab_policy.distributed``): its own
envs seeded ``seed + rank``, gradients averaged with the other ranks, and
only rank 0 writes to the run directory.
"""

from __future__ import annotations

import pathlib
import time

from unilab_bridge.tasks import make_task
from unilab_bringup.prepare import describe_training
from unilab_bringup.sim_loop import SimLoop
from unilab_core.config import dump_config, RunConfig
from unilab_policy import distributed
from unilab_policy.device import setup_device
from unilab_policy.networks import bundle_from_params, make_actor, make_trainer
from unilab_safety.build import build_gate
from unilab_safety.gate import SafetyGate


def make_gate(cfg: RunConfig, run_dir: str | pathlib.Path) -> SafetyGate:
    """
    Build the safety gate the graph's safety node would build, from the same spec.

    Same limits file, per-step clamp, fallback, look-ahead and PID settings
    (``unilab_safety.build.build_gate`` is the one construction path of both).
    """
    _, _, graph = describe_training(cfg, pathlib.Path(run_dir))
    return build_gate(graph.parameters['safety'])


def train_direct(cfg: RunConfig, run_dir: str | pathlib.Path, resume: str = '') -> dict:
    """
    Train with the graph's components in one loop; return the trainer's summary.

    Under ``torchrun`` (``WORLD_SIZE`` > 1) this process joins the process group
    as one rank and leaves it at the end; the summary is this rank's. ``resume``
    (a run directory or checkpoint) is loaded by every rank.
    """
    run_dir = pathlib.Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    _, _, graph = describe_training(cfg, run_dir)
    tp = graph.parameters['trainer']
    device = distributed.rank_device(setup_device(tp.run.device, tp.run.torch_threads))
    joined = distributed.init_from_env(device)
    try:
        summary = _train_direct(cfg, run_dir, graph, device, resume)
    except BaseException:
        if joined:
            distributed.shutdown(synchronise=False)  # the other ranks may never get there
        raise
    if joined:
        distributed.shutdown()
    return summary


def _train_direct(cfg: RunConfig, run_dir: pathlib.Path, graph, device, resume: str) -> dict:
    p = graph.parameters
    tp, bp = p['trainer'], p['bridge']
    if distributed.is_writer():
        dump_config(cfg, run_dir / 'config.yaml')
        graph.write_params(run_dir / 'graph_params.yaml')  # a run directory like the graph's
    seed = distributed.rank_seed(tp.run.seed)  # the configured seed on rank 0
    bundle = bundle_from_params(tp, device, seed=seed)
    trainer = make_trainer(tp, device, bundle)
    if resume:
        trainer.load(resume)
    actor = make_actor(p['policy'], device, bundle)
    actor.set_version(trainer.version)  # one bundle: the trainer's weights are the actor's

    def on_chunk(chunk):
        if trainer.add_chunk(chunk.tensors, chunk.version):
            return actor.set_version(trainer.version)
        return None

    task = make_task(bp.run.task, bp.num_envs, seed=distributed.rank_seed(bp.run.seed),
                     disturbances=bp.disturbances)
    loop = SimLoop(task, actor, build_gate(p['safety']), on_chunk=on_chunk)
    t0 = time.monotonic()
    try:
        loop.reset(seed=distributed.rank_seed(bp.run.seed))
        loop.run(until=lambda: trainer.done)
    finally:
        task.close()
    trainer.save_checkpoint()
    summary = trainer.summary()
    summary['loop_wall_s'] = time.monotonic() - t0
    trainer.close()
    return summary
