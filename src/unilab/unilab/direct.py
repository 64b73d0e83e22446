# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The training loop without ROS: same task, policy, safety gate, chunking and trainer.

This is the baseline the graph's overhead is measured against (``unilab
bench train``): everything the nodes do, called in one Python loop, with the
policy and trainer sharing one bundle (weights swap for free between steps).
"""

from __future__ import annotations

import pathlib
import time

import numpy as np
import torch
from unilab.prepare import resolve_limits_file, task_info
from unilab_bridge.tasks import make_task, observation
from unilab_core.config import RunConfig
from unilab_core.graph import holds_joint_positions
from unilab_policy.chunk import ChunkBuilder
from unilab_policy.history import ActionHistory, policy_input_dim
from unilab_policy.models import make_actor_critic, PolicyBundle
from unilab_policy.normalizer import EmpiricalNormalization
from unilab_policy.ppo import num_mini_batches_for, PPOParams
from unilab_policy.trainer import Trainer
from unilab_safety.build import build_gate, SPEC_DEFAULTS
from unilab_safety.gate import SafetyGate


def make_gate(cfg: RunConfig, run_dir: str | pathlib.Path) -> SafetyGate:
    """
    Build the safety gate the graph's safety node would build, from the same spec.

    Same limits file, per-step clamp, fallback, look-ahead and PID settings
    (``unilab_safety.build.build_gate`` is the one construction path of both).
    """
    info, model_limits = task_info(cfg.run.task)
    limits_file = resolve_limits_file(cfg, info, model_limits, pathlib.Path(run_dir))
    sc = cfg.safety
    spec = {**SPEC_DEFAULTS,
            'joint_limits_file': str(limits_file), 'joint_names': list(info.joint_names),
            'allow_unlimited_joints': sc.allow_unlimited_joints,
            'interface': info.command_interface, 'dt': info.control_dt,
            **{k: getattr(sc, k) for k in (
                'max_delta', 'fallback', 'workspace_box', 'workspace_model_file',
                'lookahead_s', 'lookahead_model', 'lookahead_joint_limits',
                'pid_kp', 'pid_ki', 'pid_kd', 'pid_i_max')}}
    return build_gate(spec)


def held_command(task, state, envs):
    """
    Return the command the drives hold at an episode start of ``envs`` (action history fill).

    Position-controlled joint tasks hold (about) the measured joint positions; others
    (torque, gymnasium ids) None, i.e. zeros. The graph's policy node follows the same rule.
    """
    if holds_joint_positions(task):
        return np.asarray(state.joint_position, np.float32)[envs]
    return None


def train_direct(cfg: RunConfig, run_dir: str | pathlib.Path) -> dict:
    """Train with the graph's components in one loop; return the trainer's summary."""
    torch.set_num_threads(cfg.run.torch_threads)
    info, _ = task_info(cfg.run.task)
    n, t_len, k = cfg.rollout.num_envs, cfg.rollout.rollout_length, cfg.rollout.chunk_length
    torch.manual_seed(cfg.run.seed)
    m = cfg.model
    width = policy_input_dim(info.obs_dim, info.action_dim, m.action_history)
    bundle = PolicyBundle(make_actor_critic(width, info.action_dim, m),
                          EmpiricalNormalization(width, clip=cfg.normalization.clip))
    up = cfg.policy_update
    params = PPOParams(
        clip_param=up.clip_param, num_learning_epochs=up.epochs,
        num_mini_batches=num_mini_batches_for(up.batch_size, t_len, n),
        value_loss_coef=up.value_loss_coef, entropy_coef=up.entropy_coef, learning_rate=up.lr,
        max_grad_norm=up.max_grad_norm, use_clipped_value_loss=up.clipped_value_loss,
        schedule=up.schedule, desired_kl=up.desired_kl, gamma=cfg.advantage.gamma,
        lam=cfg.advantage.gae_lambda)
    trainer = Trainer(bundle, params, t_len, n, torch.device('cpu'), run_dir,
                      cfg.run.total_steps, cfg.logging.checkpoint_every,
                      cfg.logging.tensorboard, normalize_obs=cfg.normalization.observations)
    pathlib.Path(run_dir).mkdir(parents=True, exist_ok=True)
    gate = make_gate(cfg, run_dir)
    task = make_task(cfg.run.task, n, seed=cfg.run.seed, disturbances=cfg.disturbances)
    chunk = ChunkBuilder(k, n, width, info.action_dim)
    # The policy's last commands, kept as the policy node keeps them.
    history = ActionHistory(n, info.action_dim, m.action_history, task.action_low,
                            task.action_high)
    state = task.reset(seed=cfg.run.seed)
    everyone = np.arange(n)
    history.reset(everyone, held_command(task, state, everyone))
    obs_t = torch.zeros(n, width)
    seq = 0
    t0 = time.monotonic()
    while not trainer.done:
        reset = np.flatnonzero(state.terminated | state.truncated)
        if reset.size:
            gate.reset(reset)
            history.reset(reset, held_command(task, state, reset))
        obs = history.observe(observation(state, task))
        obs_t.copy_(torch.from_numpy(obs))
        with torch.inference_mode():
            out = bundle.actor_critic.act(bundle.normalize(obs_t))
        action = out.action.numpy()
        history.push(action)
        chunk.open_step(obs, action, out.log_prob.numpy(), out.value.numpy(),
                        out.mean.numpy(), out.std.numpy(), seq)
        # Measured joint positions feed the gate's optional PID, as /joint_states does.
        state = task.step(gate.filter(action, measured=state.joint_position).command)
        seq += 1
        if chunk.close_step(state.reward, state.terminated, state.truncated,
                            state.episode_return, state.episode_length):
            # Bootstrap input of the next step: envs that just reset start their history over.
            done = np.flatnonzero(state.terminated | state.truncated)
            history.reset(done, held_command(task, state, done))
            next_obs = history.observe(observation(state, task))
            trainer.add_chunk(chunk.tensors(next_obs), trainer.version)
            chunk.clear()
    task.close()
    trainer.save_checkpoint()
    summary = trainer.summary()
    summary['loop_wall_s'] = time.monotonic() - t0
    trainer.close()
    return summary
