# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Online adaptation on the robot: recorder window, fine-tuning, simulation test, fuse."""
