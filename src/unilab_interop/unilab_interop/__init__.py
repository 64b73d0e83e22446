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
