# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""UniLab batched MuJoCo bridge."""
