# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""ROS-free shared code of UniLab."""
