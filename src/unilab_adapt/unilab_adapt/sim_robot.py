# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Adaptation without ROS: the adapter's rounds against a simulated robot, in one process.

The same ``Adapter`` the adapter node wires, fed by a one-robot ``SimLoop``
whose actor runs in ``adapt`` mode (samples, sends chunks, never waits) on a
robot variant (``unilab_bridge.variants``), behind the gate the safety node
builds. New versions swap in between two control steps, as on the robot. For
the benchmark's many rounds and for tests; ``unilab adapt`` is the ROS path.
"""

from __future__ import annotations

import pathlib

from unilab_adapt.adapter import Adapter, RoundResult
from unilab_adapt.robot_reward import robot_reward
from unilab_bridge.tasks import make_task
from unilab_policy.weights import flatten_state


def adapt_in_simulation(cfg, model: str | pathlib.Path, variant: dict | None, rounds: int,
                        run_dir: str | pathlib.Path, seed: int = 7,
                        on_round=None, robot=None) -> list[RoundResult]:
    """
    Run ``rounds`` adaptation rounds (not counting waits) of ``model``; return them.

    The robot is the trained task's simulator on ``variant``, or ``robot`` when given (a
    one-env task, e.g. ``unilab_adapt.legged_robot.LeggedRobot``: the legged double).
    """
    import copy

    import torch
    from unilab_adapt.adapter_node import make_sim_test
    from unilab_bringup.deploy import describe_model
    from unilab_bringup.direct import make_gate
    from unilab_bringup.graphs import policy_params
    from unilab_bringup.sim_loop import SimLoop
    from unilab_policy.networks import load_trained, make_actor
    run_dir = pathlib.Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    desc = describe_model(model)
    trained = load_trained(model)
    cfg = cfg.model_copy(update={'model': desc.params.model})  # the network's action map
    flat0 = flatten_state(trained.bundle)[0].numpy()
    sim_test = make_sim_test(cfg, trained.bundle, desc.task.name, run_dir, cfg.adapt)
    adapter = Adapter(run_dir, trained.bundle, flat0, cfg.adapt, cfg.advantage,
                      cfg.policy_update, sim_test, log=lambda *_: None,
                      reward=robot_reward(desc.task.name, desc.task.control_dt,
                                          getattr(robot, 'max_tilt_rad', None)))
    actor = make_actor(policy_params(cfg, desc.task, mode='adapt', num_envs=1), 'cpu',
                       copy.deepcopy(trained.bundle), log=lambda *_: None)
    actor.set_version(0)
    gate = make_gate(cfg, run_dir)
    results: list[RoundResult] = []
    torch.manual_seed(seed)

    def on_chunk(chunk):
        adapter.add_chunk(chunk.tensors, chunk.version)

    with (robot or make_task(desc.task.name, 1, seed=seed, disturbances=variant)) as task:
        loop = SimLoop(task, actor, gate, on_chunk=on_chunk)
        loop.reset(seed=seed)
        while len(results) < rounds:
            loop.step()
            if not (loop.state.terminated[0] or loop.state.truncated[0]):
                continue
            result = adapter.step()
            if result.kind == 'wait':
                continue
            results.append(result)
            if result.publish is not None:
                msg, _, flat = result.publish
                actor.load_weights(flat, msg)
            if on_round is not None:
                on_round(adapter, result)
    return results
