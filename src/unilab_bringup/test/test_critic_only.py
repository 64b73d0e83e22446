# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A task's privileged extras reach the critic only: the graph's network for go2_walk."""

import torch
from unilab_bridge.tasks.go2_walk import EXTRAS_NAMES, PRIVILEGED_NAMES
from unilab_bringup.graphs import policy_params
from unilab_bringup.paths import training_config
from unilab_bringup.prepare import task_info
from unilab_policy.networks import bundle_from_params


def test_the_actor_never_reads_the_task_s_privileged_columns_and_the_critic_does():
    info, _ = task_info('go2_walk')
    assert info.critic_only_extras == len(PRIVILEGED_NAMES)
    p = policy_params(training_config([], {'run.task': 'go2_walk'}), info)
    offset, size = p.model.critic_only
    assert (offset, size) == (2 * 12 + len(EXTRAS_NAMES), len(PRIVILEGED_NAMES))
    ac = bundle_from_params(p, seed=0).actor_critic
    assert ac.actor[0].in_features == ac.obs_dim - size  # a plain MLP on the other columns
    assert ac.critic[0].in_features == ac.obs_dim
    x = torch.randn(8, ac.obs_dim)
    y = x.clone()
    y[:, offset:offset + size] = torch.randn(8, size) * 10
    assert torch.equal(ac.actor(x), ac.actor(y))
    assert not torch.allclose(ac.value(x), ac.value(y))
    # Checkpoints keep a plain MLP's keys (exports and rsl_rl conversion rely on them).
    assert 'actor_critic.actor.0.weight' in bundle_from_params(p).state_dict()


def test_a_task_without_privileged_extras_keeps_one_observation_for_both():
    info, _ = task_info('quad12_walk')
    p = policy_params(training_config([], {'run.task': 'quad12_walk'}), info)
    assert info.critic_only_extras == 0 and p.model.critic_only == []
