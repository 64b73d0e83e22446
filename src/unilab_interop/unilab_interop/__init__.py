# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
UniLab and the rest of the RL ecosystem: rsl_rl and gymnasium.

- ``vecenv``: our tasks as an rsl_rl ``VecEnv`` (same step, action map and gate as
  our training loop);
- ``gym_env``: the same as gymnasium ids (``unilab/Arm6Reach-v0`` ...), registered
  when this package is imported;
- ``convert``: weights between rsl_rl's actor/critic and our policy bundle;
- ``rsl_import`` / ``rsl_export``: ``unilab import-policy rsl_rl`` and
  ``unilab export --format rsl_rl``.
"""

import gymnasium

#: gymnasium id -> UniLab task; the entry point's module loads on ``gymnasium.make``.
GYM_IDS = {'unilab/Arm6Reach-v0': 'arm6_reach', 'unilab/Ur5eReach-v0': 'ur5e_reach',
           'unilab/QuadWalk-v0': 'quad_walk', 'unilab/Quad12Walk-v0': 'quad12_walk'}

for _id, _task in GYM_IDS.items():
    if _id not in gymnasium.registry:
        gymnasium.register(_id, entry_point='unilab_interop.gym_env:UniLabGymEnv',
                           kwargs={'task': _task})
