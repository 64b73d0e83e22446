# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Offline RL from recorded transitions (pure torch): IQL and behaviour cloning."""
