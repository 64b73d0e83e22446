# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Our tasks step as they did before the batched stepper changed (issue 54).

``data/step_reference.npz`` holds observations, rewards and done flags of four tasks
over 100 steps (fixed seed, fixed actions, short episodes so that resets happen, one
task with enough envs for the stepping threads), recorded from the per-env stepper.
Regenerate it only for an intended change of behaviour, and say so in the commit:
``python src/unilab_bridge/test/test_step_reference.py``.
"""

import pathlib

import numpy as np
import pytest

from unilab_bridge.tasks import make_task, observation

REFERENCE = pathlib.Path(__file__).parent / 'data' / 'step_reference.npz'
STEPS = 100
#: Observations are stored every this many steps (rewards and done flags every step).
OBS_EVERY = 5
# name -> (envs, task options); episodes are short so that auto-resets are pinned too.
CASES = {
    'arm6_reach': (4, {'max_episode_steps': 30}),
    'ur5e_reach': (4, {'max_episode_steps': 30}),
    'quad12_walk': (16, {'max_episode_steps': 40}),
    'go2_walk': (4, {'max_episode_steps': 40}),
}


def rollout(name):
    """Return {field: array} of ``name`` stepped with seeded actions around mid-range."""
    n, options = CASES[name]
    with make_task(name, n, seed=3, **options) as task:
        state = task.reset(seed=3)
        rng = np.random.default_rng(11)
        mid = (task.action_low + task.action_high) / 2
        half = (task.action_high - task.action_low) / 2
        obs, reward, terminated, truncated = [observation(state, task)], [], [], []
        for k in range(1, STEPS + 1):
            action = mid + 0.3 * half * rng.uniform(-1.0, 1.0, (n, task.action_dim))
            state = task.step(action)
            reward.append(state.reward)
            terminated.append(state.terminated)
            truncated.append(state.truncated)
            if k % OBS_EVERY == 0:
                obs.append(observation(state, task))
    return {f'{name}/obs': np.array(obs, np.float32),
            f'{name}/reward': np.array(reward, np.float32),
            f'{name}/terminated': np.array(terminated),
            f'{name}/truncated': np.array(truncated)}


@pytest.mark.parametrize('name', sorted(CASES))
def test_steps_match_the_recorded_reference(name):
    ref = np.load(REFERENCE)
    got = rollout(name)
    assert got[f'{name}/terminated'].any() or got[f'{name}/truncated'].any()  # resets ran
    for key, value in got.items():
        if value.dtype == bool:
            np.testing.assert_array_equal(value, ref[key], err_msg=key)
        else:
            np.testing.assert_allclose(value, ref[key], rtol=1e-5, atol=1e-6, err_msg=key)


if __name__ == '__main__':
    arrays = {}
    for task_name in sorted(CASES):
        arrays.update(rollout(task_name))
    REFERENCE.parent.mkdir(exist_ok=True)
    np.savez_compressed(REFERENCE, **arrays)
    print(f'wrote {REFERENCE} ({REFERENCE.stat().st_size} bytes)')
