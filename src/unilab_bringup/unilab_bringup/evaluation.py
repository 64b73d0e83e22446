# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Score a policy in simulation: deterministic episodes through the deployed actor and the gate.

The one evaluation of a policy against a simulated robot (``bench sim2real``,
the adaptation fuse's simulation test): the policy acts through its actor in
deploy mode (the policy mean, the action history as the policy node keeps
it), every command passes the gate the graph's safety node would build, on
the task's nominal model or a disturbance variant, from a fixed evaluation
seed. Success is the task's own: for the reach task, a final tool-to-target
distance below ``SUCCESS_M``.
"""

from __future__ import annotations

import numpy as np
from unilab_bridge.tasks import make_task
from unilab_bridge.tasks.reach_reward import final_distance, SUCCESS_M, tool_position

__all__ = ['evaluate_policy', 'SUCCESS_M']


def evaluate_policy(cfg, bundle, task_name: str, run_dir, variant: dict | None, num_envs: int,
                    seed: int, episodes_per_env: int = 2, actor=None,
                    task_options: dict | None = None, pause=None) -> dict:
    """
    Return mean / std of deterministic episode returns and the success rate.

    ``bundle`` None scores the zero action (the robot holds its start pose);
    ``actor`` (anything with PolicyActor's ``step``, e.g. a scripted expert) is
    scored instead of a network when given. ``task_options`` go to the task's
    constructor (e.g. a fixed velocity command for quad_walk). Tasks that keep
    per-episode tracking figures (``episode_stats``) add their means: velocity
    tracking errors and the share of episodes that survived.
    ``run_dir`` receives the joint-limits file the gate uses when the task's
    limits are derived from its model. ``pause`` (a callable) runs after every
    step: a learner beside a robot yields to the control loop there.
    """
    from unilab_bringup.direct import make_gate
    from unilab_bringup.graphs import policy_params
    from unilab_bringup.prepare import task_info
    from unilab_bringup.sim_loop import SimLoop, ZeroPolicy
    from unilab_policy.networks import make_actor
    cfg = cfg.model_copy(update={'run': cfg.run.model_copy(update={'task': task_name})})
    gate = make_gate(cfg, run_dir)
    info, _ = task_info(task_name)
    if actor is None and bundle is None:
        actor = ZeroPolicy(num_envs, info.action_dim)
    elif actor is None:
        actor = make_actor(policy_params(cfg, info, mode='deploy', num_envs=num_envs), 'cpu',
                           bundle)
        actor.set_version(0)
    returns, final_dist, speeds = [], [], []
    with make_task(task_name, num_envs, seed=seed, disturbances=variant,
                   **(task_options or {})) as task:

        # The first ``episodes_per_env`` episodes of each env count, each once: an env
        # whose episodes end early (a fall) must not weigh more than one that runs on.
        done_per_env = np.zeros(num_envs, np.int64)
        # Tool speed per control step (reach tasks): |the tool's displacement| / dt, over
        # steps within one episode (not across an episode's end and the next start).
        last = {'pos': None, 'ended': np.ones(num_envs, bool)}

        def on_step(state):
            finished = state.terminated | state.truncated
            pos = tool_position(task)
            if pos is not None:
                if last['pos'] is not None:
                    within = ~(finished | last['ended'])
                    step = np.linalg.norm(pos - last['pos'], axis=1) / task.control_dt
                    speeds.extend(step[within].tolist())
                last['pos'], last['ended'] = pos, finished
            take = finished & (done_per_env < episodes_per_env)
            done_per_env[finished] += 1
            returns.extend(state.episode_return[take].tolist())
            dist = final_distance(task, take)
            if dist is not None:
                final_dist.extend(dist.tolist())
            if pause is not None:
                pause()

        loop = SimLoop(task, actor, gate, on_step=on_step)
        loop.reset(seed=seed)
        # No episode is longer than max_episode_steps: by then every env has finished
        # its first episodes_per_env episodes.
        steps = episodes_per_env * task.max_episode_steps
        loop.run(until=lambda: loop.seq >= steps)
        stats = list(getattr(getattr(task, 'inner', task), 'episode_stats', ()))
    r = np.asarray(returns)
    success = float(np.mean(np.asarray(final_dist) < SUCCESS_M)) if final_dist else None
    rows = gate.passed + gate.clamped + gate.rejected
    return {'return': round(float(r.mean()), 3), 'return_std': round(float(r.std()), 3),
            'episodes': int(r.size),
            # Command rows the gate clamped (any joint): what the policy asks beyond limits.
            'clamp_share': round(gate.clamped / rows, 4) if rows else None,
            'success': round(success, 3) if success is not None else None,
            # Tool speed (m/s) per control step, reach tasks: what a robot's tool-speed
            # safety limit sees of the policy.
            **({'tool_speed_p50_mps': round(float(np.percentile(speeds, 50)), 4),
                'tool_speed_p99_mps': round(float(np.percentile(speeds, 99)), 4)}
               if speeds else {}),
            **_tracking(stats)}


def _tracking(stats: list[dict]) -> dict:
    """Return the mean tracking errors and survival share of per-episode figures."""
    if not stats:
        return {}
    out = {}
    # A figure an episode could not measure (None: e.g. drift without a stand-still
    # command) is left out of its mean; a figure no episode measured is left out.
    for key in ('vx_error', 'vy_error', 'yaw_error', 'drift'):
        values = [s[key] for s in stats if s.get(key) is not None]
        if values:
            out[key] = round(float(np.mean(values)), 4)
    out['survival'] = round(float(np.mean([s['survived'] for s in stats])), 4)
    return out
